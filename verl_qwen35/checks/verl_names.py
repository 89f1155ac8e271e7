"""Names verl and megatron-core look up in their own registries: estimators, losses, KL types, loggers, ...

verl reads these only when the step that uses them runs, after Ray, the workers and the rollout engines
have started, and a name it does not know is a ValueError there. The names each release accepts ship as
data generated from the installed verl and megatron-core (`verl_qwen35/data/upstream/verl_<minor>.json`,
`scripts/verl_fields.py`, from validators/verl_names.py, which `dry_run=full` reads live). A name is
judged only where verl uses it (`kl_loss_type` with `use_kl_loss`, ...), as verl itself would.
"""

import difflib
from collections.abc import Callable
from dataclasses import dataclass

from omegaconf import DictConfig, OmegaConf

from verl_qwen35.checks.problem import Problem, error
from verl_qwen35.checks.verl_types import shipped_verl_data

ACTOR = "actor_rollout_ref.actor"
CORRECTION = "algorithm.rollout_correction"
OPTIM = f"{ACTOR}.optim"


def _get(cfg: DictConfig, key: str, default: object = None) -> object:
    return OmegaConf.select(cfg, key, default=default)


@dataclass(frozen=True)
class NameRule:
    key: str
    family: str  # the list of names in the data file
    what: str
    rejected_by: str  # the upstream function that refuses an unknown name
    used: Callable[[DictConfig], bool] = lambda cfg: True
    several: bool = False  # a list (trainer.logger) or a comma-separated text (rollout_rs)


def _legacy_reward_manager(cfg: DictConfig) -> bool:
    return _get(cfg, "reward_model.reward_manager") is not None


