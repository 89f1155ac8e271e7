"""submit.chain: refused values exit 2 naming the key, before anything is written; a dry run shows the chain."""

import pytest

CHAIN_FAULTS = [
    (["submit.chain=0"], "submit.chain"),
    (["submit.chain=101"], "submit.chain"),
    (["submit.chain='$(touch MARK)'"], "submit.chain"),
    (["submit.chain=2", "trainer.resume_mode=disable"], "trainer.resume_mode"),
]


@pytest.mark.parametrize(("overrides", "named"), CHAIN_FAULTS, ids=[" ".join(o) for o, _ in CHAIN_FAULTS])
def test_a_bad_chain_exits_2_naming_the_key_and_writes_nothing(cli, tmp_path, overrides, named):
    run = cli(
        "submit=slurm", "model=35b", "device=gpu", "dry_run=true", f"hydra.run.dir={tmp_path / 'run'}", *overrides
    )
    assert run.code == 2, run.said
    assert named in run.err and "Traceback" not in run.said
    assert not list(tmp_path.rglob("job.sbatch")) and not list(tmp_path.rglob("launch.yaml"))
    assert not list(tmp_path.rglob("MARK"))


def test_a_chained_script_requeues_and_knows_the_runs_steps(cli, tmp_path):
    run = cli(
        "submit=slurm",
        "model=35b",
        "device=gpu",
        "dry_run=true",
        "submit.chain=3",
        "trainer.total_training_steps=7",
        f"hydra.run.dir={tmp_path / 'run'}",
    )
    assert run.code == 0, run.said
    script = (tmp_path / "run" / "job.sbatch").read_text()
    assert "#SBATCH --requeue" in script and "CHAIN=3" in script and "TOTAL_STEPS=7" in script
