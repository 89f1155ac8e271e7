"""What the configured advantage estimator, policy loss and KL controller need, checked without torch.

The names are checked elsewhere; these rules are about the parameters and inputs a valid name needs.
`validators/rehearsal.py` runs the real functions on a fake batch built from `advantage_inputs`, and
tests/integration/test_rehearsal_agrees.py keeps the two in agreement. Upstream (verl 0.8.0 / 0.9.1):
- `verl/trainer/ppo/ray_trainer.py` `compute_advantage` and the estimators of `verl/trainer/ppo/core_algos.py`
  (GAE reads the critic's `values`; REMAX `reward_baselines`, which only the v0 trainer's `fit` computes;
  the optimal-token-baseline estimators assert `sum_pi_squared`, computed by the actor when
  `actor.calculate_sum_pi_squared`, and the v0 trainer only; GDPO asserts `algorithm.gdpo_reward_keys` and
  reads those keys from the reward's extra info, which verl 0.9's v1 trainer does not fetch
  (`verl/trainer/ppo/v1/trainer_base.py` `_compute_advantage` selects uid, response_mask, rm_scores,
  rollout_log_probs, old_log_probs, ref_log_prob and values only); Pass@k raises with fewer than 2 samples);
- the policy losses of `core_algos.py` (vanilla asserts clip_ratio_c > 1.0 for dual-clip PPO; clip_cov and
  kl_cov assert their ratio > 0; DRO raises without a positive dro_beta; `bypass_mode` raises unless
  `algorithm.rollout_correction.bypass_mode` makes verl's `apply_bypass_mode` hand it the correction config);
- `core_algos.get_kl_controller`: an adaptive controller asserts kl_ctrl.horizon > 0;
- `verl/trainer/ppo/rollout_corr_helper.py` `_parse_rollout_is_threshold` (0.9.1 :93-129), called on the first
  step's rollout correction: a number, or a text "upper" or "lower_upper", both bounds positive, lower <= upper;
  a bool, an empty text or anything else raises.
"""

import math

from omegaconf import DictConfig, OmegaConf

from verl_qwen35.checks.batches import uses_reference
from verl_qwen35.checks.problem import Problem, error
from verl_qwen35.checks.schedule import uses_v1_trainer

ALGO = "algorithm"
ACTOR = "actor_rollout_ref.actor"
OPTIMAL_TOKEN_BASELINES = ("optimal_token_baseline", "tir_optimal_token_baseline")


def needs_critic(cfg: DictConfig) -> bool:
    """verl/trainer/ppo/utils.py need_critic: critic.enable, else GAE."""
    enable = OmegaConf.select(cfg, "critic.enable", default=None)
    return bool(enable) if enable is not None else cfg.algorithm.adv_estimator == "gae"


def gdpo_keys(cfg: DictConfig) -> list[str]:
    keys = OmegaConf.select(cfg, f"{ALGO}.gdpo_reward_keys", default=None)
    return list(keys) if keys else []


def advantage_inputs(cfg: DictConfig) -> frozenset[str]:
    """The batch fields verl's trainer holds when it calls `compute_advantage` (besides uid, response_mask,
    token_level_scores and old_log_probs, always there)."""
    found = set()
    if uses_reference(cfg):
        found.add("ref_log_prob")
    if needs_critic(cfg):
        found.add("values")
    if uses_v1_trainer(cfg):
        return frozenset(found)  # v1 `_compute_advantage` fetches these fields only
    if cfg.algorithm.adv_estimator == "remax":
        found.add("reward_baselines")
    if OmegaConf.select(cfg, f"{ACTOR}.calculate_sum_pi_squared", default=False):
        found.add("sum_pi_squared")
    found.update(gdpo_keys(cfg))  # the reward function's extra info reaches the v0 batch
    return frozenset(found)


V1 = "trainer.use_v1"


def estimator_problems(cfg: DictConfig) -> list[Problem]:
    name, inputs, v1 = cfg.algorithm.adv_estimator, advantage_inputs(cfg), uses_v1_trainer(cfg)
    key = f"{ALGO}.adv_estimator"
    if name == "gae" and "values" not in inputs:
        return [error((key, "critic.enable"), "=gae reads the critic's values, but critic.enable=false")]
    if name == "remax" and v1:
        return [error((key, V1), "=remax needs greedy reward baselines, which only verl's v0 trainer computes")]
    if name in OPTIMAL_TOKEN_BASELINES:
        if v1:
            return [error((key, V1), f"={name} needs sum_pi_squared, which verl's v1 trainer does not fetch")]
        if "sum_pi_squared" not in inputs:
            return [
                error(
                    (key, f"{ACTOR}.calculate_sum_pi_squared"),
                    f"={name} needs sum_pi_squared from the actor: set {ACTOR}.calculate_sum_pi_squared=true",
                )
            ]
    if name == "gdpo":
        if not gdpo_keys(cfg):
            return [error(f"{ALGO}.gdpo_reward_keys", "is not set; gdpo needs the reward components to normalise")]
        if v1:
            return [error((key, V1), "=gdpo reads reward components that verl's v1 trainer does not fetch")]
    n = cfg.actor_rollout_ref.rollout.n
    if name == "grpo_passk" and isinstance(n, int) and n < 2:
        return [error(("actor_rollout_ref.rollout.n", key), f"={n}: Pass@k needs at least 2 samples per group")]
    return []


