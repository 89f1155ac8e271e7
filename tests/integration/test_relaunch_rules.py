"""Relaunch behaviour one case at a time, in-process up to the launch itself.

The launch through verl and Ray is real in tests/system/test_forwarding.py (relaunch included); here
`launch_now` is replaced by a recorder so each case shows only what relaunch decides before it:
refuse (exit 2, the reason, nothing launched) or launch the recorded config with the recorded
environment, saying what it resumes from and what it will not take from this shell.
"""

import os
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from tests.environ import cleared
from tests.tiny_data import write_geo3k_stub
from verl_qwen35.cli.relaunch import main as relaunch_main
from verl_qwen35.config import compose
from verl_qwen35.records.launch import digest
from verl_qwen35.run import relaunch as relaunch_module
from verl_qwen35.run.launch_record import write_launch_file


@pytest.fixture
def launches(monkeypatch) -> list:
    """What relaunch handed to the launch: (config, use_shell_env) per call."""
    calls = []
    monkeypatch.setattr(relaunch_module, "launch_now", lambda cfg, **kw: calls.append((cfg, kw)))
    return calls


def recorded(tmp_path: Path, monkeypatch, *overrides: str, model: str = "35b") -> Path:
    monkeypatch.chdir(tmp_path)
    # This CPU machine has neither the Ascend stack nor the devices the launch checks look for.
    no_machine_checks = ["launch_checks.stack=false", "launch_checks.devices=false"]
    cfg = compose(
        [f"model={model}", "device=npu", *write_geo3k_stub(tmp_path / "data"), *no_machine_checks, *overrides]
    )
    OmegaConf.resolve(cfg)
    return write_launch_file(cfg, tmp_path).parent


def test_a_recorded_run_is_launched_with_its_recorded_environment(tmp_path, monkeypatch, launches, capsys):
    run_dir = recorded(tmp_path, monkeypatch)
    capsys.readouterr()
    assert relaunch_main([str(run_dir)]) == 0
    ((cfg, kwargs),) = launches
    assert kwargs["use_shell_env"] is False, "a relaunch must use the recorded values, not this shell's"
    assert kwargs["run_dir"] == run_dir, "a relaunch by hand keeps its console in the run directory's job.out"
    assert cfg.actor_rollout_ref.actor.megatron.tensor_model_parallel_size == 2
    err = capsys.readouterr().err
    assert f"relaunch: resuming from {cfg.trainer.default_local_dir}" in err
    assert cfg.trainer.nnodes == 1 and "checkpoints must be on storage" not in err  # one node: nothing to share


def test_a_multi_node_record_warns_that_its_checkpoints_need_shared_storage(tmp_path, monkeypatch, launches, capsys):
    run_dir = recorded(tmp_path, monkeypatch, model="122b")
    capsys.readouterr()
    assert relaunch_main([str(run_dir)]) == 0 and len(launches) == 1
    err = capsys.readouterr().err
    ((cfg, _),) = launches
    assert cfg.trainer.nnodes == 4
    assert (
        f"WARNING [trainer.default_local_dir] {cfg.trainer.default_local_dir}: with 4 nodes, checkpoints must be "
        "on storage every node sees"
    ) in err


def test_the_launch_file_itself_may_be_given(tmp_path, monkeypatch, launches):
    run_dir = recorded(tmp_path, monkeypatch)
    assert relaunch_main([str(run_dir / "launch.yaml")]) == 0 and len(launches) == 1


def test_a_submitted_jobs_relaunch_leaves_its_log_to_the_scheduler(tmp_path, monkeypatch, launches):
    """Slurm's job, the Ray job and the RayJob relaunch with --digest: slurm-<id>.out and `ray job logs` hold the
    console, so no job.out is kept beside them (a relaunch by hand keeps one: the first case above)."""
    run_dir = recorded(tmp_path, monkeypatch)
    assert relaunch_main([str(run_dir), "--digest", digest(run_dir / "launch.yaml")]) == 0
    ((_, kwargs),) = launches
    assert kwargs["run_dir"] is None


def test_a_record_that_fails_preflight_is_refused_with_the_reason_and_not_launched(
    tmp_path, monkeypatch, launches, capsys
):
    run_dir = recorded(tmp_path, monkeypatch)
    path = run_dir / "launch.yaml"
    text = path.read_text()
    assert "tensor_model_parallel_size: 2" in text
    path.write_text(text.replace("tensor_model_parallel_size: 2", "tensor_model_parallel_size: 3", 1))
    capsys.readouterr()
    assert relaunch_main([str(run_dir)]) == 2
    err = capsys.readouterr().err
    assert "ERROR" in err and "tp=3" in err
    assert launches == [], "a refused relaunch launched anyway"


def test_a_missing_launch_file_is_refused_naming_it(tmp_path, launches, capsys):
    with pytest.raises(SystemExit) as stop:
        relaunch_main([str(tmp_path)])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert f"{tmp_path / 'launch.yaml'} does not exist" in err and "Traceback" not in err
    assert launches == []


