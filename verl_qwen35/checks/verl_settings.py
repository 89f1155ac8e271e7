"""Enumerated verl settings its config dataclasses reject in `__post_init__`, checked without importing verl.

Upstream: `verl/workers/config/actor.py` (`ActorConfig.__post_init__` loss_agg_mode, `RouterReplayConfig`),
`verl/workers/config/engine.py` (`EngineRouterReplayConfig`), `verl/workers/config/rollout.py`
(`RolloutConfig.__post_init__`: mode "sync" removed). verl 0.8.0 accepts no "token-sum".
"""

from importlib.metadata import PackageNotFoundError, version

from omegaconf import DictConfig, OmegaConf

from verl_qwen35.checks.problem import Problem, error

LOSS_AGG_MODES = ("token-mean", "seq-mean-token-sum", "seq-mean-token-mean", "seq-mean-token-sum-norm")
LOSS_AGG_MODES_0_9 = ("token-sum",)
ROUTER_REPLAY_MODES = ("disabled", "R2", "R3")


def _verl_minor() -> tuple[int, int]:
    try:
        major, minor = version("verl").split(".")[:2]
        return int(major), int(minor)
    except (PackageNotFoundError, ValueError):
        return (0, 9)


def verl_setting_problems(cfg: DictConfig) -> list[Problem]:
    found = []
    modes = LOSS_AGG_MODES + (LOSS_AGG_MODES_0_9 if _verl_minor() >= (0, 9) else ())
    key = "actor_rollout_ref.actor.loss_agg_mode"
    mode = OmegaConf.select(cfg, key, default="token-mean")
    if mode not in modes:
        found.append(error(key, f"={mode!r} is not one of {list(modes)}"))
    for side in ("actor", "ref"):
        key = f"actor_rollout_ref.{side}.megatron.router_replay.mode"
        replay = OmegaConf.select(cfg, key, default="disabled")
        if replay not in ROUTER_REPLAY_MODES:
            found.append(error(key, f"={replay!r} is not one of {list(ROUTER_REPLAY_MODES)}"))
    if OmegaConf.select(cfg, "actor_rollout_ref.rollout.mode", default="async") == "sync":
        found.append(error("actor_rollout_ref.rollout.mode", "=sync was removed from verl; use async"))
    return found
