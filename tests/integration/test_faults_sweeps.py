"""Fault table for sweeps (issue 21, item 4): signals, damaged verdicts left by an earlier sweep, a sweep
directory another sweep holds or held, directories that cannot be written.

Every case asserts the exit code, no traceback, nothing half-written (no temporary file, every verdict of
this sweep whole and none left `running`) and a summary that is present and honest: one row per planned
job, each with the status its verdict says. Signals are real, sent to a real `python -m verl_qwen35`
subprocess; the damaged-verdict cases run the entrypoint in-process (the `cli` fixture) to stay quick.
"""

import csv
import fcntl
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.commands import REPO, started

SWEEP = ("device=gpu", "model=35b", "dry_run=true")
# 16 jobs that all pass: a job takes ~0.1-1 s, so a signal sent once job 1 is done lands mid-sweep.
SIXTEEN = ("parallel.tp=1,2,4,8", "trainer.total_epochs=1,2,3,4")
TWO = ("parallel.tp=1,2",)
STATUSES = {"ok", "little headroom", "refused", "failed", "interrupted", "not run"}


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO), "HYDRA_FULL_ERROR": ""}


def start(tmp_path: Path, sweep_dir: Path, *overrides: str, prefix: tuple[str, ...] = ()) -> subprocess.Popen:
    command = [*prefix, sys.executable, "-m", "verl_qwen35", "-m", *SWEEP, *overrides, f"hydra.sweep.dir={sweep_dir}"]
    env = _env()
    env.pop("HYDRA_FULL_ERROR")
    return started(command, tmp_path, env)


