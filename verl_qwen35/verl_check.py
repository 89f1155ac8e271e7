"""`dry_run=full`: verl's own validate_config and its actor/ref/rollout dataclasses (imports verl)."""

from omegaconf import DictConfig


def verl_validate(cfg: DictConfig) -> None:
    from verl.trainer.ppo.utils import need_critic, need_reference_policy
    from verl.utils.config import omega_conf_to_dataclass, validate_config

    validate_config(cfg, use_reference_policy=need_reference_policy(cfg), use_critic=need_critic(cfg))
    for key in ("actor", "ref", "rollout"):
        omega_conf_to_dataclass(cfg.actor_rollout_ref[key])
    print("verl       validate_config and actor/ref/rollout dataclasses: OK")
