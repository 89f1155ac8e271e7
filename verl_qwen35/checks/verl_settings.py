"""Enumerated verl settings its config dataclasses reject in `__post_init__`, checked without importing verl.

Upstream: `verl/workers/config/actor.py` (`RouterReplayConfig`),
`verl/workers/config/engine.py` (`EngineRouterReplayConfig`), `verl/workers/config/rollout.py`
(`RolloutConfig.__post_init__`: mode "sync" removed). Names verl looks up in its registries (loss_agg_mode
among them) are checks/verl_names.py's.
"""

from omegaconf import DictConfig, OmegaConf
from packaging.version import Version

from verl_qwen35.checks.problem import Problem, error
from verl_qwen35.checks.verl_target import verl_in_use

ROUTER_REPLAY_MODES = ("disabled", "R2", "R3")
# verl/workers/config/engine.py McoreEngineConfig.__post_init__ warns (FutureWarning) "The legacy mbridge
# backend selected by `vanilla_mbridge=True` is deprecated and will be removed in a future release. Use
# Megatron-Bridge by setting `vanilla_mbridge=False` or removing the option." since verl PR #6951 (in 0.9.0).
VANILLA_MBRIDGE_DEPRECATED = Version("0.9.0")
# verl/workers/rollout/vllm_rollout/utils.py:88-98 get_vllm_max_lora_rank (0.9.1; :68 in 0.8.0), called by
# validate_config (verl/utils/config.py:205-215) for a vLLM rollout: the largest of vLLM's MaxLoRARanks, else of
# verl's own fallback list (1 .. 512). tests/unit/test_verl_lora_rank_agrees.py runs verl's function.
MAX_VLLM_LORA_RANK = 512
LORA = "actor_rollout_ref.model.lora"


def deprecation_notes(cfg: DictConfig) -> list[str]:
    """Settings the installed verl warns are deprecated, each naming its replacement: notes beside the verdict,
    not problems (the run works today; the GPU presets keep what verl's own GPU scripts set)."""
    verl = verl_in_use(cfg)
    if verl.release < VANILLA_MBRIDGE_DEPRECATED.release:
        return []
    if not OmegaConf.select(cfg, "actor_rollout_ref.actor.megatron.vanilla_mbridge", default=False):
        return []
    key = "megatron.vanilla_mbridge" if "megatron" in cfg else "actor_rollout_ref.actor.megatron.vanilla_mbridge"
    return [
        f"{key}=true: verl {verl.version} warns the legacy mbridge loader is deprecated and will be "
        "removed (verl/workers/config/engine.py, PR #6951); its replacement is Megatron-Bridge: "
        f"{key}=false (needs megatron-bridge installed). The GPU presets keep true, as verl's GPU scripts do"
    ]


def verl_setting_problems(cfg: DictConfig) -> list[Problem]:
    found = []
    for side in ("actor", "ref"):
        key = f"actor_rollout_ref.{side}.megatron.router_replay.mode"
        replay = OmegaConf.select(cfg, key, default="disabled")
        if replay not in ROUTER_REPLAY_MODES:
            found.append(error(key, f"={replay!r} is not one of {list(ROUTER_REPLAY_MODES)}"))
    if OmegaConf.select(cfg, "actor_rollout_ref.rollout.mode") == "sync":
        found.append(error("actor_rollout_ref.rollout.mode", "=sync was removed from verl; use async"))
    found += _exclusive_micro_batches(cfg)
    rollout = cfg.actor_rollout_ref.rollout
    if OmegaConf.select(rollout, "val_kwargs.do_sample", default=False) and not rollout.get("temperature", 1.0) > 0:
        # verl/utils/config.py validate_config
        found.append(
            error(
                ("actor_rollout_ref.rollout.temperature", "actor_rollout_ref.rollout.val_kwargs.do_sample"),
                f"={rollout.get('temperature')}: sampling during validation needs temperature > 0",
            )
        )
    replay = OmegaConf.select(cfg, "actor_rollout_ref.actor.megatron.router_replay.mode", default="disabled")
    if replay == "R2" and OmegaConf.select(cfg, "algorithm.rollout_correction.bypass_mode", default=False):
        # verl/utils/config.py _validate_router_replay_config
        found.append(
            error(
                ("actor_rollout_ref.actor.megatron.router_replay.mode", "algorithm.rollout_correction.bypass_mode"),
                "=R2 records routes while recomputing old log-probs, which bypass_mode skips; set bypass_mode=false",
            )
        )
    found += lora_rank_problems(cfg)
    megatron = cfg.actor_rollout_ref.actor.megatron
    limit = megatron.get("max_seqlen_per_dp_cp_rank")
    if megatron.get("dynamic_context_parallel") and (
        isinstance(limit, bool) or not isinstance(limit, int) or limit <= 0
    ):  # verl/workers/config/engine.py McoreEngineConfig.__post_init__
        found.append(
            error(
                "megatron.max_seqlen_per_dp_cp_rank",
                f"={limit!r}: dynamic_context_parallel needs a positive integer here",
            )
        )
    return found


def _exclusive_micro_batches(cfg: DictConfig) -> list[Problem]:
    """The deprecated global micro-batch size and the per-GPU one exclude each other
    (verl/workers/config/actor.py ActorConfig.__post_init__, verl/utils/config.py check_mutually_exclusive)."""
    arr, found = cfg.actor_rollout_ref, []
    pairs = [("actor_rollout_ref.actor", arr.actor, "ppo_micro_batch_size")]
    pairs += [(f"actor_rollout_ref.{s}", arr[s], "log_prob_micro_batch_size") for s in ("rollout", "ref")]
    for node, side, name in pairs:
        if side.get(name) is not None and side.get(f"{name}_per_gpu") is not None:
            found.append(
                error(
                    (f"{node}.{name}", f"{node}.{name}_per_gpu"),
                    f"both are set; remove {node}.{name} (deprecated, only *_per_gpu is supported)",
                )
            )
    return found


def lora_rank_problems(cfg: DictConfig) -> list[Problem]:
    """verl/utils/config.py:205-215 validate_config: `model.lora` is read as a mapping; the LoRA rank it gives (or
    `model.lora_rank`; none when merged) must not exceed vLLM's largest LoRA rank for a vLLM rollout."""
    lora = OmegaConf.select(cfg, LORA, default={})
    if not OmegaConf.is_dict(lora) and lora != {}:
        return [error(LORA, f"={lora!r}: verl's validate_config reads keys inside it; set {LORA}.KEY=VALUE instead")]
    rank, key = lora.get("rank", 0), f"{LORA}.rank"
    if not isinstance(rank, int) or rank <= 0:
        rank, key = (
            OmegaConf.select(cfg, "actor_rollout_ref.model.lora_rank", default=0),
            "actor_rollout_ref.model.lora_rank",
        )
    if lora.get("merge", False) or isinstance(rank, bool) or not isinstance(rank, int) or rank <= 0:
        return []
    if OmegaConf.select(cfg, "actor_rollout_ref.rollout.name") == "vllm" and rank > MAX_VLLM_LORA_RANK:
        return [
            error(
                key,
                f"={rank}: vLLM serves LoRA ranks up to {MAX_VLLM_LORA_RANK}; verl's validate_config "
                "refuses more (verl/workers/rollout/vllm_rollout/utils.py get_vllm_max_lora_rank)",
            )
        ]
    return []
