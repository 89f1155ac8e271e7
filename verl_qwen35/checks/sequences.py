"""Sequence handling: packed sequences with Gated DeltaNet, dynamic batches, the vLLM length budget."""

from omegaconf import DictConfig

from verl_qwen35.checks.problem import Problem, error, warning
from verl_qwen35.installed import ASSUMED_MCORE

ROLLOUT = "actor_rollout_ref.rollout"
# Gated DeltaNet layers accept packed (THD) sequences from this megatron-core on.
PACKED_GDN_MCORE = (0, 18)


def packing_problems(cfg: DictConfig, mcore: tuple[int, int] | None) -> list[Problem]:
    found = []
    actor = cfg.actor_rollout_ref.actor
    packed = {
        "megatron.use_remove_padding": cfg.megatron.use_remove_padding,
        "actor_rollout_ref.model.use_remove_padding": cfg.actor_rollout_ref.model.use_remove_padding,
    }
    on = [k for k, v in packed.items() if v]
    shown = (
        f"{ASSUMED_MCORE[0]}.{ASSUMED_MCORE[1]} assumed (not installed here; the Ascend image's)"
        if mcore is None
        else ".".join(map(str, mcore))
    )
    if on and (mcore or ASSUMED_MCORE) < PACKED_GDN_MCORE:
        found.append(
            error(
                tuple(on),
                f"packed sequences (use_remove_padding=true) are not supported by Gated DeltaNet before "
                f"megatron-core 0.18 (installed: {shown}); set {on[0]}=false",
            )
        )
    dynamic = {
        "actor_rollout_ref.actor.use_dynamic_bsz": actor.use_dynamic_bsz,
        f"{ROLLOUT}.log_prob_use_dynamic_bsz": cfg.actor_rollout_ref.rollout.log_prob_use_dynamic_bsz,
        "actor_rollout_ref.ref.log_prob_use_dynamic_bsz": cfg.actor_rollout_ref.ref.log_prob_use_dynamic_bsz,
    }
    if not cfg.megatron.use_remove_padding:
        for key, value in dynamic.items():
            if value:
                found.append(
                    error(
                        (key, "megatron.use_remove_padding"),
                        "dynamic batch size needs packed sequences (use_remove_padding=true), which Qwen3.5's "
                        f"Gated DeltaNet cannot use here; set {key}=false",
                    )
                )
    per_token = "megatron.override_transformer_config.calculate_per_token_loss"
    if cfg.megatron.override_transformer_config.get("calculate_per_token_loss") and not cfg.megatron.use_remove_padding:
        # verl 0.9.1 verl/workers/engine/megatron/transformer_impl.py (forward_backward_batch):
        # "calculate_per_token_loss=True requires use_remove_padding=True" (padded batches skew the MoE aux/z
        # loss against per-token gradients).
        found.append(
            error(
                (per_token, "megatron.use_remove_padding"),
                "=true needs packed sequences (megatron.use_remove_padding=true; verl raises otherwise at the first "
                f"step), which Qwen3.5's Gated DeltaNet cannot use here; drop {per_token}",
            )
        )
    return found


def length_problems(cfg: DictConfig) -> list[Problem]:
    """max_prompt_length + max_response_length must fit the vLLM context in use."""
    rollout = cfg.actor_rollout_ref.rollout
    needed = cfg.data.max_prompt_length + cfg.data.max_response_length
    engine_key = f"{ROLLOUT}.engine_kwargs.{rollout.name}.max_model_len"
    from_engine = (rollout.get("engine_kwargs") or {}).get(rollout.name, {}) or {}
    engine_len, rollout_len = from_engine.get("max_model_len"), rollout.get("max_model_len")
    found = []
    if engine_len is not None and rollout_len is not None and engine_len != rollout_len:
        found.append(
            warning(
                (engine_key, f"{ROLLOUT}.max_model_len"),
                f"two max_model_len values ({engine_len} and {rollout_len}); the engine kwargs one ({engine_len}) "
                "reaches vLLM; keep one",
            )
        )
    in_use = engine_len if engine_len is not None else rollout_len
    key = engine_key if engine_len is not None else f"{ROLLOUT}.max_model_len"
    ceiling = cfg.model.get("max_position_embeddings")
    if in_use is not None and ceiling is not None and in_use > ceiling:
        # vLLM refuses a max_model_len beyond the checkpoint's max_position_embeddings
        # (verl/workers/rollout/vllm_rollout/vllm_async_server.py hands it to vLLM's engine args).
        found.append(
            error(
                key,
                f"={in_use} exceeds {cfg.model.name}'s max_position_embeddings={ceiling}; vLLM refuses it. "
                f"Use at most {ceiling}",
            )
        )
    if in_use is None and ceiling is not None and needed > ceiling:
        # verl/workers/rollout/vllm_rollout/vllm_async_server.py `_validate_configs`: an unset max_model_len
        # becomes max_position_embeddings, and generation caps max_tokens by it (responses cut short).
        found.append(
            error(
                ("data.max_prompt_length", "data.max_response_length"),
                f"max_prompt_length+max_response_length={cfg.data.max_prompt_length}+"
                f"{cfg.data.max_response_length}={needed} exceeds {cfg.model.name}'s max_position_embeddings="
                f"{ceiling} (vLLM's context when max_model_len is unset); keep the sum at most {ceiling}",
            )
        )
    if in_use is not None and needed > in_use:
        found.append(
            error(
                (key, "data.max_prompt_length", "data.max_response_length"),
                f"max_prompt_length+max_response_length={cfg.data.max_prompt_length}+"
                f"{cfg.data.max_response_length}={needed} exceeds max_model_len={in_use}; "
                f"raise {key} to at least {needed} or shorten the lengths",
            )
        )
    return found
