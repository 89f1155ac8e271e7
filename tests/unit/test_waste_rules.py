"""Settings verl accepts while the run resumes the wrong step, stops early, trains on cut or unweighted data or
keeps nothing (checks/waste.py), and formats or kernels the planned machine lacks (checks/device_features.py):
what a user sees, through `preflight` on one shared composition (tests/configs.py) or the rule alone where a
finding needs files or step counts; every shipped preset stays free of them."""

from pathlib import Path

import pytest

from tests.configs import config
from tests.conftest import REFERENCE_LAYOUTS
from tests.runs import preflight
from verl_qwen35.checks.device_features import device_feature_problems
from verl_qwen35.checks.schedule import Steps
from verl_qwen35.checks.waste import (
    correction_problems,
    resume_ignored_problems,
    resume_past_end_problems,
    run_length_problems,
    single_sample_problems,
)

A, R = "actor_rollout_ref.actor", "actor_rollout_ref.rollout"
OTC = "megatron.override_transformer_config"
MINE = ("trainer.", "data.", "algorithm.", f"{A}.", f"{R}.", OTC, "logger")
# (preset, changes, "error" / "warning" / None, the key named first)
CASES = [
    ("35b_gpu", {"trainer.resume_from_path": "/x/global_step_5"}, "error", "trainer.resume_from_path"),
    (
        "35b_gpu",
        {"trainer.resume_from_path": "/x/global_step_5", "trainer.resume_mode": "disable"},
        "error",
        "trainer.resume_from_path",
    ),
    ("35b_gpu", {"trainer.save_freq": -1}, "warning", "trainer.save_freq"),
    ("35b_gpu", {"trainer.save_freq": 100000}, None, None),  # the last step is still saved (is_last_step)
    ("35b_gpu", {f"{A}.checkpoint.load_contents": ["optimizer", "extra"]}, "error", f"{A}.checkpoint.load_contents"),
    (
        "35b_gpu",
        {f"{A}.checkpoint.load_contents": ["optimizer", "extra"], "trainer.resume_mode": "disable"},
        None,
        None,
    ),
    ("35b_gpu", {f"{R}.response_length": 1024}, "error", f"{R}.response_length"),
    ("35b_gpu", {f"{R}.prompt_length": 512}, "error", f"{R}.prompt_length"),
    ("35b_gpu", {"data.filter_overlong_prompts": False}, "warning", "data.truncation"),
    ("35b_gpu", {"data.filter_overlong_prompts": False, "data.truncation": "left"}, None, None),
    (
        "35b_gpu",
        {"algorithm.rollout_correction.rollout_is": "token", f"{R}.calculate_log_probs": False},
        "error",
        "algorithm.rollout_correction.rollout_is",
    ),
    ("35b_gpu", {"algorithm.rollout_correction.rollout_is": "token"}, None, None),  # verl's default computes them
    ("35b_gpu", {f"{R}.n": 1, "algorithm.adv_estimator": "rloo_vectorized"}, "error", f"{R}.n"),
    ("35b_gpu", {f"{R}.n": 1, "algorithm.adv_estimator": "rloo"}, "error", f"{R}.n"),
    ("35b_gpu", {f"{R}.n": 1, "algorithm.adv_estimator": "reinforce_plus_plus_baseline"}, "warning", f"{R}.n"),
    ("35b_gpu", {f"{R}.n": 1, "algorithm.adv_estimator": "reinforce_plus_plus"}, None, None),
    ("35b_gpu", {f"{A}.kl_loss_coef": 0.0}, "warning", f"{A}.use_kl_loss"),
    ("35b_gpu", {"algorithm.use_kl_in_reward": True}, "warning", "algorithm.use_kl_in_reward"),  # twice, with kl loss
    (
        "35b_gpu",
        {"algorithm.use_kl_in_reward": True, f"{A}.use_kl_loss": False, "algorithm.kl_ctrl.kl_coef": 0.0},
        "warning",
        "algorithm.use_kl_in_reward",
    ),
    ("35b_gpu", {f"{R}.val_kwargs.n": 4}, "warning", f"{R}.val_kwargs.temperature"),
    (
        "35b_gpu",
        {f"{R}.val_kwargs.n": 4, f"{R}.val_kwargs.temperature": 0.6, f"{R}.val_kwargs.do_sample": True},
        None,
        None,
    ),
    ("35b_gpu", {f"{R}.val_kwargs.temperature": 0.6}, "warning", f"{R}.val_kwargs.do_sample"),
    (
        "35b_gpu",
        {"trainer.log_val_generations": 10, "trainer.logger": ["console"]},
        "warning",
        "trainer.log_val_generations",
    ),
    ("35b_gpu", {"trainer.log_val_generations": 10}, None, None),  # the preset logs to wandb
    ("35b_npu", {f"{OTC}.fp8": "e4m3"}, "error", f"{OTC}.fp8"),
    ("35b_npu", {f"{OTC}.moe_token_dispatcher_type": "flex"}, "error", f"{OTC}.moe_token_dispatcher_type"),
    ("35b_npu", {f"{R}.quantization": "fp8"}, "error", f"{R}.quantization"),
    (
        "35b_npu",
        {f"{R}.engine_kwargs.vllm.kv_cache_dtype": "fp8_e5m2"},
        "error",
        f"{R}.engine_kwargs.vllm.kv_cache_dtype",
    ),
    ("35b_npu", {f"{R}.quantization": "ascend"}, None, None),
    ("35b_gpu", {f"{R}.quantization": "ascend"}, "error", f"{R}.quantization"),
    ("35b_gpu", {f"{R}.quantization": "fp8"}, None, None),
    ("35b_gpu", {f"{OTC}.fp8": "e4m3", f"{OTC}.fp8_recipe": "mxfp8"}, "error", f"{OTC}.fp8_recipe"),
    ("35b_gpu", {f"{OTC}.fp4": "e2m1"}, "error", f"{OTC}.fp4"),
]