def wait_for(condition, what: str, timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def lock_named(sweep_dir: Path) -> bool:
    """The sweep holds its directory and has named itself: it is past Hydra's start, into the sweep."""
    lock = sweep_dir / ".sweep.lock"
    return lock.is_file() and lock.stat().st_size > 0


def assert_whole_and_honest(sweep_dir: Path, jobs: int) -> list[dict]:
    """No temporary file anywhere; summary.json and .csv agree, one row per planned job, each row's
    status that of its job's verdict (`not run` where the job wrote none, `refused` with no directory where
    Hydra could not compose the job); no job left `running`."""
    partial = [p for p in sweep_dir.rglob(".*") if p.name not in (".sweep.lock", ".hydra")]
    assert partial == [], f"half-written files left: {partial}"
    rows = json.loads((sweep_dir / "summary.json").read_text())
    table = list(csv.DictReader((sweep_dir / "summary.csv").open()))
    assert [r["job"] for r in rows] == list(range(jobs)) and [int(r["job"]) for r in table] == list(range(jobs))
    assert [r["status"] for r in rows] == [r["status"] for r in table]
    for row in rows:
        assert row["status"] in STATUSES
        verdict = sweep_dir / str(row["job"]) / "verdict.json"
        if row["status"] == "not run" or (row["status"] == "refused" and not verdict.parent.exists()):
            continue
        record = json.loads(verdict.read_text())
        assert record["status"] == row["status"] and record["valid"] == (row["status"] in ("ok", "little headroom"))
    return rows


def finish(job: subprocess.Popen) -> tuple[int, str]:
    out, err = job.communicate(timeout=300)
    said = out + err
    assert "Traceback" not in said, said
    return job.returncode, said


# --- signals -------------------------------------------------------------------------------------

STOPS = [
    # (id, signal, exit code, word on stderr, what a stopped job's verdict says)
    ("sigterm", signal.SIGTERM, 143, "terminated", "stopped by SIGTERM"),
    ("sigint", signal.SIGINT, 130, "interrupted", "stopped by Ctrl-C"),
    # A terminal's other signals: its window closed (SIGHUP), Ctrl-\\ (SIGQUIT); their defaults would end the
    # sweep at once (SIGQUIT with a core dump), with no summary and the lock file still naming the sweep.
    ("sighup", signal.SIGHUP, 129, "terminated (SIGHUP)", "stopped by SIGHUP"),
    ("sigquit", signal.SIGQUIT, 131, "terminated (SIGQUIT)", "stopped by SIGQUIT"),
]


@pytest.mark.parametrize(("signum", "code", "word", "reason"), [s[1:] for s in STOPS], ids=[s[0] for s in STOPS])
def test_a_signal_mid_sweep_writes_the_summary_marks_the_rest_and_exits_128_plus_it(
    tmp_path, signum, code, word, reason
):
    sweep_dir = tmp_path / "sweep"
    job = start(tmp_path, sweep_dir, *SIXTEEN)
    wait_for(lambda: (sweep_dir / "2" / "verdict.json").exists(), "job 2")  # jobs 0 and 1 are done
    job.send_signal(signum)
    returncode, said = finish(job)
    assert returncode == code and f"verl-qwen35: {word}" in said
    rows = assert_whole_and_honest(sweep_dir, 16)
    statuses = [r["status"] for r in rows]
    assert statuses[:2] == ["ok", "ok"] and statuses[-1] == "not run"
    stopped = [r for r in rows if r["status"] == "interrupted"]
    assert all(r["reason"] == f"job: {reason}" for r in stopped)
    assert "sweep interrupted:" in said
    assert (sweep_dir / ".sweep.lock").read_text() == "", "the lock is released, naming nobody"


def test_sigterm_as_soon_as_the_sweep_holds_its_directory_lists_every_job_not_run_or_stopped(tmp_path):
    sweep_dir = tmp_path / "sweep"
    job = start(tmp_path, sweep_dir, *SIXTEEN)
    wait_for(lambda: lock_named(sweep_dir), "the sweep's lock")
    job.send_signal(signal.SIGTERM)
    returncode, _ = finish(job)
    assert returncode == 143
    rows = assert_whole_and_honest(sweep_dir, 16)
    assert rows[-1]["status"] == "not run"


def test_two_sigterms_in_a_row_still_end_with_a_whole_summary(tmp_path):
    """scancel, then an impatient second scancel: the second lands while the first writes the summary."""
    sweep_dir = tmp_path / "sweep"
    job = start(tmp_path, sweep_dir, *SIXTEEN)
    wait_for(lambda: (sweep_dir / "1" / "verdict.json").exists(), "job 1")
    job.send_signal(signal.SIGTERM)
    time.sleep(0.05)
    if job.poll() is None:
        job.send_signal(signal.SIGTERM)
    returncode, _ = finish(job)
    # A second SIGTERM after the summary is written ends the process by the signal: a shell (and Slurm)
    # reports that as 143 too.
    assert returncode in (143, -signal.SIGTERM)
    assert_whole_and_honest(sweep_dir, 16)


def test_coreutils_timeout_ends_a_sweep_with_its_summary(tmp_path):
    """`timeout` sends SIGTERM; with --preserve-status it exits with the command's own code."""
    sweep_dir = tmp_path / "sweep"
    # 512 jobs: far more than 8 s even for a fast machine; the timeout ends it, so the cost is 8 s either way.
    many = ("parallel.tp=1,2,4,x", "trainer.total_epochs=range(1,129)")  # x: a value the schema refuses
    job = start(tmp_path, sweep_dir, *many, prefix=("timeout", "--preserve-status", "8"))
    returncode, said = finish(job)
    assert returncode == 143, said
    rows = assert_whole_and_honest(sweep_dir, 512)
    assert rows[-1]["status"] == "not run"


def test_sigterm_after_a_sweep_ended_is_no_longer_ours(tmp_path):
    """The handler is the caller's again once the command returns (run/stops.py stops_deferred)."""
    probe = (
        "import signal, sys; from verl_qwen35.cli.main import main\n"
        "before = signal.getsignal(signal.SIGTERM)\n"
        f"code = 0\ntry:\n    main(['-m', *{SWEEP!r}, *{TWO!r}, 'hydra.sweep.dir={tmp_path}/sweep'])\n"
        "except SystemExit as stop:\n    code = stop.code\n"
        "print(code, signal.getsignal(signal.SIGTERM) is before)\n"
    )
    run = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, env=_env(), capture_output=True, text=True)
    assert run.stdout.split()[-2:] == ["0", "True"], run.stderr
    assert_whole_and_honest(tmp_path / "sweep", 2)


