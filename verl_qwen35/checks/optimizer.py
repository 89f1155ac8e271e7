"""megatron-core's OptimizerConfig as verl builds it from `actor.optim`, checked from the shipped field list.

Upstream: `verl/utils/megatron/optimizer.py` `init_megatron_optim_config` (verl 0.8.0 and 0.9.1) passes
optimizer, lr, min_lr, clip_grad, weight_decay, use_distributed_optimizer (the engine's
`megatron.use_distributed_optimizer`), the dtype's flags (fp16 turns on the precision-aware optimizer; verl
0.9.1 also for bf16 with `optim.use_precision_aware_optimizer`), then every `override_optimizer_config`
entry, as keyword arguments of megatron-core's `OptimizerConfig` (`megatron/core/optimizer/optimizer_config.py`),
whose `__post_init__` asserts the precision-aware optimizer runs with adam and the distributed optimizer.
The field list is `optimizer_fields` of `data/upstream/megatron_core_*.json` (scripts/megatron_fields.py).
"""

from omegaconf import DictConfig, OmegaConf

from verl_qwen35.checks.megatron_keys import field_problems, optimizer_field_spec
from verl_qwen35.checks.problem import Problem, error

OPTIM = "actor_rollout_ref.actor.optim"
OVERRIDE = f"{OPTIM}.override_optimizer_config"


def optimizer_arguments(cfg: DictConfig) -> dict:
    """The OptimizerConfig keyword arguments verl's init_megatron_optim_config builds (those the rules read)."""
    optim = cfg.actor_rollout_ref.actor.optim
    megatron = cfg.actor_rollout_ref.actor.megatron
    dtype = megatron.get("dtype") or cfg.megatron.dtype
    args = {
        "optimizer": optim.get("optimizer", "adam"),
        "use_distributed_optimizer": megatron.get("use_distributed_optimizer", True),
    }
    if dtype in ("float16", "fp16") or optim.get("use_precision_aware_optimizer"):
        args["use_precision_aware_optimizer"] = True
    if override := optim.get("override_optimizer_config"):
        args.update(OmegaConf.to_container(override, resolve=True))
    return args


def optimizer_problems(cfg: DictConfig) -> list[Problem]:
    override = OmegaConf.select(cfg, OVERRIDE, default=None)
    fields = optimizer_field_spec()
    values = OmegaConf.to_container(override, resolve=True) if override else {}
    found = field_problems(values, fields, OVERRIDE, "OptimizerConfig")
    if found:
        return found
    args = optimizer_arguments(cfg)
    if args.get("use_precision_aware_optimizer"):
        if args.get("optimizer") != "adam":
            key = f"{OVERRIDE}.optimizer" if "optimizer" in values else f"{OPTIM}.optimizer"
            found.append(error(key, f"={args['optimizer']!r}: the precision-aware optimizer runs with adam only"))
        if not args.get("use_distributed_optimizer"):
            key = (
                f"{OVERRIDE}.use_distributed_optimizer"
                if "use_distributed_optimizer" in values
                else "actor_rollout_ref.actor.megatron.use_distributed_optimizer"
            )
            found.append(error(key, "=false: the precision-aware optimizer needs the distributed optimizer"))
    return found
