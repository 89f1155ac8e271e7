"""`dry_run=full`: verl's own validate_config and its actor/ref/rollout dataclasses (imports verl)."""

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


def verl_validate(cfg: DictConfig) -> None:
    """Raise what verl would raise on this config before any worker starts."""
    from verl.trainer.ppo.utils import need_critic, need_reference_policy
    from verl.utils.config import omega_conf_to_dataclass, validate_config

    validate_config(cfg, use_reference_policy=need_reference_policy(cfg), use_critic=need_critic(cfg))
    omega_conf_to_dataclass(cfg.actor_rollout_ref.actor)
    omega_conf_to_dataclass(ref_as_verl_builds_it(cfg))
    omega_conf_to_dataclass(cfg.actor_rollout_ref.rollout)
    print("verl       validate_config and actor/ref/rollout dataclasses: OK")
