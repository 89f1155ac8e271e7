"""Dry-run sweeps check every job and end with one table, saved as CSV and JSON."""

import csv
import json
import subprocess
import sys


def sweep(tmp_path, *overrides):
    return subprocess.run(
        [sys.executable, "-m", "verl_qwen35", "-m", *overrides, "dry_run=true", f"hydra.sweep.dir={tmp_path}/sweep"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )


def test_sweep_checks_every_job_and_tabulates_them(tmp_path):
    run = sweep(tmp_path, "device=npu", "model=122b", "parallel.tp=2,3", "parallel.ep=16,12")
    assert run.returncode == 2, run.stderr
    assert "sweep: 4 job(s), 1 valid, 3 refused" in run.stdout
    rows = list(csv.DictReader((tmp_path / "sweep" / "summary.csv").open()))
    assert [(r["parallel.tp"], r["parallel.ep"], r["valid"]) for r in rows] == [
        ("2", "16", "True"),
        ("2", "12", "False"),
        ("3", "16", "False"),
        ("3", "12", "False"),
    ]
    assert rows[1]["reason"].startswith("parallel.ep: ") and "num_experts" not in rows[1]["reason"][:12]
    assert rows[2]["reason"].startswith("parallel.tp: ")
    # Memory columns: training/rollout GiB per device and the capacity, numbers in the JSON; empty (null) where the
    # layout does not split.
    assert float(rows[0]["device_gib"]) == 61.27 and rows[3]["train_gib"] == ""
    typed = json.loads((tmp_path / "sweep" / "summary.json").read_text())
    assert typed[0]["valid"] is True and typed[0]["parallel.tp"] == 2 and typed[3]["train_gib"] is None
    assert 0 < typed[0]["train_gib"] < 61.27


def test_all_valid_sweep_exits_0_and_jobs_get_their_own_checkpoint_dirs(tmp_path):
    run = sweep(tmp_path, "device=gpu", "model=35b", "parallel.tp=1,2")
    assert run.returncode == 0, run.stderr
    dirs = [line.split()[1] for line in run.stdout.splitlines() if line.startswith("checkpoint")]
    assert len(dirs) == 2 and len(set(dirs)) == 2
    assert dirs[0] == f"{tmp_path}/sweep/0/checkpoints"


def test_a_job_that_raises_is_recorded_failed_and_the_summary_still_written(tmp_path):
    run = sweep(tmp_path, "device=gpu", "model=35b", "parallel.tp=1,${nope},2")
    assert run.returncode == 2, run.stderr
    assert "Traceback" not in run.stdout + run.stderr
    rows = list(csv.DictReader((tmp_path / "sweep" / "summary.csv").open()))
    assert [(r["status"], r["valid"]) for r in rows] == [("ok", "True"), ("failed", "False"), ("ok", "True")]
    assert "parallel.tp" in rows[1]["reason"] and "nope" in rows[1]["reason"]
    assert "sweep: 3 job(s), 2 valid, 0 refused, 1 failed" in run.stdout


def test_a_reused_sweep_dir_reports_only_this_sweeps_jobs(tmp_path):
    assert sweep(tmp_path, "device=gpu", "model=35b", "parallel.tp=1,2,4").returncode == 0
    again = sweep(tmp_path, "device=gpu", "model=35b", "parallel.tp=3,8")
    assert "sweep: 2 job(s), 1 valid, 1 refused" in again.stdout, again.stdout
    rows = list(csv.DictReader((tmp_path / "sweep" / "summary.csv").open()))
    assert [r["parallel.tp"] for r in rows] == ["3", "8"]


def test_two_sweeps_started_together_share_no_directory_checkpoint_or_run_name(tmp_path):
    command = [sys.executable, "-m", "verl_qwen35", "-m", "device=gpu", "model=35b", "dry_run=true", "parallel.tp=1,2"]
    jobs = [subprocess.Popen(command, cwd=tmp_path, stdout=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [job.communicate(timeout=300)[0] for job in jobs]
    assert [job.returncode for job in jobs] == [0, 0]
    sweeps = sorted((tmp_path / "multirun").glob("*/*"))
    assert len(sweeps) == 2
    checkpoints = [line.split()[1] for out in outs for line in out.splitlines() if line.startswith("checkpoint")]
    assert len(checkpoints) == 4 and len(set(checkpoints)) == 4
    names = [json.loads((d / str(n) / "verdict.json").read_text())["sweep_id"] for d in sweeps for n in (0, 1)]
    assert len(set(names)) == 2
