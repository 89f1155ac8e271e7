"""Sequence handling: packed sequences with Gated DeltaNet, dynamic batches, the vLLM length budget.

Packed (THD) sequences are a backend fact: stock megatron-core's Gated DeltaNet takes them from 0.18 on
(0.16.1 `megatron/core/ssm/gated_delta_net.py` GatedDeltaNet.forward raises "GDN does not support packed
sequence for now" on packed_seq_params; 0.18.0 implements it); on Ascend NPU
MindSpeed supplies its own packed GDN kernels, and verl main's Qwen3.5-35B NPU recipe runs them
(verl PR #7372: use_remove_padding=True, use_dynamic_bsz=True, `use_ascend_gdn` on MindSpeed-Bridge).
"""

from omegaconf import DictConfig

from verl_qwen35.checks.problem import Problem, error, warning
from verl_qwen35.installed import ASSUMED_MCORE
from verl_qwen35.model.layout import device_of

ROLLOUT = "actor_rollout_ref.rollout"
# Gated DeltaNet layers accept packed (THD) sequences from this megatron-core on (stock, GPU).
PACKED_GDN_MCORE = (0, 18)


def packing_available(device: str, mcore: tuple[int, int] | None) -> tuple[bool, str]:
    """Whether this backend runs Qwen3.5's Gated DeltaNet on packed sequences, and why (for messages)."""
    if device == "npu":
        return True, "MindSpeed's Gated DeltaNet on NPU takes packed sequences (verl PR #7372)"
    shown = (
        f"{ASSUMED_MCORE[0]}.{ASSUMED_MCORE[1]} assumed (not installed here; the Ascend image's)"
        if mcore is None
        else ".".join(map(str, mcore))
    )
    if (mcore or ASSUMED_MCORE) >= PACKED_GDN_MCORE:
        return True, f"megatron-core {shown} has packed Gated DeltaNet"
    return False, (
        f"packed sequences (use_remove_padding=true) are not supported by stock megatron-core's Gated DeltaNet "
        f"before megatron-core 0.18 (installed: {shown}; on GPU)"
    )


def packing_problems(cfg: DictConfig, mcore: tuple[int, int] | None) -> list[Problem]:
    """Packed sequences and what needs them, by backend: `trainer.device` and the megatron-core in use."""
    found = []
    actor = cfg.actor_rollout_ref.actor
    device = device_of(cfg)
    packed = {
        "megatron.use_remove_padding": cfg.megatron.use_remove_padding,
        "actor_rollout_ref.model.use_remove_padding": cfg.actor_rollout_ref.model.use_remove_padding,
    }
    on = [k for k, v in packed.items() if v]
    available, why = packing_available(device, mcore)
    if on and not available:
        found.append(error(tuple(on), f"{why}; set {on[0]}=false (or use megatron-core >= 0.18)"))
    # Without packing, say what to do: turn packing on where the backend has it, else the other key off.
    remedy = "set megatron.use_remove_padding=true or {key}=false" if available else f"{why}; set {{key}}=false"
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
                        "dynamic batch size needs packed sequences (use_remove_padding=true); "
                        + remedy.format(key=key),
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
                f"step); {remedy.format(key=per_token).replace(f'{per_token}=false', f'drop {per_token}')}",
            )
        )
    return found


def length_problems(cfg: DictConfig) -> list[Problem]:
    """max_prompt_length + max_response_length must fit both lengths verl's vLLM server uses.

    verl 0.8.0 and 0.9.1 alike (`verl/workers/rollout/vllm_rollout/vllm_async_server.py`): the engine runs
    with `engine_kwargs.vllm.max_model_len` when given (engine_kwargs are passed after verl's own arguments),
    but each request's `max_tokens` is capped by `rollout.max_model_len - len(prompt_ids)` (vLLMHttpServer.
    generate: `max_possible_tokens = self.config.max_model_len - len(prompt_ids)`, 0.9.1 line 593, 0.8.0
    line 474); an unset `rollout.max_model_len` becomes max_position_embeddings (`_validate_configs`).
    """
    rollout = cfg.actor_rollout_ref.rollout
    prompt, response = cfg.data.max_prompt_length, cfg.data.max_response_length
    needed = prompt + response
    lengths = f"max_prompt_length+max_response_length={prompt}+{response}={needed}"
    rollout_key = f"{ROLLOUT}.max_model_len"
    engine_key = f"{ROLLOUT}.engine_kwargs.{rollout.name}.max_model_len"
    from_engine = (rollout.get("engine_kwargs") or {}).get(rollout.name, {}) or {}
    engine_len, rollout_len = from_engine.get("max_model_len"), rollout.get("max_model_len")
    ceiling, model = cfg.model.get("max_position_embeddings"), cfg.model.name
    found = []
    if rollout_len is not None and ceiling is not None and rollout_len > ceiling:
        # vllm_async_server.py _validate_configs: "max_model_len (...) should be less than or equal to
        # max_position_embeddings (...)", a ValueError when the server starts.
        found.append(
            error(
                rollout_key,
                f"={rollout_len} exceeds {model}'s max_position_embeddings={ceiling}; verl's vLLM server refuses "
                f"it at start-up. Use at most {ceiling}",
            )
        )
    elif rollout_len is not None and needed > rollout_len:
        roomier = (
            f" even though {engine_key}={engine_len} gives the engine room"
            if engine_len is not None and engine_len >= needed
            else ""
        )
        found.append(
            error(
                (rollout_key, "data.max_prompt_length", "data.max_response_length"),
                f"={rollout_len} is below {lengths}: verl caps each request's max_tokens at "
                f"rollout.max_model_len - prompt length{roomier} (vllm_async_server.py vLLMHttpServer.generate), "
                f"so long responses are cut short silently; raise {rollout_key} to at least {needed} (or unset it) "
                "or shorten the lengths",
            )
        )
    elif rollout_len is None and engine_len is None and ceiling is not None and needed > ceiling:
        # _validate_configs: an unset max_model_len becomes max_position_embeddings for engine and cap alike.
        found.append(
            error(
                ("data.max_prompt_length", "data.max_response_length"),
                f"{lengths} exceeds {model}'s max_position_embeddings={ceiling} (vLLM's context when max_model_len "
                f"is unset); keep the sum at most {ceiling}",
            )
        )
    if engine_len is not None and ceiling is not None and engine_len > ceiling:
        # vLLM's ModelConfig (vllm/config/model.py `_get_and_verify_max_len`, 0.18.0 and 0.24.0) refuses a
        # max_model_len beyond the checkpoint's max_position_embeddings unless VLLM_ALLOW_LONG_MAX_MODEL_LEN=1.
        found.append(
            error(
                engine_key,
                f"={engine_len} exceeds {model}'s max_position_embeddings={ceiling}; vLLM refuses it. "
                f"Use at most {ceiling}",
            )
        )
    elif engine_len is not None and needed > engine_len:
        # vLLM stops every sequence at the engine's max_model_len (vllm/v1/core/sched/utils.py check_stop).
        found.append(
            error(
                (engine_key, "data.max_prompt_length", "data.max_response_length"),
                f"{lengths} exceeds max_model_len={engine_len}: vLLM stops each sequence there; "
                f"raise {engine_key} to at least {needed} or shorten the lengths",
            )
        )
    if not found and engine_len is not None and rollout_len is not None and engine_len != rollout_len:
        found.append(
            warning(
                (engine_key, rollout_key),
                f"two max_model_len values: the vLLM engine runs with {engine_key}={engine_len}, while verl caps "
                f"each request's max_tokens by {rollout_key}={rollout_len} minus the prompt; keep one",
            )
        )
    return found
