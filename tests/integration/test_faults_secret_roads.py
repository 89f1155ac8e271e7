"""Secrets by roads that are not the config's values (issue 42; docs/security.md): the overrides themselves, which
Hydra writes to `.hydra/overrides.yaml` and `hydra.yaml` and prints under `--cfg hydra|all` and `--info`, and the
shell's environment read by an override. Real commands; the secret must appear in no output and no file."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.commands import REPO

SHELL_SECRET = "zz-shell-secret-0123456789"
TYPED = "typed-secret-0123456789"


def run(cwd: Path, *argv: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO), "HF_TOKEN": SHELL_SECRET}
    env.pop("HYDRA_FULL_ERROR", None)
    return subprocess.run(
        [sys.executable, "-m", "verl_qwen35", *argv], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )


def nowhere(done: subprocess.CompletedProcess, cwd: Path, *secrets: str) -> None:
    said = done.stdout + done.stderr
    for secret in secrets:
        assert secret not in said, said[max(0, said.find(secret) - 300) :][:600]
        for path in cwd.rglob("*"):
            if path.is_file():
                assert secret.encode() not in path.read_bytes(), path


@pytest.mark.parametrize("printing", [["--cfg", "hydra"], ["--cfg=all"], ["--info", "config"]])
@pytest.mark.parametrize(
    "override",
    [f"+env.set.MY_TOKEN={TYPED}", f"+trainer.wandb_api_key={TYPED}", f"trainer.experiment_name={SHELL_SECRET}"],
    ids=["env-token", "api-key", "shell-value"],
)
def test_hydras_printing_of_the_overrides_masks_a_secret_one(tmp_path, printing, override):
    done = run(tmp_path, *printing, override)
    assert done.returncode == 0, done.stderr[-2000:]
    nowhere(done, tmp_path, TYPED, SHELL_SECRET)
    if printing[0] != "--info":
        assert "redacted>" in done.stdout


@pytest.mark.parametrize(
    "argv",
    [
        ["dry_run=true", f"+env.TOKEN={TYPED}"],
        ["dry_run=true", f"env.set={{HF_TOKEN:{TYPED}}}"],
        ["dry_run=true", f"hydra.job.env_set={{HF_TOKEN:{TYPED}}}"],
        ["dry_run=true", "+trainer.note=${oc.env:HF_TOKEN}"],
        ["-m", "dry_run=true", f"trainer.experiment_name=a,{SHELL_SECRET}"],
        ["-m", "dry_run=true", f"hydra.sweeper.params={{+env.set.HF_TOKEN:'{TYPED},b'}}"],
    ],
    ids=["env-node", "env-set-dict", "hydra-env-set", "env-read", "sweep-choice", "sweeper-params"],
)
def test_an_override_carrying_a_secret_is_refused_before_hydra_writes_it(tmp_path, argv):
    done = run(tmp_path, *argv)
    assert done.returncode == 2 and "refused before anything was written" in done.stderr, done.stderr[-2000:]
    assert not (tmp_path / "outputs").exists() and not (tmp_path / "multirun").exists()
    nowhere(done, tmp_path, TYPED, SHELL_SECRET)
