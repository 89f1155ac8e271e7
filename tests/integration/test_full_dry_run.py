"""dry_run=full and a launch on the data files: verl's validate_config runs on the preset, and a missing file stops
both before anything starts. (From tests/unit/test_machine_checks.py: a full dry run imports torch, megatron-core
and verl, seconds of the integration tier's cost.)"""

from tests.commands import verl_qwen35
from tests.tiny_data import write_geo3k_stub


def test_missing_data_is_an_error_in_full_dry_run_and_at_launch_before_ray(tmp_path):
    """A subprocess: were the refusal to come late, the launch would start Ray in it, not in the test's process."""
    for mode in ("dry_run=full", "dry_run=false"):
        run = verl_qwen35(tmp_path, "device=gpu", "model=35b", mode, f"data.train_files={tmp_path}/x.parquet")
        assert run.returncode == 2, run.stderr
        assert "ERROR   [data.train_files]" in run.stderr and "REFUSED" in run.stderr
        assert "Started a local Ray" not in run.stdout + run.stderr and "ray init kwargs" not in run.stdout


def test_full_dry_run_runs_verls_validate_config(cli, tmp_path):
    run = cli("device=npu", "model=122b", "dry_run=full", *write_geo3k_stub(tmp_path / "geo3k"))
    assert run.code == 0, run.err
    assert "validate_config and actor/ref/rollout dataclasses: OK" in run.out
