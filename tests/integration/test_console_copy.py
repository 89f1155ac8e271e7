"""A launch keeps its whole console in its run directory as job.out, the terminal still showing it
(run/console_copy.py; report reads it, review/log_phases.py).

The launch is real up to verl: our `relaunch` command, `launch_now`, `launch.launch` (its stoppable section and
Ray's import) run in a subprocess, with a stand-in of verl's `main_ppo` first on the path (tests/standin.py's
way: nothing installed, nothing patched) that prints as verl, Ray and their children do: from Python, with a
C-level write to descriptors 1 and 2, and from a child process; then stops itself with SIGTERM as `scancel`
or `timeout` would, and prints its last words on the way out. A crash of the driver, the cap and the refusal
of a planted link are checked on the copy itself (console_copy), which is all they depend on.
"""

import os
import signal
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from tests.commands import REPO, default_signals
from tests.tiny_data import write_geo3k_stub
from verl_qwen35.config import compose
from verl_qwen35.errors import UserError
from verl_qwen35.review.log_phases import read_logs
from verl_qwen35.run.console_copy import JOB_OUT, console_copy
from verl_qwen35.run.launch_record import write_launch_file

MAIN_PPO = """
import os, subprocess, sys, time

def main(cfg):
    print("(TaskRunner pid=4242) TaskRunner hostname: node-1, PID: 4242")  # a worker line as Ray forwards it
    print("python stdout line")
    print("python stderr line", file=sys.stderr)
    os.write(1, b"c-level fd 1 line\\n")
    os.write(2, b"c-level fd 2 line\\n")
    child = "import os; print('child stdout line', flush=True); os.write(2, b'child stderr line\\\\n')"
    subprocess.run([sys.executable, "-c", child], check=True)
    try:
        os.kill(os.getpid(), int(os.environ.get("STANDIN_SIGNAL", "0")))
        time.sleep(30)
    finally:
        print("last words on the way out", flush=True)
"""

SAID = {
    "out": ["python stdout line", "c-level fd 1 line", "child stdout line", "last words on the way out"],
    "err": ["python stderr line", "c-level fd 2 line", "child stderr line"],
}


def verl_main_standin(root: Path) -> Path:
    package = root / "verl" / "trainer"
    package.mkdir(parents=True)
    (root / "verl" / "__init__.py").touch()
    (package / "__init__.py").touch()
    (package / "main_ppo.py").write_text(MAIN_PPO)
    return root


def recorded_run(tmp_path: Path) -> Path:
    """A run directory with the launch record of a small config, as a launch leaves it."""
    no_machine_checks = ["launch_checks.stack=false", "launch_checks.devices=false"]
    cfg = compose(["model=35b", "device=gpu", *write_geo3k_stub(tmp_path / "data"), *no_machine_checks])
    OmegaConf.resolve(cfg)
    (tmp_path / "run").mkdir()
    return write_launch_file(cfg, tmp_path / "run").parent


def test_a_stopped_relaunch_keeps_what_the_terminal_showed_in_job_out_to_its_last_words(tmp_path):
    """SIGTERM (scancel, `timeout`) ends the relaunch as before, 128 + the signal; the launch's last lines kept."""
    run_dir = recorded_run(tmp_path)
    standin = verl_main_standin(tmp_path / "standin")
    env = {**os.environ, "PYTHONPATH": f"{standin}{os.pathsep}{REPO}", "STANDIN_SIGNAL": str(int(signal.SIGTERM))}
    env.pop("HYDRA_FULL_ERROR", None)
    run = subprocess.run(
        [sys.executable, "-m", "verl_qwen35", "relaunch", str(run_dir)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=default_signals,
    )
    assert run.returncode == 128 + signal.SIGTERM, run.stdout + run.stderr
    kept = (run_dir / JOB_OUT).read_text()
    for line in SAID["out"]:
        assert line in run.stdout and line in kept, line
    for line in SAID["err"]:
        assert line in run.stderr and line in kept, line
    assert kept.startswith("--- verl-qwen35 launch, ") and "Traceback" not in kept
    assert f"console    {run_dir / JOB_OUT}" in run.stderr
    assert stat.S_IMODE((run_dir / JOB_OUT).stat().st_mode) == 0o600
    assert read_logs(run_dir).phases["Ray up"].where() == "job.out:2"  # what `report` says of the relaunch


CRASH = """
import os, signal, sys
from verl_qwen35.run.console_copy import console_copy
with console_copy(sys.argv[1]):
    os.write(1, b"printed before the crash\\n")
    os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_launch_killed_at_once_still_has_its_output_in_job_out(tmp_path):
    """The driver dies as in a crash (SIGKILL, the OOM killer): the copier, a process of its own, still writes."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    run = subprocess.run([sys.executable, "-c", CRASH, str(tmp_path)], env=env, capture_output=True, timeout=60)
    assert run.returncode == -signal.SIGKILL, run.stderr
    assert b"printed before the crash\n" in run.stdout
    assert (tmp_path / JOB_OUT).read_text().endswith("\nprinted before the crash\n")


def test_each_launch_keeps_its_first_and_last_bytes_with_a_line_saying_what_was_cut(tmp_path, capfd):
    lines = [f"line {i:05d}\n".encode() for i in range(1000)]  # 11 bytes each
    for tail in (550, 555):  # a launch, then a relaunch appending; a tail of 555 bytes begins in a line
        with console_copy(tmp_path, head_bytes=1100, tail_bytes=tail):
            for line in lines:
                os.write(1, line)
    assert capfd.readouterr().out == b"".join(lines).decode() * 2  # the terminal got every byte
    launches = (tmp_path / JOB_OUT).read_text().split("--- verl-qwen35 launch, ")[1:]
    assert len(launches) == 2
    for kept in launches:
        body = kept.split("\n", 1)[1].splitlines()  # after the launch's own first line
        assert body[:100] == [f"line {i:05d}" for i in range(100)]  # 1,100 bytes: the first 100 lines
        assert body[100] == ""  # the cut line begins on a line of its own
        assert body[101] == (
            "[job.out: 9,350 bytes cut here (the terminal showed them): each launch keeps its first 1,100 bytes "
            f"and its last {550 if kept is launches[0] else 555}]"
        )
        assert body[102:] == [f"line {i:05d}" for i in range(950, 1000)]  # the last 50 whole lines


@pytest.mark.parametrize("planted", ["link", "dangling-link", "fifo"])
def test_a_link_or_fifo_planted_as_job_out_is_refused_and_nothing_runs(tmp_path, planted):
    target = tmp_path / "elsewhere"
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    if planted == "fifo":
        os.mkfifo(run_dir / JOB_OUT)
    else:
        if planted == "link":
            target.write_text("someone's file\n")
        (run_dir / JOB_OUT).symlink_to(target)
    ran = []
    with pytest.raises(UserError) as refused, console_copy(run_dir):
        ran.append("the launch")
    assert not ran
    assert str(run_dir / JOB_OUT) in str(refused.value) and "nothing launched" in str(refused.value)
    assert ("symbolic link" if planted != "fifo" else "not a regular file") in str(refused.value)
    if planted == "link":
        assert target.read_text() == "someone's file\n"
    else:
        assert not target.exists()
