"""Every file we read is someone else's: planted links, FIFOs, extreme values, presets that switch guards off,
run directories given twice, scripts that flood, linger or are stopped. Each case as a user meets it: exit code,
one message naming the file or key, no traceback, nothing written elsewhere, nothing left behind.

In-process through the `cli` fixture; a subprocess only where a signal is the point.
"""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.commands import REPO

SECRET = "wJalrXUtnFEMI-K7MDENG-bPxRfiCYEXAMPLEKEY"


def run_dir_with_metrics(tmp_path: Path, lines: list[dict]) -> Path:
    run = tmp_path / "run"
    run.mkdir()
    (run / "metrics.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    return run


GOOD_LINES = [{"step": s, "data": {"critic/score/mean": 0.1 * s, "timing_s/step": 10.0}} for s in (1, 2, 3)]


@pytest.mark.parametrize("planted", ["file", "directory"])
def test_report_never_writes_through_a_link_planted_in_the_run_directory(cli, tmp_path, planted):
    """The planted file link's run also holds extreme values (1e308, a 4,000-digit step) and `$` in its name:
    one drawing shows both (the plot is drawn, no traceback)."""
    lines = [
        *GOOD_LINES,
        {"step": 4, "data": {"critic/score/mean": 1e308, "timing_s/step": -1e308}},
        {"step": int("9" * 4000), "data": {"critic/score/mean": 1.0}},
    ]
    run = run_dir_with_metrics(tmp_path, lines).rename(tmp_path / "a $dollar$ $run")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "report.png").write_bytes(b"precious")
    if planted == "file":
        (run / "report").mkdir()
        (run / "report" / "report.png").symlink_to(outside / "report.png")
    else:
        (run / "report").symlink_to(outside)
    done = cli("report", str(run))
    assert (outside / "report.png").read_bytes() == b"precious"
    assert "Traceback" not in done.said, done.said
    if planted == "file":  # the link itself is replaced by the new plot
        assert done.code == 0, done.said
        assert not (run / "report" / "report.png").is_symlink()
        assert (run / "report" / "report.png").stat().st_size > 0
    else:
        assert done.code == 2 and "report is a symbolic link" in done.err, done.said
        assert sorted(p.name for p in outside.iterdir()) == ["report.png"]


@pytest.mark.parametrize("where", ["metrics.jsonl", "tensorboard/events.out.tfevents.1.host"])
def test_report_refuses_a_fifo_named_like_a_log_instead_of_waiting_on_it(cli, tmp_path, where):
    run = tmp_path / "run"
    (run / where).parent.mkdir(parents=True)
    os.mkfifo(run / where)
    done = cli("report", str(run), "--no-plots")
    assert done.code == 2 and "not a regular file" in done.err and "Traceback" not in done.err, done.said


def test_a_preset_may_not_switch_off_the_prewrite_checks_or_name_code(cli, tmp_path, monkeypatch):
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET)
    presets = tmp_path / "presets" / "tuning"
    presets.mkdir(parents=True)
    cases = {
        "off.yaml": "# @package _global_\nhydra:\n  callbacks:\n    prewrite_checks: null\n",
        "code.yaml": "# @package _global_\nhydra:\n  job:\n    x:\n      _target_: os.system\n",
        "elsewhere.yaml": "# @package _global_\nhydra:\n  run:\n    dir: /tmp/elsewhere\n",
    }
    for name, text in cases.items():
        for other in presets.iterdir():
            other.unlink()
        (presets / name).write_text(text)
        done = cli("--config-dir", str(tmp_path / "presets"), "model=35b", "device=gpu", "dry_run=true")
        assert done.code == 2 and name in done.err and "Hydra's own setting" in done.err, done.said
        assert "Traceback" not in done.said and SECRET not in done.said
    assert not (tmp_path / "outputs").exists()


