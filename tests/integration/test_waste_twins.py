"""checks/waste.py's rules beside verl's own code on the same inputs, run on CPU: the estimators on groups of one
response (compute_advantage as the trainer calls it), the checkpoint finder `resume_mode=auto` uses, and the KL
controllers at a zero coefficient. Imports torch and verl: seconds, once."""

import warnings

import pytest

from tests.configs import config
from verl_qwen35.checks.waste import (
    BATCH_WHITENED_ALONE,
    RAW_REWARD_ALONE,
    ZERO_ALONE,
    kl_problems,
    resume_ignored_problems,
    single_sample_problems,
)
from verl_qwen35.validators.rehearsal import advantage_problems

A, R = "actor_rollout_ref.actor", "actor_rollout_ref.rollout"
REWARDS = [1.0, 0.0, 1.0, 0.0, 0.0, 1.0, 1.0, 0.0]  # eight prompts, one response each
V0 = {"trainer.use_v1": False}
NEEDS = {
    "gdpo": {**V0, "algorithm.gdpo_reward_keys": ["acc"]},
    "optimal_token_baseline": {**V0, f"{A}.calculate_sum_pi_squared": True},
    "tir_optimal_token_baseline": {**V0, f"{A}.calculate_sum_pi_squared": True},
}


def lone_responses(gdpo: bool):
    """A batch of eight prompts with one response each (n=1), outcome rewards at the last token."""
    import numpy as np
    import torch
    from verl import DataProto

    size, length = len(REWARDS), 4
    mask = torch.ones(size, length, dtype=torch.int64)
    scores = torch.zeros(size, length)
    scores[:, -1] = torch.tensor(REWARDS)
    tensors = {
        "response_mask": mask,
        "token_level_scores": scores,
        "old_log_probs": -torch.rand(size, length),
        "ref_log_prob": -torch.rand(size, length),
        "sum_pi_squared": torch.rand(size, length),
    }
    extra = {"acc": np.array(REWARDS, dtype=np.float32)} if gdpo else {}
    uid = np.array([f"prompt{i}" for i in range(size)], dtype=object)
    data = DataProto.from_dict(tensors=tensors, non_tensors={"uid": uid, **extra})
    if gdpo:
        data.batch["prompts"] = torch.ones(size, 2, dtype=torch.int64)
        data.batch["attention_mask"] = torch.cat([torch.ones(size, 2, dtype=torch.int64), mask], dim=1)
    return data


def verl_kind(advantages) -> str:
    """What verl's advantages are for lone responses: all 0, the raw reward scaled (0 exactly where the reward is
    0: no baseline), or something else (a batch baseline: zero-reward responses pushed down too)."""
    import torch

    per_response = advantages[:, -1]
    if bool((advantages == 0).all()):
        return "zero"
    unrewarded = torch.tensor(REWARDS) == 0
    if bool((per_response[unrewarded] == 0).all()) and bool((per_response[~unrewarded] > 0).all()):
        return "raw"
    return "other"


def test_single_sample_rule_follows_what_verls_estimators_give_lone_responses():
    from verl.trainer.ppo import core_algos

    expected = {**dict.fromkeys(ZERO_ALONE, "zero"), **dict.fromkeys(RAW_REWARD_ALONE, "raw")}
    expected |= dict.fromkeys(BATCH_WHITENED_ALONE, "other")
    disagree, ran = [], 0
    for name, kind in expected.items():
        try:
            core_algos.get_adv_estimator_fn(name)
        except ValueError:
            continue  # not registered in this verl
        cfg = config(**{f"{R}.n": 1, "algorithm.adv_estimator": name, **NEEDS.get(name, {})})
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            refused, advantages = advantage_problems(cfg, lone_responses(name == "gdpo"))
        assert not refused, (name, refused)
        found, ran = verl_kind(advantages), ran + 1
        level = {p.level for p in single_sample_problems(cfg)}
        if found != kind or level != ({"warning"} if kind == "other" else {"error"}):
            disagree.append(f"{name}: verl gives {found}, the rule expects {kind} and says {level}")
    assert ran >= 7 and not disagree, disagree


@pytest.mark.parametrize("same", [True, False])
def test_auto_resume_loads_the_trackers_folder_not_resume_from_path(tmp_path, same):
    from verl.utils.checkpoint.checkpoint_manager import find_latest_ckpt_path

    for step in (3, 7):
        (tmp_path / f"global_step_{step}").mkdir()
    (tmp_path / "latest_checkpointed_iteration.txt").write_text("7")
    asked = tmp_path / f"global_step_{7 if same else 3}"
    cfg = config(**{"trainer.default_local_dir": str(tmp_path), "trainer.resume_from_path": str(asked)})
    verl_loads = find_latest_ckpt_path(str(tmp_path))  # what _load_checkpoint resumes with resume_mode=auto
    assert (verl_loads == str(asked)) == same
    assert bool(resume_ignored_problems(cfg)) == (not same)


@pytest.mark.parametrize("kind", ["fixed", "adaptive"])
def test_a_zero_kl_coefficient_stays_zero_in_verls_controller(kind):
    from omegaconf import OmegaConf
    from verl.trainer.ppo import core_algos

    changes = {"algorithm.use_kl_in_reward": True, f"{A}.use_kl_loss": False}
    changes |= {"algorithm.kl_ctrl.type": kind, "algorithm.kl_ctrl.kl_coef": 0.0, "algorithm.kl_ctrl.horizon": 100}
    cfg = config(**changes)
    controller = core_algos.get_kl_controller(OmegaConf.select(cfg, "algorithm.kl_ctrl"))
    controller.update(current_kl=0.5, n_steps=64)
    assert controller.value == 0
    assert [p.keys[0] for p in kl_problems(cfg)] == ["algorithm.use_kl_in_reward"]
