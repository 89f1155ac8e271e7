"""Running the command as a user does: a subprocess in a directory of its own, with a chosen PATH."""

import os
import signal
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
STANDINS = Path(__file__).resolve().parent / "standin_slurm"  # sbatch, srun, scontrol stand-ins


def verl_qwen35(tmp_path: Path, *args: str, path: str = "/usr/bin:/bin", **env: str) -> subprocess.CompletedProcess:
    """`python -m verl_qwen35 ARGS` in tmp_path, with `path` before this interpreter's bin directory."""
    environ = {**os.environ, "PYTHONPATH": str(REPO), "PATH": f"{path}:{Path(sys.executable).parent}", **env}
    return subprocess.run(
        [sys.executable, "-m", "verl_qwen35", *args], cwd=tmp_path, env=environ, capture_output=True, text=True
    )


def default_signals() -> None:
    """`preexec_fn` for a child a test will signal: SIGINT, SIGTERM, SIGHUP and SIGQUIT as in a terminal's
    foreground job.

    A suite started in the background (`nohup pytest &`, a CI runner) hands its children SIGINT ignored, and
    an ignored signal stays ignored across exec: Python then installs no Ctrl-C handler and the child never
    sees the signal the test sends."""
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT):
        signal.signal(signum, signal.SIG_DFL)


def started(command: list[str], cwd: Path, env: dict[str, str]) -> subprocess.Popen:
    """`command` started in the background as a terminal's foreground job would be (default_signals), its output
    piped as text, for a test that signals it while it runs."""
    return subprocess.Popen(
        command,
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=default_signals,
    )
