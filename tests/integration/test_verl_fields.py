"""The shipped verl field list and names equal the installed verl and megatron-core, and each name rule
agrees with the upstream function that really refuses a name (called on CPU)."""

import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

from verl_qwen35.checks.verl_types import shipped_verl_data
from verl_qwen35.config import compose
from verl_qwen35.validators.verl_fields import live_fields
from verl_qwen35.validators.verl_names import live_names

# On every verl CI tests (-m each_verl): the shipped field list and names against the installed verl.
pytestmark = pytest.mark.each_verl

ROOT = Path(__file__).resolve().parents[2]


def test_the_generator_reproduces_the_shipped_file():
    run = subprocess.run([sys.executable, str(ROOT / "scripts" / "verl_fields.py"), "--check"], capture_output=True)
    assert run.returncode == 0, run.stdout.decode() + run.stderr.decode()


def test_shipped_fields_and_names_equal_the_installed_verl():
    shipped = shipped_verl_data()
    assert shipped["fields"] == live_fields()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert shipped["names"] == live_names()


def test_optional_int_fields_that_default_to_null_are_integers():
    """The YAML says null; verl's dataclass (McoreActorConfig) says Optional[int]."""
    fields = shipped_verl_data()["fields"]
    assert fields["actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu"]["kinds"] == ["int", "null"]
    assert fields["actor_rollout_ref.actor.optim.lr"]["kinds"] == ["float"]


def _names(family: str) -> list[str]:
    return shipped_verl_data()["names"][family]


def test_every_kl_name_runs_in_kl_penalty_and_the_rest_do_not():
    """verl's docs list "full"; kl_penalty_forward raises NotImplementedError for it."""
    from verl.trainer.ppo.core_algos import kl_penalty

    lp = torch.zeros(1, 3)
    for name in _names("kl_penalty"):
        kl_penalty(lp, lp, name)
    for name in ("full", "k4", "kl_div", "low-var-kl"):
        assert name not in _names("kl_penalty")
        with pytest.raises(NotImplementedError):
            kl_penalty(lp, lp, name)


def test_every_agg_mode_runs_in_agg_loss_and_actor_config():
    from verl.trainer.ppo.core_algos import agg_loss
    from verl.workers.config.actor import ActorConfig

    for mode in _names("loss_agg_mode"):
        agg_loss(torch.zeros(1, 2), torch.ones(1, 2), mode)
        ActorConfig(strategy="megatron", rollout_n=2, loss_agg_mode=mode, ppo_micro_batch_size_per_gpu=1)
    with pytest.raises(ValueError):
        agg_loss(torch.zeros(1, 2), torch.ones(1, 2), "seq-mean")


def test_estimators_and_losses_are_what_verls_registries_return():
    from verl.trainer.ppo.core_algos import get_adv_estimator_fn, get_policy_loss_fn

    for name in _names("adv_estimator"):
        get_adv_estimator_fn(name)
    for name in _names("policy_loss"):
        get_policy_loss_fn(name)
    with pytest.raises(ValueError):
        get_adv_estimator_fn("grpoo")
    with pytest.raises(ValueError):
        get_policy_loss_fn("ppo")


def test_lr_and_wd_styles_are_what_megatron_cores_scheduler_runs():
    """verl's McoreOptimizerConfig docstring says "inverse_square_root" and a WSD "constant" style;
    megatron-core's OptimizerParamScheduler (called by verl's get_megatron_optimizer_param_scheduler)
    spells the first "inverse-square-root" and has no second."""
    from megatron.core.optimizer_param_scheduler import OptimizerParamScheduler

    def step(lr_style: str, wd_style: str = "constant", wsd_style: str = "linear") -> None:
        optimizer = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=1.0)
        wd = (0.0, 0.1) if wd_style != "constant" else (0.1, 0.1)
        scheduler = OptimizerParamScheduler(
            optimizer, 0.0, 1.0, 0.0, 0, 10, lr_style, wd[0], wd[1], 10, wd_style,
            wsd_decay_steps=5, lr_wsd_decay_style=wsd_style,
        )  # fmt: skip
        scheduler.step(8)

    for style in _names("lr_decay_style"):
        step(style)
    for style in _names("weight_decay_incr_style"):
        step("constant", wd_style=style)
    for style in _names("lr_wsd_decay_style"):
        step("WSD", wsd_style=style)
    for bad in ("inverse_square_root", "wsd", "exponential"):
        with pytest.raises(Exception, match="not supported"):
            step(bad)
    with pytest.raises(AssertionError):  # `assert coeff is not None` once the WSD anneal starts
        step("WSD", wsd_style="constant")


def test_grpo_with_one_sample_gives_the_raw_reward_as_advantage():
    """The reason checks/rollout.py gives for refusing rollout.n=1 with GRPO, against verl's own function."""
    from verl.trainer.ppo.core_algos import compute_grpo_outcome_advantage

    from verl_qwen35.checks.rollout import rollout_setting_problems

    rewards = torch.zeros(3, 4)
    rewards[:, -1] = torch.tensor([0.0, 0.7, 1.0])
    one_each = np.array(["a", "b", "c"], dtype=object)
    advantages, _ = compute_grpo_outcome_advantage(rewards, torch.ones(3, 4), one_each)
    assert advantages[:, 0].tolist() == pytest.approx([0.0, 0.7, 1.0], abs=1e-5)  # not zero: the raw reward
    grouped, _ = compute_grpo_outcome_advantage(rewards[1:], torch.ones(2, 4), np.array(["a", "a"], dtype=object))
    assert grouped[:, 0].sum().item() == pytest.approx(0.0, abs=1e-5)  # with a group: relative to its mean
    cfg = compose(["model=35b", "device=gpu", "actor_rollout_ref.rollout.n=1"])
    (problem,) = rollout_setting_problems(cfg)
    assert problem.keys == ("actor_rollout_ref.rollout.n",)
    assert "raw reward" in problem.message and "zero advantage" not in problem.message
