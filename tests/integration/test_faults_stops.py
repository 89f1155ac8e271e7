"""Stops cover every external side effect and every signal a terminal sends (issue 42, item 3; docs/security.md).

Real signals, real subprocesses: a stop noted while the preflight ran submits nothing (the Slurm stand-in
records every `sbatch`); SIGHUP and SIGQUIT end a wait on a child as SIGTERM does, its whole process group with
it; a stop in the command's first half second (its imports) ends it quietly with 128 + the signal.
"""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.commands import REPO, STANDINS, default_signals, started
from verl_qwen35.config import compose
from verl_qwen35.disk import write_file
from verl_qwen35.run.stops import stops_deferred
from verl_qwen35.run.submit import submit


def test_a_ctrl_c_noted_before_submission_submits_nothing(tmp_path, monkeypatch):
    log = tmp_path / "sbatch.tsv"
    monkeypatch.setenv("PATH", f"{STANDINS}:{os.environ['PATH']}")
    monkeypatch.setenv("STANDIN_LOG", str(log))
    monkeypatch.setenv("STANDIN_QUEUE_ONLY", "1")
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    cfg = compose(["device=gpu", "model=35b", "submit=slurm", f"trainer.default_local_dir={tmp_path}/ckpt"])

    def record() -> Path:
        return write_file(run_dir / "launch.yaml", "config: {}\n")

    before = signal.signal(signal.SIGINT, signal.default_int_handler)  # as in a terminal (CI starts it ignored)
    try:
        with pytest.raises(KeyboardInterrupt), stops_deferred():
            os.kill(os.getpid(), signal.SIGINT)  # noted while the preflight runs, just before the submission
            time.sleep(0.01)
            submit(cfg, run_dir, False, record)
    finally:
        signal.signal(signal.SIGINT, before)
    assert not log.exists(), "sbatch ran after the Ctrl-C"
    # The same call with no stop pending submits: the stand-in records it (the test above can fail).
    assert submit(cfg, run_dir, False, record) == "4201" and log.read_text().startswith("sbatch")


GRANDCHILD = """
import subprocess, sys, time
grandchild = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
open(sys.argv[1], "w").write(str(grandchild.pid))
time.sleep(120)
"""


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"  # a zombie nobody reaped yet (PID 1 in a container may not) has ended


# The waiting command, in a process of its own (a pytest-xdist worker is no terminal's foreground process: its
# signal handling is execnet's): the stop signal arrives while run_attached waits on the child.
WAITER = """
import os, signal, sys
from verl_qwen35.run.child import run_attached
from verl_qwen35.run.stops import Terminated, exit_code, stops_deferred
signum, pid_file, grandchild = int(sys.argv[1]), sys.argv[2], sys.argv[3]
try:
    with stops_deferred():
        signal.signal(signal.SIGALRM, lambda *_: os.kill(os.getpid(), signum))
        signal.setitimer(signal.ITIMER_REAL, 1.0)
        run_attached([sys.executable, "-c", grandchild, pid_file], stop_s=1.0)
except Terminated as stop:
    sys.exit(exit_code(stop))
sys.exit(99)  # the child ended by itself: the signal was not taken
"""


@pytest.mark.parametrize("signum", [signal.SIGHUP, signal.SIGQUIT], ids=["sighup", "sigquit"])
def test_a_terminals_signal_ends_a_childs_whole_process_group(tmp_path, signum):
    pid_file = tmp_path / "grandchild.pid"
    started = time.monotonic()
    waiter = subprocess.run(
        [sys.executable, "-c", WAITER, str(int(signum)), str(pid_file), GRANDCHILD],
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=default_signals,
    )
    assert waiter.returncode == 128 + signum, (waiter.returncode, waiter.stderr)
    assert time.monotonic() - started < 20
    grandchild = int(pid_file.read_text())
    deadline = time.monotonic() + 5
    while _alive(grandchild) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(grandchild), "the child's own child outlived the stop"


@pytest.mark.parametrize(
    "signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT], ids=["int", "term", "hup", "quit"]
)
@pytest.mark.parametrize("after_s", [0.2, 0.35, 0.5])
def test_a_stop_in_the_first_half_second_ends_quietly_with_128_plus_the_signal(tmp_path, signum, after_s):
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("HYDRA_FULL_ERROR", None)
    command = [sys.executable, "-m", "verl_qwen35", "device=gpu", "model=35b", "dry_run=true"]
    child = started(command, tmp_path, env)
    time.sleep(after_s)
    child.send_signal(signum)
    out, err = child.communicate(timeout=120)
    assert "Traceback" not in out + err, err
    # 128 + the signal from our handler; or, on a loaded machine where the signal lands before Python has set up
    # its own handlers, the signal's default action (-signum: ended by it, nothing printed).
    assert child.returncode in (128 + signum, -signum), (child.returncode, err)
