"""The sweeper composes each job once (not twice) and each job still runs the config of its own overrides."""

import sys

import yaml
from hydra._internal.config_loader_impl import ConfigLoaderImpl

from verl_qwen35 import __main__ as entrypoint


def test_each_job_is_composed_once_and_runs_its_own_config(tmp_path, monkeypatch):
    calls = []
    original = ConfigLoaderImpl.load_sweep_config

    def counted(self, master_config, sweep_overrides):
        calls.append(tuple(sweep_overrides))
        return original(self, master_config, sweep_overrides)

    monkeypatch.setattr(ConfigLoaderImpl, "load_sweep_config", counted)
    monkeypatch.chdir(tmp_path)
    sweep = tmp_path / "sweep"
    argv = ["verl-qwen35", "-m", "device=gpu", "model=35b", "parallel.ep=4", "parallel.tp=2,4", "parallel.pp=1,2"]
    monkeypatch.setattr(sys, "argv", [*argv, "dry_run=true", f"hydra.sweep.dir={sweep}"])
    entrypoint.main()  # SweepSummary would exit 2 if a job were refused
    assert len(calls) == 4 == len(set(calls))  # BasicSweeper + basic launcher would compose 8
    for job in range(4):
        overrides = yaml.safe_load((sweep / str(job) / ".hydra" / "overrides.yaml").read_text())
        config = yaml.safe_load((sweep / str(job) / ".hydra" / "config.yaml").read_text())
        wanted = {o.split("=")[0]: int(o.split("=")[1]) for o in overrides if o.startswith("parallel.")}
        assert {f"parallel.{k}": config["parallel"][k] for k in ("ep", "tp", "pp")} == wanted
    assert "ComposeOnceSweeper" in (sweep / "multirun.yaml").read_text()