def mine(found):
    """Findings of these rules (the data files are absent on this machine; other rules keep their own tests)."""
    return [p for p in found if p.keys[0] not in ("data.train_files", "data.val_files")]


@pytest.mark.parametrize(
    ("preset", "changes", "level", "key"), CASES, ids=[f"{p} {' '.join(c)}" for p, c, _, _ in CASES]
)
def test_wasteful_settings_refused_or_warned(preset, changes, level, key):
    found = mine(preflight(config(preset, **changes), machine_missing="warning"))
    said = [str(p) for p in found]
    if level is None:
        assert not [p for p in found if p.keys[0].startswith(MINE)], said
    else:
        assert any(p.level == level and p.keys[0] == key for p in found), said
        ours = next(p for p in found if p.keys[0] == key)
        assert key.rsplit(".", 1)[-1] in ours.message or key in ours.keys  # the message says what to change


@pytest.mark.parametrize("preset", [f"{m}_{d}" for m, d in REFERENCE_LAYOUTS])
def test_every_shipped_preset_passes_these_rules(preset):
    found = [p for p in mine(preflight(config(preset), machine_missing="warning")) if p.level == "error"]
    assert not found, [str(p) for p in found]


def steps(per_epoch: int | None, total: int | None) -> Steps:
    return Steps(per_epoch, total, total)


def test_a_run_longer_than_its_epochs_is_refused_with_both_ways_out():
    cfg = config(**{"trainer.total_training_steps": 100, "trainer.total_epochs": 15})
    (found,) = run_length_problems(cfg, steps(4, 100))
    assert found.level == "error" and "total_epochs=25" in found.message and "total_training_steps=60" in found.message
    assert not run_length_problems(cfg, steps(10, 100))  # 150 steps of data: the run reaches step 100
    assert not run_length_problems(cfg, steps(None, 100))  # the data is not here: unknown


