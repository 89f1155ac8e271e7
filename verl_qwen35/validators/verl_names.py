"""The names the installed verl and megatron-core accept, read live from their registries and branches.

Registries are read as they are (`ADV_ESTIMATOR_REGISTRY`, `POLICY_LOSS_REGISTRY`, the reward-manager
registry, `Tracking.supported_backend`, `SUPPORTED_ROLLOUT_RS_OPTIONS`). Where a function dispatches on
a name with `if name == "..."` branches (kl_penalty_forward, agg_loss, OptimizerParamScheduler), the
names are the string literals its source compares the argument with, kept only if calling the real
function with them on tiny CPU tensors succeeds: `kl_penalty_forward` has a "full" branch that raises
NotImplementedError, and verl's docstrings name styles (`inverse_square_root`) megatron-core spells
otherwise. `scripts/verl_fields.py` ships the result; `dry_run=full` judges with it live.
"""

import ast
import inspect
import textwrap
from collections.abc import Callable
from typing import Any

from omegaconf import DictConfig

from verl_qwen35.checks.problem import Problem
from verl_qwen35.checks.verl_names import name_problems


def compared_strings(source: Any, subject: str) -> list[str]:
    """The string literals `subject` is compared with (==, !=, in, not in) in the source of `source`."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(source)))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare) and ast.unparse(node.left) == subject:
            for right in node.comparators:
                found |= {c.value for c in ast.walk(right) if isinstance(c, ast.Constant) and isinstance(c.value, str)}
    return sorted(found)


def _works(call: Callable[[], object]) -> bool:
    try:
        call()
    except (NotImplementedError, ValueError):
        return False
    return True


def _rollout_names(module: Any) -> list[str]:
    """Engines of verl's rollout registry in the async (server) mode, the only one verl 0.8/0.9 run: the
    `(name, mode)` keys of the dict literal in verl/workers/rollout/base.py, read from its source."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(inspect.getsource(module))):
        if isinstance(node, ast.Dict):
            for key in node.keys:
                if isinstance(key, ast.Tuple) and len(key.elts) == 2:
                    name, mode = (ast.literal_eval(e) for e in key.elts)
                    if mode == "async":
                        names.add(name)
    return sorted(names)


def live_names() -> dict[str, list[str]]:
    """Family -> the names the installed verl and megatron-core accept (imports both, and torch)."""
    import torch
    from megatron.core import optimizer as mcore_optimizer
    from megatron.core.optimizer_param_scheduler import OptimizerParamScheduler
    from verl.experimental.reward_loop.reward_manager import registry as reward_registry
    from verl.trainer.ppo import core_algos, rollout_corr_helper
    from verl.utils.tracking import Tracking
    from verl.workers.rollout import base as rollout_base

    zeros, ones = torch.zeros(1, 2), torch.ones(1, 2)
    kl = [
        name
        for base in compared_strings(core_algos.kl_penalty_forward, "kl_penalty")
        for name in (base, f"{base}+")
        if _works(lambda n=name: core_algos.kl_penalty(zeros, zeros, n))
    ]
    bypass = core_algos.get_policy_loss_fn("bypass_mode")
    return {
        "adv_estimator": sorted(core_algos.ADV_ESTIMATOR_REGISTRY),
        "policy_loss": sorted(core_algos.POLICY_LOSS_REGISTRY),
        "loss_agg_mode": [
            mode
            for mode in compared_strings(core_algos.agg_loss, "loss_agg_mode")
            if _works(lambda m=mode: core_algos.agg_loss(zeros, ones, m))
        ],
        "kl_penalty": sorted(kl),
        "rollout_is": [
            level
            for level in compared_strings(rollout_corr_helper.compute_rollout_correction_weights, "rollout_is")
            if _works(lambda v=level: rollout_corr_helper.compute_rollout_correction_weights(zeros, ones, v))
        ],
        "rollout_rs": sorted(rollout_corr_helper.SUPPORTED_ROLLOUT_RS_OPTIONS),
        "rollout_correction_loss_type": compared_strings(bypass, "loss_type"),
        "reward_manager": sorted(reward_registry.REWARD_MANAGER),
        "logger": sorted({*Tracking.supported_backend, *compared_strings(Tracking.__init__, "backend")}),
        "rollout": _rollout_names(rollout_base),
        "optimizer": compared_strings(mcore_optimizer, "config.optimizer"),
        "lr_decay_style": compared_strings(OptimizerParamScheduler.get_lr, "self.lr_decay_style"),
        "lr_wsd_decay_style": compared_strings(OptimizerParamScheduler.get_lr, "self.lr_wsd_decay_style"),
        "weight_decay_incr_style": compared_strings(OptimizerParamScheduler.get_wd, "self.wd_incr_style"),
    }


def real_name_problems(cfg: DictConfig) -> list[Problem]:
    """The fast rule, judged with the names read from the verl and megatron-core installed here."""
    return name_problems(cfg, live_names())