# --- damaged verdicts left in a reused sweep directory ---------------------------------------------


def _huge() -> bytes:
    return b'{"job": 3, "overrides": [], "valid": true, "errors": [], "pad": "' + b"x" * (2 << 20) + b'"}'


DAMAGED = [
    # (id, the bytes an earlier sweep or a damaged disk left in <job>/verdict.json)
    ("torn", b'{"job": 3, "sweep_id": "old", "overrides": ["parallel.tp=8"], "val'),
    ("empty", b""),
    ("binary", b"\x00\xff\xfe\x89PNG\r\n\x1a\n"),
    ("huge", _huge()),
    ("deeply-nested", b"[" * 200_000),
    ("a-json-list", b"[1, 2, 3]"),
    ("wrong-types", b'{"job": 3, "overrides": "parallel.tp=8", "valid": "yes", "errors": [{"keys": 1}]}'),
    ("no-sweep-id", b'{"job": 3, "overrides": ["parallel.tp=8"], "valid": true, "errors": [], "status": "running"}'),
]


@pytest.mark.parametrize("content", [d[1] for d in DAMAGED], ids=[d[0] for d in DAMAGED])
def test_damaged_verdicts_of_an_earlier_sweep_are_skipped_by_the_summary(cli, tmp_path, content):
    sweep_dir = tmp_path / "sweep"
    for job in (0, 3):  # job 0 this sweep runs again (its verdict is replaced), job 3 it does not
        (sweep_dir / str(job)).mkdir(parents=True)
        (sweep_dir / str(job) / "verdict.json").write_bytes(content)
    outcome = cli("-m", *SWEEP, *TWO, f"hydra.sweep.dir={sweep_dir}")
    assert outcome.code == 0 and "Traceback" not in outcome.said, outcome.said
    assert "sweep: 2 job(s), 2 valid, 0 refused" in outcome.out
    assert [r["status"] for r in assert_whole_and_honest(sweep_dir, 2)] == ["ok", "ok"]
    assert (sweep_dir / "3" / "verdict.json").read_bytes() == content, "an earlier sweep's file is not ours to touch"


@pytest.mark.parametrize("kind", ["fifo", "directory"])
def test_a_verdict_that_is_not_a_file_is_skipped_without_blocking(cli, tmp_path, kind):
    """A FIFO named verdict.json would block a plain read forever; a directory would raise."""
    sweep_dir = tmp_path / "sweep"
    (sweep_dir / "3").mkdir(parents=True)
    make = os.mkfifo if kind == "fifo" else os.mkdir
    make(sweep_dir / "3" / "verdict.json")
    outcome = cli("-m", *SWEEP, *TWO, f"hydra.sweep.dir={sweep_dir}")
    assert outcome.code == 0 and "Traceback" not in outcome.said, outcome.said
    assert_whole_and_honest(sweep_dir, 2)


def test_ctrl_c_in_a_reused_directory_with_torn_verdicts_still_writes_the_summary(tmp_path):
    sweep_dir = tmp_path / "sweep"
    for job, content in enumerate(d[1] for d in DAMAGED if d[0] != "huge"):
        (sweep_dir / str(job + 2)).mkdir(parents=True)
        (sweep_dir / str(job + 2) / "verdict.json").write_bytes(content)
    job = start(tmp_path, sweep_dir, *SIXTEEN)
    wait_for(lambda: (sweep_dir / "1" / ".hydra").exists(), "job 1")
    job.send_signal(signal.SIGINT)
    returncode, _ = finish(job)
    assert returncode == 130
    assert_whole_and_honest(sweep_dir, 16)