RULES = [
    NameRule(
        "algorithm.adv_estimator",
        "adv_estimator",
        "advantage estimator",
        "verl/trainer/ppo/core_algos.py get_adv_estimator_fn (ADV_ESTIMATOR_REGISTRY)",
    ),
    NameRule(
        f"{ACTOR}.policy_loss.loss_mode",
        "policy_loss",
        "policy loss",
        "verl/trainer/ppo/core_algos.py get_policy_loss_fn (POLICY_LOSS_REGISTRY)",
    ),
    NameRule(
        f"{ACTOR}.loss_agg_mode",
        "loss_agg_mode",
        "loss aggregation mode",
        "verl/trainer/ppo/core_algos.py agg_loss; verl/workers/config/actor.py ActorConfig.__post_init__",
    ),
    NameRule(
        "algorithm.kl_penalty",
        "kl_penalty",
        "KL penalty",
        "verl/trainer/ppo/core_algos.py kl_penalty / kl_penalty_forward (NotImplementedError)",
        lambda cfg: bool(_get(cfg, "algorithm.use_kl_in_reward", False)),
    ),
    NameRule(
        f"{ACTOR}.kl_loss_type",
        "kl_penalty",
        "KL loss type",
        "verl/trainer/ppo/core_algos.py kl_penalty / kl_penalty_forward (NotImplementedError)",
        lambda cfg: bool(_get(cfg, f"{ACTOR}.use_kl_loss", False)),
    ),
    NameRule(
        f"{CORRECTION}.rollout_is",
        "rollout_is",
        "rollout importance-sampling level",
        "verl/trainer/ppo/rollout_corr_helper.py compute_rollout_correction_weights",
        lambda cfg: _get(cfg, f"{CORRECTION}.rollout_is") is not None,
    ),
    NameRule(
        f"{CORRECTION}.rollout_rs",
        "rollout_rs",
        "rollout rejection-sampling option",
        "verl/trainer/ppo/rollout_corr_helper.py compute_rollout_rejection_mask (SUPPORTED_ROLLOUT_RS_OPTIONS)",
        lambda cfg: _get(cfg, f"{CORRECTION}.rollout_rs") is not None,
        several=True,
    ),
    NameRule(
        f"{CORRECTION}.loss_type",
        "rollout_correction_loss_type",
        "bypass-mode loss type",
        "verl/trainer/ppo/core_algos.py compute_policy_loss_bypass_mode",
        lambda cfg: bool(_get(cfg, f"{CORRECTION}.bypass_mode", False)),
    ),
    NameRule(
        "reward_model.reward_manager",
        "reward_manager",
        "reward manager",
        "verl/experimental/reward_loop/reward_manager/registry.py get_reward_manager_cls",
        lambda cfg: _get(cfg, "reward.reward_manager.source", "register") == "register" and _legacy_reward_manager(cfg),
    ),
    NameRule(
        "reward.reward_manager.name",
        "reward_manager",
        "reward manager",
        "verl/experimental/reward_loop/reward_manager/registry.py get_reward_manager_cls",
        lambda cfg: (
            _get(cfg, "reward.reward_manager.source", "register") == "register" and not _legacy_reward_manager(cfg)
        ),
    ),
    NameRule(
        "trainer.logger",
        "logger",
        "logger backend",
        "verl/utils/tracking.py Tracking.__init__ (supported_backend)",
        several=True,
    ),
    NameRule(
        "actor_rollout_ref.rollout.name",
        "rollout",
        "rollout engine",
        "verl/workers/rollout/base.py get_rollout_class (async server mode)",
    ),
    NameRule(
        f"{OPTIM}.optimizer",
        "optimizer",
        "optimizer",
        "megatron/core/optimizer/__init__.py get_megatron_optimizer ('... optimizer is not supported')",
    ),
    NameRule(
        f"{OPTIM}.lr_decay_style",
        "lr_decay_style",
        "learning-rate decay style",
        "megatron/core/optimizer_param_scheduler.py OptimizerParamScheduler.get_lr (via verl/utils/megatron/"
        "optimizer.py get_megatron_optimizer_param_scheduler)",
    ),
    NameRule(
        f"{OPTIM}.lr_wsd_decay_style",
        "lr_wsd_decay_style",
        "WSD decay style",
        "megatron/core/optimizer_param_scheduler.py OptimizerParamScheduler.get_lr (WSD branch)",
        lambda cfg: _get(cfg, f"{OPTIM}.lr_decay_style") == "WSD",
    ),
    NameRule(
        f"{OPTIM}.weight_decay_incr_style",
        "weight_decay_incr_style",
        "weight-decay increment style",
        "megatron/core/optimizer_param_scheduler.py OptimizerParamScheduler.get_wd",
    ),
]


def _given(value: object, several: bool) -> list[object]:
    if several and isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    if several and (OmegaConf.is_list(value) or isinstance(value, list | tuple)):
        return list(value)
    return [value]


def closest(name: object, known: list[str]) -> str:
    close = difflib.get_close_matches(str(name), known, n=1, cutoff=0.6)
    if not close:  # "Adam" for "adam", "WSD" for "wsd"
        close = [k for k in known if k.lower() == str(name).lower()]
    return f"did you mean {close[0]!r}? " if close else ""


def name_problems(cfg: DictConfig, names: dict[str, list[str]] | None = None) -> list[Problem]:
    """One error per key whose name (or one of whose names) the installed verl / megatron-core lacks."""
    names = shipped_verl_data()["names"] if names is None else names
    found = []
    for rule in RULES:
        value = _get(cfg, rule.key)
        if value is None or not rule.used(cfg) or rule.family not in names:
            continue
        known = names[rule.family]
        bad = [name for name in _given(value, rule.several) if name not in known]
        if bad:
            shown = OmegaConf.to_container(value) if OmegaConf.is_list(value) else value
            owner = "megatron-core" if rule.rejected_by.startswith("megatron") else "verl"
            found.append(
                error(
                    rule.key,
                    f"={shown!r}: {owner} has no {rule.what} {bad[0]!r} ({rule.rejected_by} refuses it); "
                    f"{closest(bad[0], known)}known: {', '.join(known)}",
                )
            )
    return found
