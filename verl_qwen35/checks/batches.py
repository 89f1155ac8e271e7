"""Batch arithmetic verl asserts deep inside its workers, checked up front."""

from omegaconf import DictConfig

from verl_qwen35.checks.layout import Layout
from verl_qwen35.checks.problem import Problem, error

ACTOR = "actor_rollout_ref.actor"


def batch_problems(cfg: DictConfig, lo: Layout, uses_ref: bool) -> list[Problem]:
    actor, rollout = cfg.actor_rollout_ref.actor, cfg.actor_rollout_ref.rollout
    train, mini, n = cfg.data.train_batch_size, actor.ppo_mini_batch_size, rollout.n
    found = []
    if train < mini:
        found.append(
            error(
                ("data.train_batch_size", f"{ACTOR}.ppo_mini_batch_size"),
                f"train_batch_size={train} is smaller than ppo_mini_batch_size={mini}; "
                f"lower the mini batch to at most {train}",
            )
        )
    if not actor.use_dynamic_bsz:
        micro = actor.ppo_micro_batch_size_per_gpu
        minimal = lo.dp * micro if lo.dp and micro else 0
        if minimal and (train * n) % minimal:
            found.append(
                error(
                    (
                        "data.train_batch_size",
                        "actor_rollout_ref.rollout.n",
                        f"{ACTOR}.ppo_micro_batch_size_per_gpu",
                    ),
                    f"train_batch_size*n={train}*{n}={train * n} sequences are not divisible by "
                    f"DP*micro_batch={lo.dp}*{micro}={minimal} (DP = world {lo.world} / tp*pp*cp); "
                    f"make train_batch_size*n a multiple of {minimal}",
                )
            )
        if minimal and (mini * n) % minimal:
            found.append(
                error(
                    (f"{ACTOR}.ppo_mini_batch_size", f"{ACTOR}.ppo_micro_batch_size_per_gpu"),
                    f"ppo_mini_batch_size*n={mini}*{n}={mini * n} is not divisible by DP*micro_batch={minimal}; "
                    f"each DP rank would get a partial micro batch",
                )
            )
        sides = [("actor_rollout_ref.rollout", rollout)] + (
            [("actor_rollout_ref.ref", cfg.actor_rollout_ref.ref)] if uses_ref else []
        )
        for name, side in sides:
            if side.get("log_prob_micro_batch_size_per_gpu") is None and side.get("log_prob_micro_batch_size") is None:
                found.append(
                    error(
                        f"{name}.log_prob_micro_batch_size_per_gpu",
                        "is not set and dynamic batch size is off; set it (1 fits every preset's memory)",
                    )
                )
    return found


def uses_reference(cfg: DictConfig) -> bool:
    """verl builds the ref model for a KL loss or an in-reward KL penalty."""
    return bool(cfg.actor_rollout_ref.actor.use_kl_loss or cfg.algorithm.use_kl_in_reward)