# --- the sweep directory's lock ---------------------------------------------------------------------

HOLD = """
import fcntl, json, os, socket, sys, time
lock = open(sys.argv[1], "a+")
fcntl.flock(lock, fcntl.LOCK_EX)
lock.truncate(0)
lock.write(sys.argv[2] or json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "started": "then"}))
lock.flush()
print("held", flush=True)
time.sleep(600)
"""


def hold_lock(sweep_dir: Path, content: str = "") -> subprocess.Popen:
    """Another live process holding the sweep directory's lock (as a running sweep does)."""
    sweep_dir.mkdir(parents=True, exist_ok=True)
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(sweep_dir / ".sweep.lock"), content], stdout=subprocess.PIPE, text=True
    )
    assert holder.stdout.readline().strip() == "held"
    return holder


@pytest.mark.parametrize(
    ("content", "named"),
    [("", "pid {pid} on host {host}, started then"), ("\x01 not json", "its lock file does not say which")],
    ids=["holder-named", "holder-unreadable"],
)
def test_a_sweep_dir_held_by_a_live_sweep_is_refused_naming_it_and_nothing_is_written(cli, tmp_path, content, named):
    sweep_dir = tmp_path / "sweep"
    holder = hold_lock(sweep_dir, content)
    try:
        outcome = cli("-m", *SWEEP, *TWO, f"hydra.sweep.dir={sweep_dir}")
    finally:
        holder.kill()
        holder.wait()
    assert outcome.code == 2 and "Traceback" not in outcome.said, outcome.said
    message = named.format(pid=holder.pid, host=socket.gethostname())
    assert f"hydra.sweep.dir={sweep_dir} is in use by another sweep ({message})" in outcome.err
    assert sorted(p.name for p in sweep_dir.iterdir()) == [".sweep.lock"], "the second sweep wrote nothing"


def test_two_sweeps_on_one_directory_the_second_is_turned_away_and_the_first_unharmed(tmp_path):
    sweep_dir = tmp_path / "sweep"
    first = start(tmp_path, sweep_dir, *SIXTEEN)
    wait_for(lambda: lock_named(sweep_dir), "the first sweep's lock")
    second = start(tmp_path, sweep_dir, "parallel.tp=3,5")
    code, said = finish(second)
    assert code == 2 and f"is in use by another sweep (pid {first.pid} on host {socket.gethostname()}" in said
    code, said = finish(first)
    assert code == 0, said
    rows = assert_whole_and_honest(sweep_dir, 16)
    assert {r["parallel.tp"] for r in rows} == {1, 2, 4, 8}, "no job of the second sweep"
    ids = {json.loads((sweep_dir / str(n) / "verdict.json").read_text())["sweep_id"] for n in range(16)}
    assert len(ids) == 1


@pytest.mark.parametrize(
    "leftover",
    ['{"pid": 999999999, "host": "gone", "started": "yesterday"}', "\x00garbage"],
    ids=["dead-pid", "garbage"],
)
def test_a_lock_its_holder_left_behind_is_taken_over_with_a_note(cli, tmp_path, leftover):
    sweep_dir = tmp_path / "sweep"
    sweep_dir.mkdir()
    (sweep_dir / ".sweep.lock").write_text(leftover)  # nobody holds the flock: its holder has ended
    outcome = cli("-m", *SWEEP, *TWO, f"hydra.sweep.dir={sweep_dir}")
    assert outcome.code == 0 and "Traceback" not in outcome.said, outcome.said
    assert "took over the lock of a sweep that ended without releasing it" in outcome.err
    if "999999999" in leftover:
        assert "(pid 999999999 on host gone, started yesterday)" in outcome.err
    assert_whole_and_honest(sweep_dir, 2)


