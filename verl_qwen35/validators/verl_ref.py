"""The ref config as verl's engine worker builds it, for verl's own dataclass checks (validators/real.py)."""

import copy

from omegaconf import DictConfig, open_dict

# verl's engine worker renames the ref's log-prob keys to the actor's names before
# building the ref's McoreActorConfig; the same renaming is done here on a copy.
REF_RENAMES = {
    "log_prob_micro_batch_size": "ppo_micro_batch_size",
    "log_prob_micro_batch_size_per_gpu": "ppo_micro_batch_size_per_gpu",
    "log_prob_use_dynamic_bsz": "use_dynamic_bsz",
    "log_prob_max_token_len_per_gpu": "ppo_max_token_len_per_gpu",
}


def ref_as_verl_builds_it(cfg: DictConfig) -> DictConfig:
    ref = copy.deepcopy(cfg.actor_rollout_ref.ref)
    with open_dict(ref):
        ref.ppo_mini_batch_size = cfg.actor_rollout_ref.actor.ppo_mini_batch_size
        for old, new in REF_RENAMES.items():
            ref[new] = ref.pop(old, None)
    return ref