def _positive(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and value > 0


def policy_loss_problems(cfg: DictConfig) -> list[Problem]:
    actor = cfg.actor_rollout_ref.actor
    mode = OmegaConf.select(actor, "policy_loss.loss_mode", default="vanilla")
    loss = f"{ACTOR}.policy_loss"
    bypass = OmegaConf.select(cfg, f"{ALGO}.rollout_correction.bypass_mode", default=False)
    correction = OmegaConf.select(cfg, f"{ALGO}.rollout_correction.loss_type", default="ppo_clip")
    if (mode == "vanilla" and not bypass) or (bypass and correction == "ppo_clip"):  # bypass ppo_clip calls vanilla
        c = actor.get("clip_ratio_c", 3.0)
        if isinstance(c, int | float) and not c > 1.0:
            return [error(f"{ACTOR}.clip_ratio_c", f"={c}: dual-clip PPO needs clip_ratio_c > 1.0")]
    for name, ratio in (("clip_cov", "clip_cov_ratio"), ("kl_cov", "kl_cov_ratio")):
        value = OmegaConf.select(actor, f"policy_loss.{ratio}", default=None)
        if mode == name and value is not None and not _positive(value):
            return [error(f"{loss}.{ratio}", f"={value}: loss_mode={name} needs {ratio} > 0")]
    if mode == "dro" and not _positive(OmegaConf.select(actor, "policy_loss.dro_beta", default=None)):
        return [error(f"{loss}.dro_beta", "must be a positive number for loss_mode=dro")]
    if mode == "bypass_mode" and not bypass:
        return [
            error(
                (f"{loss}.loss_mode", f"{ALGO}.rollout_correction.bypass_mode"),
                "=bypass_mode is set by verl itself: use algorithm.rollout_correction.bypass_mode=true instead",
            )
        ]
    return []


def kl_controller_problems(cfg: DictConfig) -> list[Problem]:
    ctrl = OmegaConf.select(cfg, f"{ALGO}.kl_ctrl", default=None)
    if not cfg.algorithm.get("use_kl_in_reward") or ctrl is None or ctrl.get("type") != "adaptive":
        return []
    horizon = ctrl.get("horizon")
    if not _positive(horizon):
        return [error(f"{ALGO}.kl_ctrl.horizon", f"={horizon}: the adaptive KL controller needs horizon > 0")]
    return []


# verl/trainer/ppo/core_algos.py:2285-2295 (0.9.1; :2223-2233 in 0.8.0) compute_pf_ppo_reweight_data's
# compute_weights: any other method is a ValueError, raised in compute_advantage on the first step
# (verl/trainer/ppo/ray_trainer.py:229-233) when algorithm.use_pf_ppo is on.
PF_PPO_METHODS = ("pow", "max_min", "max_random")


def pf_ppo_problems(cfg: DictConfig) -> list[Problem]:
    if not cfg.algorithm.get("use_pf_ppo"):
        return []
    method = OmegaConf.select(cfg, f"{ALGO}.pf_ppo.reweight_method", default=None)
    if method in PF_PPO_METHODS:
        return []
    return [
        error(
            f"{ALGO}.pf_ppo.reweight_method",
            f"={method!r} with use_pf_ppo=true: verl's compute_pf_ppo_reweight_data (verl/trainer/ppo/core_algos.py) "
            f"raises ValueError on the first step; use one of {list(PF_PPO_METHODS)}",
        )
    ]


def threshold_bounds(spec: object) -> tuple[float, float | None] | str:
    """(upper, lower) as verl parses `rollout_is_threshold`, or why verl refuses it."""
    if isinstance(spec, bool) or not isinstance(spec, int | float | str):
        return "a number or a text 'upper' / 'lower_upper' is needed"
    if isinstance(spec, str):
        text = spec.strip()
        if not text:
            return "it is an empty text"
        try:  # verl splits at the first "_"
            lower_text, upper_text = text.split("_", 1) if "_" in text else (None, text)
            upper, lower = float(upper_text), None if lower_text is None else float(lower_text)
        except ValueError:
            return "it is not a number, nor 'lower_upper' of two numbers"
    else:
        upper, lower = float(spec), None
    if upper <= 0 or (lower is not None and lower <= 0):
        return "both bounds must be positive"
    if math.isnan(upper) or (lower is not None and math.isnan(lower)):
        return "nan passes verl's parse, and every weight compared with it turns nan, the loss with it"
    if lower is not None and lower > upper:
        return "the lower bound is above the upper one"
    return upper, lower


def correction_threshold_problems(cfg: DictConfig) -> list[Problem]:
    correction = OmegaConf.select(cfg, f"{ALGO}.rollout_correction", default=None)
    if not OmegaConf.is_dict(correction) or correction.get("rollout_is") is None or correction.get("bypass_mode"):
        return []
    spec = correction.get("rollout_is_threshold")
    bounds = threshold_bounds(spec)
    if not isinstance(bounds, str):
        return []
    return [
        error(
            f"{ALGO}.rollout_correction.rollout_is_threshold",
            f"={spec!r}: {bounds}; verl's _parse_rollout_is_threshold (verl/trainer/ppo/rollout_corr_helper.py:93) "
            "raises on the first step's rollout correction. Give e.g. 2.0, or '0.5_2.0' for lower_upper",
        )
    ]


def algorithm_problems(cfg: DictConfig) -> list[Problem]:
    return (
        estimator_problems(cfg)
        + policy_loss_problems(cfg)
        + kl_controller_problems(cfg)
        + pf_ppo_problems(cfg)
        + correction_threshold_problems(cfg)
    )