def test_a_sweep_killed_outright_leaves_no_lock_the_next_sweep_must_wait_for(tmp_path):
    """SIGKILL (the OOM killer, scancel's last word) runs no handler: the kernel drops the flock."""
    sweep_dir = tmp_path / "sweep"
    killed = start(tmp_path, sweep_dir, *SIXTEEN)
    wait_for(lambda: (sweep_dir / "0" / "verdict.json").exists(), "job 0")
    killed.kill()
    killed.communicate()
    again = start(tmp_path, sweep_dir, *TWO)
    code, said = finish(again)
    assert code == 0 and f"took over the lock of a sweep that ended without releasing it (pid {killed.pid}" in said
    assert_whole_and_honest(sweep_dir, 2)


def test_the_lock_is_free_after_a_sweep_for_the_next_one(cli, tmp_path):
    sweep_dir = tmp_path / "sweep"
    assert cli("-m", *SWEEP, *TWO, f"hydra.sweep.dir={sweep_dir}").code == 0
    with (sweep_dir / ".sweep.lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)  # raises if the sweep still held it
    again = cli("-m", *SWEEP, "parallel.tp=2,4", f"hydra.sweep.dir={sweep_dir}")
    assert again.code == 0 and "took over" not in again.err


# --- directories that cannot be written -------------------------------------------------------------


def test_a_sweep_dir_that_cannot_be_created_is_one_message_naming_the_key(cli, tmp_path):
    outcome = cli("-m", *SWEEP, *TWO, "hydra.sweep.dir=/proc/verl_qwen35_sweep")
    assert outcome.code == 2 and "Traceback" not in outcome.said, outcome.said
    assert "hydra.sweep.dir=/proc/verl_qwen35_sweep: cannot write there" in outcome.err


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a read-only directory")
def test_a_read_only_sweep_dir_is_one_message_and_left_as_it_was(cli, tmp_path):
    sweep_dir = tmp_path / "sweep"
    sweep_dir.mkdir()
    sweep_dir.chmod(0o555)
    try:
        outcome = cli("-m", *SWEEP, *TWO, f"hydra.sweep.dir={sweep_dir}")
    finally:
        sweep_dir.chmod(0o755)
    assert outcome.code == 2 and "Traceback" not in outcome.said, outcome.said
    assert f"hydra.sweep.dir={sweep_dir}: cannot write there" in outcome.err
    assert list(sweep_dir.iterdir()) == []


def test_a_job_that_raises_is_failed_and_the_rest_run(cli, tmp_path):
    sweep_dir = tmp_path / "sweep"
    outcome = cli("-m", *SWEEP, "parallel.tp=1,${nope},2", f"hydra.sweep.dir={sweep_dir}")
    assert outcome.code == 2 and "Traceback" not in outcome.said, outcome.said
    assert [r["status"] for r in assert_whole_and_honest(sweep_dir, 3)] == ["ok", "failed", "ok"]


def test_a_value_the_schema_refuses_is_its_jobs_refusal_and_the_other_jobs_run_with_their_numbers(cli, tmp_path):
    """Hydra composes every job before any runs; one value of the wrong type (`parallel.vpp` is an int) is
    that job's refusal in the summary, not the end of the sweep."""
    sweep_dir = tmp_path / "sweep"
    outcome = cli("-m", *SWEEP, "parallel.vpp=two,null", f"hydra.sweep.dir={sweep_dir}")
    assert outcome.code == 2 and "Traceback" not in outcome.said, outcome.said
    assert "sweep: 2 job(s), 1 valid, 1 refused" in outcome.out
    rows = assert_whole_and_honest(sweep_dir, 2)
    assert [(r["parallel.vpp"], r["status"]) for r in rows] == [("two", "refused"), (None, "ok")]
    assert "parallel.vpp=two" in rows[0]["reason"] and "converted to Integer" in rows[0]["reason"]
    assert json.loads((sweep_dir / "1" / "verdict.json").read_text())["job"] == 1, "a job keeps its number"
    assert sorted(p.name for p in sweep_dir.iterdir() if p.is_dir()) == ["1"], "a refused job never started"
