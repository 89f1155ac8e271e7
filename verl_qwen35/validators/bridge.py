"""The values the bridge hands megatron-core for this model and layout, as verl's engine gets them (dry_run=full).

verl 0.9.1 `verl/workers/engine/megatron/transformer_impl.py` `_build_tf_config` builds the TransformerConfig
through mbridge (`vanilla_mbridge=true`) or Megatron-Bridge (`false`). Where the bridge is installed and knows
Qwen3.5 MoE, its own code computes the values here, from a config.json made of the preset's facts (no weights,
nothing downloaded); elsewhere they come from the cited table `verl_qwen35/data/bridges/qwen35_moe.yaml`, and the
dry run says which bridge did not run. megatron-core's own TransformerConfig judges them afterwards
(`validators/real.py`). Imports torch and transformers; only the full dry run and the launch call it.
"""

import importlib.util
from typing import Any

from verl_qwen35.checks.bridges import TABLE_NAME, Bridge
from verl_qwen35.model.layout import Layout

# The package that must import for the bridge to know Qwen3.5 MoE (PyPI's mbridge 0.15.1 has no qwen3_5).
_QWEN35_MODULE = {"mbridge": "mbridge.models.qwen3_5", "megatron_bridge": "megatron.bridge.models.qwen_vl"}


def installed(bridge: Bridge) -> bool:
    """Whether this bridge, with its Qwen3.5 MoE class, is importable here (without importing it)."""
    try:
        return importlib.util.find_spec(_QWEN35_MODULE[bridge.key]) is not None
    except ModuleNotFoundError:  # the parent package is missing
        return False


def hf_config(arch: Any) -> Any:
    """A Qwen3.5 MoE config.json's config from the preset's facts (what the bridge reads; no weights)."""
    from transformers import Qwen3_5MoeConfig

    interval = arch.full_attention_interval
    text = {
        "num_hidden_layers": arch.num_layers,
        "hidden_size": arch.hidden_size,
        "num_attention_heads": arch.num_attention_heads,
        "num_key_value_heads": arch.num_key_value_heads,
        "head_dim": arch.head_dim,
        "num_experts": arch.num_experts,
        "num_experts_per_tok": arch.num_experts_per_tok,
        "moe_intermediate_size": arch.moe_intermediate_size,
        "shared_expert_intermediate_size": arch.shared_expert_intermediate_size,
        "linear_num_key_heads": arch.linear_num_key_heads,
        "linear_num_value_heads": arch.linear_num_value_heads,
        "linear_key_head_dim": arch.linear_key_head_dim,
        "linear_value_head_dim": arch.linear_value_head_dim,
        "vocab_size": arch.vocab_size,
        # Qwen's config.json carries both; transformers 5.x keeps full_attention_interval (which mbridge reads)
        # only when layer_types is given (Qwen3_5MoeTextConfig.__post_init__ pops it otherwise).
        "full_attention_interval": interval,
        "layer_types": [
            "full_attention" if (i + 1) % interval == 0 else "linear_attention" for i in range(arch.num_layers)
        ],
    }
    return Qwen3_5MoeConfig(text_config=text)


def mbridge_values(arch: Any, lo: Layout, dtype: str, otc: dict[str, Any]) -> dict[str, Any]:
    """What mbridge's Qwen3.5 MoE bridge hands TransformerConfig after `set_extra_args(**otc)`, computed by its
    own `_build_config` (mbridge/core/llm_bridge.py `_build_base_config`). Its config class is replaced by
    `dict` in a subclass, so the values come back unjudged: megatron-core judges them next, on this machine's
    kernels (TE-only fusions set aside), which mbridge's own construction on a CPU could not."""
    import torch
    from mbridge.core.parallel_states import ParallelStates
    from mbridge.models.qwen3_5.qwen3_5_vl_bridge import Qwen3_5MoeVlBridge

    class ValuesOnly(Qwen3_5MoeVlBridge):
        TransformerConfigClass = dict

    sizes = ParallelStates(tp_size=lo.tp, pp_size=lo.pp, vpp_size=lo.vpp, cp_size=lo.cp, ep_size=lo.ep, etp_size=lo.etp)
    torch_dtype = torch.bfloat16 if dtype == "bfloat16" else torch.float16
    bridge = ValuesOnly(hf_config(arch), dtype=torch_dtype, parallel_states=sizes)
    bridge.set_extra_args(**otc)  # transformer_impl.py: bridge.set_extra_args(**override_transformer_config)
    values = dict(bridge.config)
    values["fp16"], values["bf16"] = dtype == "float16", dtype == "bfloat16"  # transformer_impl.py after .config
    return values


def source_line(bridge: Bridge, ran: bool) -> str:
    """The plan's line that says where the bridge's values came from."""
    if ran:
        return f"{bridge.short} ({bridge.cls}) ran on a config.json from the preset's facts: its own values judged"
    return (
        f"{bridge.short} not installed ({bridge.selected_by}): its values from {TABLE_NAME}, cited "
        f"({bridge.repository}@{bridge.commit[:7]})"
    )
