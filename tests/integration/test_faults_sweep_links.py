"""A sweep never writes through a link planted in a reused sweep directory, and a sweep and a single run never
share a directory (issue 42, item 1; docs/security.md).

Every case is a real multirun (`python -m verl_qwen35 -m ... dry_run=true`) into a directory prepared the way
an attacker or an earlier run would leave it; each asserts the exit code, the message naming the key and the
directory, no traceback, and that nothing outside the sweep directory was written.
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.commands import REPO

SWEEP = ("device=gpu", "model=35b", "dry_run=true", "parallel.tp=1,2")


def run(cwd: Path, *argv: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("HYDRA_FULL_ERROR", None)
    command = [sys.executable, "-m", "verl_qwen35", *argv]
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def sweep(tmp_path: Path, sweep_dir: Path, *extra: str) -> subprocess.CompletedProcess:
    return run(tmp_path, "-m", *SWEEP, *extra, f"hydra.sweep.dir={sweep_dir}")


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A directory outside the sweep, holding one file: neither may change."""
    place = tmp_path / "outside"
    place.mkdir()
    (place / "victim.txt").write_text("untouched\n")
    return place


def untouched(outside: Path) -> None:
    assert sorted(p.name for p in outside.iterdir()) == ["victim.txt"], "something was written outside the sweep"
    assert (outside / "victim.txt").read_text() == "untouched\n"


def refused(done: subprocess.CompletedProcess, *named: str) -> None:
    said = done.stdout + done.stderr
    assert done.returncode == 2, said
    assert "Traceback" not in said, said
    for text in named:
        assert text in said, said


# (id, what is planted relative to the sweep directory: a link to the victim file, or "DIR" for a link to the
# outside directory, the name that must appear in the refusal)
PLANTED = [
    ("multirun.yaml", "multirun.yaml", "FILE"),
    ("summary.csv", "summary.csv", "FILE"),
    ("summary.json", "summary.json", "FILE"),
    ("job-dir", "1", "DIR"),
    ("job-log", "1/main.log", "FILE"),
    ("job-verdict", "0/verdict.json", "FILE"),
]


@pytest.mark.parametrize(("name", "target"), [p[1:] for p in PLANTED], ids=[p[0] for p in PLANTED])
def test_a_link_planted_where_a_sweep_writes_is_refused_and_nothing_outside_is_written(tmp_path, outside, name, target):
    sweep_dir = tmp_path / "sweep"
    (sweep_dir / name).parent.mkdir(parents=True, exist_ok=True)
    (sweep_dir / name).symlink_to(outside if target == "DIR" else outside / "victim.txt")
    done = sweep(tmp_path, sweep_dir)
    refused(done, f"hydra.sweep.dir={sweep_dir}", name.split("/")[-1], "symbolic link")
    untouched(outside)


def test_links_inside_an_earlier_sweeps_job_records_are_replaced_not_written_through(tmp_path, outside):
    sweep_dir = tmp_path / "sweep"
    assert sweep(tmp_path, sweep_dir).returncode == 0
    for name in ("config.yaml", "hydra.yaml", "overrides.yaml"):
        (sweep_dir / "1" / ".hydra" / name).unlink()
        (sweep_dir / "1" / ".hydra" / name).symlink_to(outside / "victim.txt")
    again = sweep(tmp_path, sweep_dir)
    assert again.returncode == 0, again.stderr
    untouched(outside)
    for name in ("config.yaml", "hydra.yaml", "overrides.yaml"):
        record = sweep_dir / "1" / ".hydra" / name
        assert record.is_file() and not record.is_symlink() and record.stat().st_size > 0


def test_a_link_as_the_job_records_directory_is_refused(tmp_path, outside):
    sweep_dir = tmp_path / "sweep"
    (sweep_dir / "0").mkdir(parents=True)
    (sweep_dir / "0" / ".hydra").symlink_to(outside)
    refused(sweep(tmp_path, sweep_dir), f"hydra.sweep.dir={sweep_dir}", ".hydra", "symbolic link")
    untouched(outside)


def test_hydras_own_basic_sweeper_is_held_to_the_same_links(tmp_path, outside):
    sweep_dir = tmp_path / "sweep"
    sweep_dir.mkdir()
    (sweep_dir / "0").symlink_to(outside)
    refused(sweep(tmp_path, sweep_dir, "hydra/sweeper=basic"), f"hydra.sweep.dir={sweep_dir}", "symbolic link")
    untouched(outside)


def test_a_sweep_in_a_single_runs_directory_is_refused_and_the_run_kept(tmp_path):
    run_dir = tmp_path / "run"
    single = run(tmp_path, "device=gpu", "model=35b", "dry_run=true", f"hydra.run.dir={run_dir}")
    assert single.returncode == 0, single.stderr
    before = {p: p.read_bytes() for p in run_dir.rglob("*") if p.is_file()}
    refused(sweep(tmp_path, run_dir), f"hydra.sweep.dir={run_dir}", "hydra.run.dir", "single run's records")
    assert {p: p.read_bytes() for p in run_dir.rglob("*") if p.is_file()} == before, "the run's records changed"


def test_a_sweep_whose_job_directory_is_a_single_runs_is_refused(tmp_path):
    sweep_dir = tmp_path / "sweep"
    single = run(tmp_path, "device=gpu", "model=35b", "dry_run=true", f"hydra.run.dir={sweep_dir / '1'}")
    assert single.returncode == 0, single.stderr
    config = (sweep_dir / "1" / ".hydra" / "config.yaml").read_bytes()
    refused(sweep(tmp_path, sweep_dir), f"hydra.sweep.dir={sweep_dir}", "hydra.run.dir", "single run's records")
    assert (sweep_dir / "1" / ".hydra" / "config.yaml").read_bytes() == config
    assert not (sweep_dir / "multirun.yaml").exists(), "refused before anything was written"


def test_a_single_run_in_a_sweeps_directory_is_refused(tmp_path):
    sweep_dir = tmp_path / "sweep"
    assert sweep(tmp_path, sweep_dir).returncode == 0
    single = run(tmp_path, "device=gpu", "model=35b", "dry_run=true", f"hydra.run.dir={sweep_dir}")
    refused(single, f"hydra.run.dir={sweep_dir}", "sweep's directory")
    assert not (sweep_dir / ".hydra").exists()


def test_two_jobs_given_one_directory_are_refused_naming_the_subdir(tmp_path):
    sweep_dir = tmp_path / "sweep"
    refused(sweep(tmp_path, sweep_dir, "hydra.sweep.subdir=same"), "hydra.sweep.subdir", str(sweep_dir / "same"))
    assert not (sweep_dir / "same").exists()