def test_a_run_dir_holding_a_run_is_not_given_to_another(cli, tmp_path):
    """`shared/` holds an earlier run's records (its `.hydra/`, as any run leaves it): a new run given it is
    refused, naming hydra.run.dir, and the records stay as they were."""
    (tmp_path / "shared" / ".hydra").mkdir(parents=True)
    (tmp_path / "shared" / ".hydra" / "overrides.yaml").write_text("- model=35b\n")
    second = cli("model=35b", "device=gpu", "dry_run=true", "parallel.tp=2", "hydra.run.dir=shared")
    assert second.code == 2 and "hydra.run.dir=" in second.err and "Traceback" not in second.said
    assert "relaunch" in second.err  # going on with that run is `relaunch`, which is never refused
    assert [p.name for p in (tmp_path / "shared" / ".hydra").iterdir()] == ["overrides.yaml"]
    assert not (tmp_path / "shared" / "verdict.json").exists()


@pytest.mark.parametrize("planted", ["link", "fifo"])
def test_a_sweep_lock_is_never_taken_through_a_link_or_a_fifo(tmp_path, planted):
    from verl_qwen35.errors import UserError
    from verl_qwen35.run.sweep_lock import LOCK_FILE, lock_sweep_dir

    sweep = tmp_path / "sweep"
    sweep.mkdir()
    (tmp_path / "precious").write_text("keep")
    if planted == "link":
        (sweep / LOCK_FILE).symlink_to(tmp_path / "precious")
    else:
        os.mkfifo(sweep / LOCK_FILE)
    with pytest.raises(UserError, match="hydra.sweep.dir=") as refused:
        lock_sweep_dir(sweep, "s1")
    assert LOCK_FILE in str(refused.value)
    assert (tmp_path / "precious").read_text() == "keep"


def test_import_refuses_a_fifo_the_script_planted_as_its_record(cli, tmp_path):
    script = tmp_path / "fifo.sh"
    script.write_text('/usr/bin/mkfifo "$IMPORT_RECORD/missing"\nexit 1\n')  # the importer's own record, replaced
    start = time.monotonic()
    done = cli("import", str(script), "--out", str(tmp_path / "preset"))
    assert time.monotonic() - start < 25
    assert done.code == 2 and "not a plain file" in done.err and "Traceback" not in done.said, done.said


def test_data_with_a_path_as_repo_is_one_message(cli, tmp_path):
    done = cli("data", "--out", str(tmp_path / "d"), "--repo", "../../etc")
    assert done.code == 2 and "--repo" in done.err and "Traceback" not in done.said
    assert not (tmp_path / "d").exists()


def _lingering(marker: str) -> list[int]:
    """Processes whose command line holds `marker`."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and marker.encode() in (proc / "cmdline").read_bytes():
                found.append(int(proc.name))
        except OSError:
            continue
    return found


def test_import_bounds_a_flood_and_does_not_wait_on_a_daemon(cli, tmp_path):
    marker = f"{os.getpid()}{time.monotonic_ns() % 10**6}"  # digits: `sleep 300.<marker>` is a number
    script = tmp_path / "flood.sh"
    # A daemon keeps the output open; 1 MB of output (64 KiB kept); main_ppo never called.
    script.write_text(f"sleep 300.{marker} &\nhead -c 1000000 /dev/zero | tr '\\0' 'x'\necho; echo the end\n")
    start = time.monotonic()
    done = cli("import", str(script), "--out", str(tmp_path / "preset"))
    assert time.monotonic() - start < 25
    assert done.code == 2 and "output cut" in done.err and "the end" in done.err, done.said[-500:]
    assert len(done.err) < 10_000
    assert not _lingering(f"300.{marker}")


def test_sigterm_stops_the_imported_script_and_removes_its_temp_dir(tmp_path):
    temp = tmp_path / "tmp"
    temp.mkdir()
    marker = f"{os.getpid()}{time.monotonic_ns() % 10**6}"  # digits: `sleep 300.<marker>` is a number
    script = tmp_path / "slow.sh"
    script.write_text(f"sleep 200.{marker}\n")  # confined: it can write nothing outside its temp dir
    env = {**os.environ, "PYTHONPATH": str(REPO), "TMPDIR": str(temp)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "verl_qwen35", "import", str(script), "--out", str(tmp_path / "p")],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGTERM, signal.SIG_DFL),  # whatever our parent set
    )
    deadline = time.monotonic() + 60
    while not _lingering(f"200.{marker}") and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 143 and "Traceback" not in err, err
    assert not _lingering(f"200.{marker}")
    assert list(temp.iterdir()) == []
