"""The ref config as verl's engine worker builds it, for verl's own dataclass checks (validators/real.py)."""

import copy

from omegaconf import DictConfig, open_dict

# verl's engine worker renames the ref's log-prob keys to the actor's names before building the ref's
# McoreActorConfig (REF_RENAMES, stated once with its source in checks/verl_dataclasses.py); the same
# renaming is done here on a copy.
from verl_qwen35.checks.verl_dataclasses import REF_RENAMES


def ref_as_verl_builds_it(cfg: DictConfig) -> DictConfig:
    ref = copy.deepcopy(cfg.actor_rollout_ref.ref)
    with open_dict(ref):
        ref.ppo_mini_batch_size = cfg.actor_rollout_ref.actor.ppo_mini_batch_size
        for old, new in REF_RENAMES.items():
            ref[new] = ref.pop(old, None)
    return ref
