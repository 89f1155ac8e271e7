"""Dry-run sweeps check every job and end with one table, saved as CSV and JSON."""

import csv
import json
import re
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
    # Memory column: training/rollout GiB per device of its capacity; empty where the layout does not split.
    assert re.fullmatch(r"\d+/\d+ of 64", rows[0]["memory_gib"]) and rows[3]["memory_gib"] == ""
    assert json.loads((tmp_path / "sweep" / "summary.json").read_text())[0]["valid"] is True


def test_all_valid_sweep_exits_0_and_jobs_get_their_own_checkpoint_dirs(tmp_path):
    run = sweep(tmp_path, "device=gpu", "model=35b", "parallel.tp=1,2")
    assert run.returncode == 0, run.stderr
    dirs = [line.split()[1] for line in run.stdout.splitlines() if line.startswith("checkpoint")]
    assert len(dirs) == 2 and len(set(dirs)) == 2
    assert dirs[0] == f"{tmp_path}/sweep/0/checkpoints"