def test_resuming_at_or_past_the_last_step_is_refused(tmp_path: Path):
    cfg = config(**{"trainer.resume_mode": "resume_path", "trainer.resume_from_path": "/c/global_step_50"})
    assert resume_past_end_problems(cfg, steps(None, 50))[0].keys[0] == "trainer.resume_from_path"
    assert not resume_past_end_problems(cfg, steps(None, 51))
    (tmp_path / "global_step_60").mkdir()
    (tmp_path / "latest_checkpointed_iteration.txt").write_text("60")
    auto = config(**{"trainer.default_local_dir": str(tmp_path)})
    assert resume_past_end_problems(auto, steps(None, 60))[0].keys[0] == "trainer.default_local_dir"


def test_auto_resuming_the_named_folder_is_not_an_ignored_path(tmp_path: Path):
    (tmp_path / "global_step_7").mkdir()
    (tmp_path / "latest_checkpointed_iteration.txt").write_text("7")
    same = {"trainer.default_local_dir": str(tmp_path), "trainer.resume_from_path": str(tmp_path / "global_step_7")}
    assert not resume_ignored_problems(config(**same))
    other = {**same, "trainer.resume_from_path": str(tmp_path / "global_step_3")}
    (found,) = resume_ignored_problems(config(**other))
    assert "step 7" in found.message and "resume_mode=resume_path" in found.message


def test_a_recipe_the_planned_gpu_has_passes():
    mxfp8 = {f"{OTC}.fp8": "e4m3", f"{OTC}.fp8_recipe": "mxfp8"}
    assert device_feature_problems(config(**mxfp8))  # H100: compute capability 9.0
    assert not device_feature_problems(config(**mxfp8, **{"hardware.name": "B200 180GB"}))  # 10.0
    assert not device_feature_problems(config(**{f"{OTC}.fp8": "e4m3", f"{OTC}.fp8_recipe": "blockwise"}))
    assert not device_feature_problems(config(**{"hardware.name": "My own cluster", f"{OTC}.fp4": "e2m1"}))  # unknown


def test_bypass_mode_without_rollout_log_probs_is_refused():
    cfg = config(**{"algorithm.rollout_correction.bypass_mode": True, f"{R}.calculate_log_probs": False})
    (found,) = correction_problems(cfg)
    assert found.keys == ("algorithm.rollout_correction.bypass_mode", f"{R}.calculate_log_probs")


def test_gdpo_alone_is_a_warning_and_grpo_is_left_to_its_own_rule():
    gdpo = config(**{f"{R}.n": 1, "algorithm.adv_estimator": "gdpo"})
    assert [p.level for p in single_sample_problems(gdpo)] == ["warning"]
    assert not single_sample_problems(config(**{f"{R}.n": 1}))  # grpo: checks/rollout.py says it once


@pytest.mark.parametrize(
    ("overrides", "code", "line"),
    [
        (["trainer.resume_from_path=/x/global_step_5"], 2, "ERROR   [trainer.resume_from_path, trainer.resume_mode]"),
        (["device=npu", f"+{OTC}.fp8=e4m3"], 2, f"ERROR   [{OTC}.fp8]"),
        (["trainer.save_freq=-1"], 0, "WARNING [trainer.save_freq]"),
    ],
)
def test_the_command_refuses_or_warns_without_a_traceback(cli, overrides, code, line):
    device = [] if any(o.startswith("device=") for o in overrides) else ["device=gpu"]
    said = cli("model=35b", *device, "dry_run=true", *overrides)
    assert said.code == code and line in said.said and "Traceback" not in said.said, said.said


def test_the_command_counts_the_steps_from_the_data_and_refuses_a_run_longer_than_its_epochs(cli, tmp_path):
    from tests.tiny_data import write_geo3k_stub

    data = write_geo3k_stub(tmp_path / "data")  # 128 rows: 4 batches of 32 an epoch, 15 epochs = 60 steps
    said = cli("model=35b", "device=gpu", "dry_run=true", *data, "trainer.total_training_steps=100")
    line = "ERROR   [trainer.total_training_steps, trainer.total_epochs]"
    assert said.code == 2 and line in said.said and "Traceback" not in said.said, said.said
    assert cli("model=35b", "device=gpu", "dry_run=true", *data, "trainer.total_training_steps=60").code == 0