def test_a_shell_value_that_differs_is_named_and_not_used(tmp_path, monkeypatch, launches, capsys):
    cleared(monkeypatch, ["OMP_NUM_THREADS"])
    run_dir = recorded(tmp_path, monkeypatch)
    monkeypatch.setenv("OMP_NUM_THREADS", "16")
    monkeypatch.setenv("HCCL_BUFFSIZE", "300")  # the same as recorded: not mentioned
    capsys.readouterr()
    assert relaunch_main([str(run_dir)]) == 0
    err = capsys.readouterr().err
    assert "relaunch: OMP_NUM_THREADS: the recorded value is used, not this shell's" in err
    assert "HCCL_BUFFSIZE" not in err
    assert os.environ["OMP_NUM_THREADS"] == "16"


def test_secrets_exported_at_launch_but_not_here_are_named(tmp_path, monkeypatch, launches, capsys):
    monkeypatch.setenv("WANDB_API_KEY", "0123456789abcdef")
    run_dir = recorded(tmp_path, monkeypatch)
    monkeypatch.delenv("WANDB_API_KEY")
    capsys.readouterr()
    assert relaunch_main([str(run_dir)]) == 0
    assert "relaunch: not exported here (they were at launch): WANDB_API_KEY" in capsys.readouterr().err
    monkeypatch.setenv("WANDB_API_KEY", "0123456789abcdef")
    assert relaunch_main([str(run_dir)]) == 0
    assert "not exported here" not in capsys.readouterr().err


def test_a_record_lacking_a_key_preflight_reads_is_refused_naming_it(tmp_path, monkeypatch, launches, capsys):
    run_dir = recorded(tmp_path, monkeypatch)
    path = run_dir / "launch.yaml"
    lines = path.read_text().splitlines()
    start = lines.index("  trainer:")
    nnodes = next(i for i in range(start, len(lines)) if lines[i].startswith("    nnodes: "))
    path.write_text("\n".join(lines[:nnodes] + lines[nnodes + 1 :]) + "\n")
    capsys.readouterr()
    with pytest.raises(SystemExit) as stop:
        relaunch_main([str(run_dir)])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and "Traceback" not in err
    assert f"{path}: the recorded config lacks trainer.nnodes; launch again to write a whole one" in err
    assert err.startswith("verl-qwen35 relaunch: ") or "\nverl_qwen35.relaunch: " in err, err
    assert launches == []


def test_a_record_whose_launch_checks_fail_is_refused_and_not_launched(tmp_path, monkeypatch, launches, capsys):
    run_dir = recorded(tmp_path, monkeypatch)
    path = run_dir / "launch.yaml"
    text = path.read_text()
    assert "  stack: false\n" in text
    path.write_text(text.replace("  stack: false\n", "  stack: maybe\n", 1))
    capsys.readouterr()
    with pytest.raises(SystemExit) as stop:  # the record is typed by the schema, as a composed config is
        relaunch_main([str(run_dir)])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and "Traceback" not in err
    assert f"{path}: launch_checks.stack: Value 'maybe' is not a valid bool" in err
    assert launches == []


def test_a_config_only_install_refuses_the_relaunch_saying_a_launch_runs_verl(tmp_path, monkeypatch, launches, capsys):
    from verl_qwen35.run import machine

    run_dir = recorded(tmp_path, monkeypatch)
    # A config-only (light) install lacks verl's runtime; this host has it, so the probe answers as one would.
    monkeypatch.setattr(machine, "missing_verl_runtime", lambda: ["verl"])
    capsys.readouterr()
    assert relaunch_main([str(run_dir)]) == 2
    assert "a launch runs verl, whose runtime is not installed here" in capsys.readouterr().err
    assert launches == []


def test_a_record_lacking_a_key_read_by_item_is_refused_naming_it(tmp_path, monkeypatch, launches, capsys):
    """A mandatory fact of the model schema cut from the record is named as the record's lack."""
    weights = tmp_path / "weights"
    weights.mkdir()
    (weights / "config.json").write_text('{"hidden_size": 2048}')
    run_dir = recorded(tmp_path, monkeypatch, f"actor_rollout_ref.model.path={weights}")
    path = run_dir / "launch.yaml"
    lines = path.read_text().splitlines()
    start = lines.index("  model:")
    hidden = next(i for i in range(start, len(lines)) if lines[i].startswith("    hidden_size: "))
    path.write_text("\n".join(lines[:hidden] + lines[hidden + 1 :]) + "\n")
    capsys.readouterr()
    with pytest.raises(SystemExit) as stop:
        relaunch_main([str(run_dir)])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and "Traceback" not in err
    assert f"{path}: the recorded config lacks model.hidden_size; launch again to write a whole one" in err
    assert launches == []
