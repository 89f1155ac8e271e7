"""Every rule of checks/transformer.py, one row each side of it, against megatron-core's real TransformerConfig.

A row is a small override set on a clean base (35B, tp=2 pp=1 cp=1 ep=8 etp=1, no overrides: no problem).
The fast rules must give exactly the expected problems (the keys, and messages naming the same values), and the real
dataclass (`validators.real.real_transformer_problems`) must give the same verdict, unless the row says why
it cannot judge (a check megatron makes later than construction, or a kernel this CPU install lacks).
"""

import dataclasses
import re
import warnings
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from verl_qwen35.checks.layout import KEYS
from verl_qwen35.checks.megatron_keys import transformer_config_fields
from verl_qwen35.checks.transformer import transformer_problems
from verl_qwen35.installed import conf_dir
from verl_qwen35.model.layout import Layout
from verl_qwen35.validators.real import real_transformer_problems

OTC = "megatron.override_transformer_config"
ARCH = OmegaConf.load(Path(conf_dir()) / "model" / "35b.yaml").model  # 40 layers, 256 experts, topk 8
BASE = Layout(nnodes=1, devices_per_node=16, tp=2, pp=1, cp=1, ep=8, etp=1, vpp=None, gen_tp=2)
PP2 = {"pp": 2}
VPP2 = {"pp": 2, "vpp": 2}
FULL = {"recompute_granularity": "full", "recompute_method": "uniform", "recompute_num_layers": 1}
DROP_AND_PAD = {"moe_expert_capacity_factor": 1.0, "moe_pad_expert_input_to_capacity": True}
TE = "needs transformer-engine, which this CPU install lacks: the real class cannot judge fp8/fp4"
AT_STEP = "megatron asserts it when the layer runs, not when TransformerConfig is built"
NOT_TC = "not a TransformerConfig check: "
CP = "megatron-core refuses cp > 1 for Gated DeltaNet on GPU (checks/layout.py says so); on NPU MindSpeed carries CP"


@dataclasses.dataclass(frozen=True)
class Row:
    name: str
    otc: dict
    expected: list  # [(keys without the OTC prefix, message)]
    layout: dict = dataclasses.field(default_factory=dict)
    kwargs: dict = dataclasses.field(default_factory=dict)  # sequence_parallel, dtype, mtp_layers
    real: str = ""  # why the real class cannot judge this row ("" = it must agree)


def refused(*keys: str, message: str) -> list:
    return [(keys, message)]


ROWS = [
    Row("base", {}, []),
    # model_parallel_config.py
    Row(
        "sp_without_tp",
        {"sequence_parallel": True},
        refused(
            "sequence_parallel", KEYS["tp"], message="=true needs tensor parallelism (tp > 1); set it false or raise tp"
        ),
        {"tp": 1},
    ),
    Row("sp_with_tp", {"sequence_parallel": True}, []),
    Row("engine_sp_at_tp1_is_off", {}, [], {"tp": 1}, {"sequence_parallel": True}),
    Row("engine_sp_at_tp2", {}, [], {}, {"sequence_parallel": True}),
    Row(
        "defer_wgrad_at_pp1",
        {"defer_embedding_wgrad_compute": True, "gradient_accumulation_fusion": True},
        refused("defer_embedding_wgrad_compute", KEYS["pp"], message="=true needs pipeline parallelism (pp > 1)"),
    ),
    Row(
        "defer_wgrad_without_fusion",
        {"defer_embedding_wgrad_compute": True},
        refused("defer_embedding_wgrad_compute", message="=true needs gradient_accumulation_fusion=true"),
        PP2,
    ),
    Row(
        "defer_wgrad_fits",
        {"defer_embedding_wgrad_compute": True, "gradient_accumulation_fusion": True},
        [],
        PP2,
    ),
    Row("warmup_flush_with_vpp_default_overlap", {"overlap_p2p_comm_warmup_flush": True}, [], VPP2),
    Row(
        "warmup_flush_vpp1_no_overlap",
        {"overlap_p2p_comm_warmup_flush": True},
        refused("overlap_p2p_comm_warmup_flush", message="=true needs overlap_p2p_comm=true and batch_p2p_comm=false"),
        {"pp": 2, "vpp": 1},
    ),
    Row(
        "warmup_flush_batch_p2p",
        {"overlap_p2p_comm_warmup_flush": True, "batch_p2p_comm": True},
        refused("overlap_p2p_comm_warmup_flush", message="=true needs overlap_p2p_comm=true and batch_p2p_comm=false"),
        VPP2,
    ),
    # precision
    Row(
        "fp16_beside_bf16",
        {"fp16": True},
        refused(
            "fp16", "bf16", "megatron.dtype", message="only one of fp16 and bf16 may be true; megatron.dtype sets them"
        ),
    ),
    Row("fp16_instead_of_bf16", {"fp16": True, "bf16": False}, []),
    Row(
        "bf16_beside_dtype_fp16",
        {"bf16": True},
        refused(
            "fp16", "bf16", "megatron.dtype", message="only one of fp16 and bf16 may be true; megatron.dtype sets them"
        ),
        {},
        {"dtype": "float16"},
    ),
    Row("dtype_fp16", {}, [], {}, {"dtype": "float16"}),
    Row(
        "fp8_param_without_fp8",
        {"fp8_param": True},
        refused("fp8_param", "fp8", message="fp8_param=true needs fp8 (e4m3 or hybrid)"),
    ),
    Row("fp8_param_with_fp8", {"fp8_param": True, "fp8": "e4m3"}, []),
    Row(
        "fp4_param_without_fp4",
        {"fp4_param": True},
        refused("fp4_param", "fp4", message="fp4_param=true needs fp4=e2m1"),
    ),
    Row(
        "fp4_and_fp8",
        {"fp4": "e2m1", "fp8": "e4m3"},
        refused("fp4", "fp8", message="fp4 and fp8 cannot be used together"),
    ),
    Row(
        "fp8_first_last_bf16_delayed_default",
        {"fp8": "e4m3", "first_last_layers_bf16": True},
        refused(
            "first_last_layers_bf16", "fp8_recipe", message="delayed fp8 scaling cannot keep first/last layers in bf16"
        ),
    ),
    Row(
        "fp8_first_last_bf16_delayed",
        {"fp8": "e4m3", "fp8_recipe": "delayed", "first_last_layers_bf16": True},
        refused(
            "first_last_layers_bf16", "fp8_recipe", message="delayed fp8 scaling cannot keep first/last layers in bf16"
        ),
    ),
    Row(
        "fp8_first_last_bf16_tensorwise",
        {"fp8": "e4m3", "fp8_recipe": "tensorwise", "first_last_layers_bf16": True},
        [],
    ),
    Row("first_last_bf16_without_fp8", {"first_last_layers_bf16": True}, []),
    Row(  # one layer per stage: megatron's default of 1 bf16 layer at each end still fits
        "fp8_first_last_bf16_one_layer_per_stage",
        {"fp8": "e4m3", "fp8_recipe": "tensorwise", "first_last_layers_bf16": True},
        [],
        {"pp": 40},
    ),
    *[
        Row(
            f"bf16_{name}_{n}_pp{pp}",
            {"fp8": "e4m3", "fp8_recipe": "tensorwise", "first_last_layers_bf16": True, name: n},
            []
            if ok
            else refused(name, message=f"={n} must be between 0 and the {40 // pp} layers of a pipeline stage"),
            {"pp": pp},
        )
        for name in ("num_layers_at_start_in_bf16", "num_layers_at_end_in_bf16")
        for n, pp, ok in ((0, 1, True), (-1, 1, False), (40, 1, True), (41, 1, False), (20, 2, True), (21, 2, False))
    ],
    Row(
        "fp8_custom_recipe_without_factory",
        {"fp8": "e4m3", "fp8_recipe": "custom"},
        refused(
            "fp8_recipe",
            "fp8_quantizer_factory",
            message="fp8_recipe=custom needs fp8_quantizer_factory (an import path)",
        ),
    ),
    Row(
        "fp8_custom_recipe_with_factory",
        {"fp8": "e4m3", "fp8_recipe": "custom", "fp8_quantizer_factory": "a.b"},
        [],
    ),
    Row(
        "fp4_custom_recipe_without_factory",
        {"fp4": "e2m1", "fp4_recipe": "custom"},
        refused(
            "fp4_recipe",
            "fp4_quantizer_factory",
            message="fp4_recipe=custom needs fp4_quantizer_factory (an import path)",
        ),
    ),
    Row("custom_recipe_without_fp8", {"fp8_recipe": "custom"}, []),
    Row(
        "inference_optimized",
        {"transformer_impl": "inference_optimized"},
        refused(
            "transformer_impl",
            message="=inference_optimized is for inference only (Qwen3.5's zero-centered RMSNorm is refused)",
        ),
    ),
    Row("transformer_impl_local", {"transformer_impl": "local"}, []),
    # cpu offloading (recompute off: the preset's recompute is its own refusal)
    Row("cpu_offloading", {"cpu_offloading": True}, []),
    *[
        Row(
            f"cpu_offloading_layers_{n}",
            {"cpu_offloading": True, "cpu_offloading_num_layers": n},
            [] if ok else refused("cpu_offloading_num_layers", message=f"={n} must be in [0, 40)"),
        )
        for n, ok in ((-1, False), (0, True), (39, True), (40, False))
    ],
    Row(
        "cpu_offloading_with_pp",
        {"cpu_offloading": True},
        refused("cpu_offloading", KEYS["pp"], message="=true does not work with pipeline parallelism (pp > 1)"),
        PP2,
    ),
    Row(
        "cpu_offloading_with_recompute",
        {"cpu_offloading": True, **FULL},
        refused("cpu_offloading", "recompute_granularity", message="=true does not work with activation recompute"),
    ),
    Row(
        "fine_grained_and_cpu_offloading",
        {"cpu_offloading": True, "fine_grained_activation_offloading": True, "offload_modules": ["core_attn"]},
        refused(
            "fine_grained_activation_offloading", "cpu_offloading", message="cannot be combined with cpu_offloading"
        ),
    ),
    # context parallelism
    Row(
        "cp_comm_type_list_short",
        {"cp_comm_type": ["p2p"] * 39},
        refused("cp_comm_type", message="as a list needs one entry per layer (40)"),
        {"cp": 2},
        real=CP,
    ),
    Row("cp_comm_type_list_per_layer", {"cp_comm_type": ["p2p"] * 40}, [], {"cp": 2}, real=CP),
    Row("cp_comm_type_str", {"cp_comm_type": "a2a"}, [], {"cp": 2}, real=CP),
    Row(
        "cp_comm_type_list_without_cp",
        {"cp_comm_type": ["p2p"]},
        [],
    ),
    # attention
    Row(
        "fused_single_qkv_rope",
        {"fused_single_qkv_rope": True},
        refused(
            "fused_single_qkv_rope", message="=true does not support gated attention (Qwen3.5's attention output gate)"
        ),
    ),
    Row(  # only the checkpoint's refusal: without the gate the fused rope would be fine
        "fused_single_qkv_rope_without_gate",
        {"fused_single_qkv_rope": True, "attention_output_gate": False},
        refused(
            "attention_output_gate",
            message="=False: Qwen3.5-35B-A3B is built with attention_output_gate=True; drop the override",
        ),
        real=NOT_TC + "megatron-core builds an ungated attention the checkpoint was not trained with",
    ),
    Row(
        "batch_invariant_non_flash",
        {"batch_invariant_mode": True, "attention_backend": "fused"},
        refused("batch_invariant_mode", "attention_backend", message="=true needs attention_backend=flash"),
    ),
    Row("batch_invariant_flash_default", {"batch_invariant_mode": True}, []),
    Row("batch_invariant_flash", {"batch_invariant_mode": True, "attention_backend": "flash"}, []),
    Row("non_flash_alone", {"attention_backend": "fused"}, []),
    # the layer split and uniform recompute
    Row("uniform_recompute_divides", {**FULL, "recompute_num_layers": 4}, []),
    Row(
        "uniform_recompute_does_not_divide",
        {**FULL, "recompute_num_layers": 3},
        refused(
            "recompute_num_layers",
            message="=3 does not divide the [40] layer(s) of a model chunk (uniform recompute steps through each chunk "
            "3 layers at a time); use a divisor such as 1",
        ),
    ),
    Row("block_recompute_any_count", {**FULL, "recompute_method": "block", "recompute_num_layers": 3}, []),
    Row(
        "uniform_recompute_chunks_of_vpp",
        {**FULL, "recompute_num_layers": 4},
        refused(
            "recompute_num_layers",
            message="=4 does not divide the [5] layer(s) of a model chunk (uniform recompute steps through each chunk "
            "4 layers at a time); use a divisor such as 1",
        ),
        {"pp": 2, "vpp": 4},
    ),
    Row("first_stage_split", {"num_layers_in_first_pipeline_stage": 20}, [], PP2),
    Row(
        "first_stage_too_many",
        {"num_layers_in_first_pipeline_stage": 40},
        refused(
            f"{OTC}.num_layers_in_first_pipeline_stage",
            f"{OTC}.num_layers_in_last_pipeline_stage",
            "parallel.pp",
            message="40 layers with first=40 last=None leave 0 layers for 1 middle stage(s) (pp=2); the first/last "
            "counts must leave layers exactly when middle stages remain",
        ),
        PP2,
    ),
]
ROWS += [
    # MoE routing and dispatch (transformer_config.py, moe/router.py, moe/experts.py)
    Row(
        "apply_probs_on_input_topk8",
        {"moe_apply_probs_on_input": True},
        refused(
            "moe_apply_probs_on_input", "moe_router_topk", message="=true only works with moe_router_topk=1 (it is 8)"
        ),
        real=AT_STEP,
    ),
    Row(
        "apply_probs_on_input_topk1",
        {"moe_apply_probs_on_input": True, "moe_router_topk": 1, "moe_router_pre_softmax": True},
        [],
    ),
    Row(
        "load_balancing_unknown",
        {"moe_router_load_balancing_type": "switch"},
        refused(
            "moe_router_load_balancing_type",
            message="['switch'] not in ['aux_loss', 'seq_aux_loss', 'global_aux_loss', 'sinkhorn', 'none']",
        ),
        real=NOT_TC + "the router refuses an unknown type when it is built",
    ),
    *[
        Row(f"load_balancing_{t}", {"moe_router_load_balancing_type": t}, [])
        for t in ("aux_loss", "seq_aux_loss", "global_aux_loss", "sinkhorn", "none")
    ],
    Row(
        "load_balancing_list_with_coeff_list",
        {"moe_router_load_balancing_type": ["aux_loss", "seq_aux_loss"], "moe_aux_loss_coeff": [0.01, 0.001]},
        [],
    ),
    Row(
        "load_balancing_list_with_coeff_number",
        {"moe_router_load_balancing_type": ["aux_loss", "seq_aux_loss"], "moe_aux_loss_coeff": 0.01},
        refused(
            "moe_aux_loss_coeff", "moe_router_load_balancing_type", message="must be a list as long as the types list"
        ),
    ),
    Row(
        "load_balancing_list_with_short_coeff_list",
        {"moe_router_load_balancing_type": ["aux_loss", "seq_aux_loss"], "moe_aux_loss_coeff": [0.01]},
        refused(
            "moe_aux_loss_coeff", "moe_router_load_balancing_type", message="must be a list as long as the types list"
        ),
    ),
    Row(
        "load_balancing_list_unknown",
        {"moe_router_load_balancing_type": ["aux_loss", "switch"], "moe_aux_loss_coeff": [0.01, 0.01]},
        refused(
            "moe_router_load_balancing_type",
            message="['switch'] not in ['aux_loss', 'seq_aux_loss', 'global_aux_loss', 'sinkhorn', 'none']",
        ),
        real=NOT_TC + "the router refuses an unknown type when it is built",
    ),
    Row(
        "deepep_with_alltoall",
        {"moe_enable_deepep": True},
        refused("moe_enable_deepep", "moe_token_dispatcher_type", message="=true needs moe_token_dispatcher_type=flex"),
    ),
    Row("deepep_with_flex", {"moe_enable_deepep": True, "moe_token_dispatcher_type": "flex"}, []),
    Row(
        "deepep_with_hybridep",
        {"moe_enable_deepep": True, "moe_token_dispatcher_type": "flex", "moe_flex_dispatcher_backend": "hybridep"},
        refused(
            "moe_enable_deepep", "moe_flex_dispatcher_backend", message="=true conflicts with the hybridep backend"
        ),
    ),
    Row(
        "flex_pad_default_backend",
        {"moe_token_dispatcher_type": "flex", **DROP_AND_PAD},
        refused("moe_pad_expert_input_to_capacity", message="is not supported by the flex dispatcher with deepep"),
    ),
    Row(
        "flex_pad_deepep_switch",
        {
            "moe_token_dispatcher_type": "flex",
            "moe_enable_deepep": True,
            "moe_flex_dispatcher_backend": "hybridep",
            **DROP_AND_PAD,
        },
        [
            (("moe_enable_deepep", "moe_flex_dispatcher_backend"), "=true conflicts with the hybridep backend"),
            (("moe_pad_expert_input_to_capacity",), "is not supported by the flex dispatcher with deepep"),
        ],
    ),
    Row(
        "flex_pad_hybridep",
        {"moe_token_dispatcher_type": "flex", "moe_flex_dispatcher_backend": "hybridep", **DROP_AND_PAD},
        [],
    ),
    Row("alltoall_pad", {**DROP_AND_PAD}, []),
    Row(
        "shared_expert_overlap_flex",
        {"moe_shared_expert_overlap": True, "moe_token_dispatcher_type": "flex"},
        refused(
            "moe_shared_expert_overlap", "moe_token_dispatcher_type", message="=true needs the alltoall dispatcher"
        ),
    ),
    Row("shared_expert_overlap_alltoall", {"moe_shared_expert_overlap": True}, []),
    *[
        Row(
            f"capacity_{c}_sinkhorn",
            {"moe_expert_capacity_factor": c, "moe_router_load_balancing_type": "sinkhorn"},
            []
            if ok
            else refused(
                "moe_expert_capacity_factor",
                "moe_router_load_balancing_type",
                message="needs one of ('aux_loss', 'seq_aux_loss', 'global_aux_loss', 'none')",
            ),
        )
        for c, ok in ((None, True), (-1.0, False), (0.0, False), (1.0, False))
    ],
    Row("capacity_aux_loss", {"moe_expert_capacity_factor": 1.0, "moe_router_load_balancing_type": "aux_loss"}, []),
    Row(
        "pad_without_capacity",
        {"moe_pad_expert_input_to_capacity": True},
        refused(
            "moe_pad_expert_input_to_capacity", "moe_expert_capacity_factor", message="needs moe_expert_capacity_factor"
        ),
    ),
    Row(
        "pad_negative_capacity",
        {"moe_pad_expert_input_to_capacity": True, "moe_expert_capacity_factor": -1.0},
        refused(
            "moe_pad_expert_input_to_capacity", "moe_expert_capacity_factor", message="needs moe_expert_capacity_factor"
        ),
    ),
    Row("pad_zero_capacity", {"moe_pad_expert_input_to_capacity": True, "moe_expert_capacity_factor": 0.0}, []),
    Row(
        "expert_bias_softmax",
        {"moe_router_enable_expert_bias": True},
        refused(
            "moe_router_enable_expert_bias", "moe_router_score_function", message="=true needs score function sigmoid"
        ),
    ),
    Row("expert_bias_sigmoid", {"moe_router_enable_expert_bias": True, "moe_router_score_function": "sigmoid"}, []),
    *[
        Row(
            f"{pad}_without_quantization",
            {pad: True},
            refused("moe_router_padding_for_quantization", message="needs fp8 or fp4"),
        )
        for pad in ("moe_router_padding_for_quantization", "moe_router_padding_for_fp8")
    ],
    Row("router_padding_with_fp8", {"moe_router_padding_for_quantization": True, "fp8": "e4m3"}, []),
    Row("router_padding_with_fp4", {"moe_router_padding_for_quantization": True, "fp4": "e2m1"}, []),
    Row(
        "router_padding_allgather",
        {
            "moe_router_padding_for_quantization": True,
            "fp8": "e4m3",
            "moe_token_dispatcher_type": "allgather",
            "variable_seq_lengths": False,
        },
        refused("moe_router_padding_for_quantization", "moe_token_dispatcher_type", message="not with allgather"),
        real=TE,
    ),
    Row(
        "topk1_softmax",
        {"moe_router_topk": 1},
        refused(
            "moe_router_topk",
            "moe_router_pre_softmax",
            message="=1 with softmax scoring needs moe_router_pre_softmax=true",
        ),
    ),
    Row("topk1_pre_softmax", {"moe_router_topk": 1, "moe_router_pre_softmax": True}, []),
    Row("topk1_sigmoid", {"moe_router_topk": 1, "moe_router_score_function": "sigmoid"}, []),
    Row("topk1_sinkhorn", {"moe_router_topk": 1, "moe_router_load_balancing_type": "sinkhorn"}, []),
    Row("topk2_softmax", {"moe_router_topk": 2}, []),
    Row("group_topk", {"moe_router_group_topk": 4, "moe_router_num_groups": 8}, []),
    Row("group_topk_equals_groups", {"moe_router_group_topk": 8, "moe_router_num_groups": 8}, []),
    Row(
        "group_topk_without_groups",
        {"moe_router_group_topk": 4},
        refused("moe_router_group_topk", "moe_router_num_groups", message="group routing needs moe_router_num_groups"),
    ),
    Row(
        "group_topk_over_groups",
        {"moe_router_group_topk": 16, "moe_router_num_groups": 8},
        refused(
            "moe_router_group_topk",
            "moe_router_num_groups",
            message="num_groups=8 must divide 256 experts and be >= group_topk=16",
        ),
    ),
    Row(
        "groups_not_dividing_experts",
        {"moe_router_group_topk": 2, "moe_router_num_groups": 3},
        refused(
            "moe_router_group_topk",
            "moe_router_num_groups",
            message="num_groups=3 must divide 256 experts and be >= group_topk=2",
        ),
    ),
    Row(
        "group_topk_with_limited_devices",
        {"moe_router_group_topk": 4, "moe_router_num_groups": 8, "moe_router_topk_limited_devices": 2},
        refused("moe_router_topk_limited_devices", message="is replaced by moe_router_group_topk; drop it"),
    ),
    Row(
        "allgather_variable_lengths_default",
        {"moe_token_dispatcher_type": "allgather"},
        refused(
            "moe_token_dispatcher_type", message="=allgather does not support variable sequence lengths; use alltoall"
        ),
    ),
    Row(
        "allgather_variable_lengths",
        {"moe_token_dispatcher_type": "allgather", "variable_seq_lengths": True},
        refused(
            "moe_token_dispatcher_type", message="=allgather does not support variable sequence lengths; use alltoall"
        ),
    ),
    Row("allgather_fixed_lengths", {"moe_token_dispatcher_type": "allgather", "variable_seq_lengths": False}, []),
    Row(
        "bias_linear_etp1",
        {"add_bias_linear": True},
        refused(
            "add_bias_linear", message="=True: Qwen3.5-35B-A3B is built with add_bias_linear=False; drop the override"
        ),
        real=NOT_TC + "megatron-core builds a bias the checkpoint has no weights for",
    ),
    Row(
        "bias_linear_etp2",
        {"add_bias_linear": True},
        [
            (("add_bias_linear",), "=True: Qwen3.5-35B-A3B is built with add_bias_linear=False; drop the override"),
            (("add_bias_linear",), "bias in MoE layers needs etp=1 (parallel.etp=2)"),
        ],
        {"etp": 2},
    ),
]

EP = {"overlap_moe_expert_parallel_comm": True}
EP_KEY = "overlap_moe_expert_parallel_comm"
ROWS += [
    # overlap_moe_expert_parallel_comm (transformer_config.py)
    Row("ep_overlap", EP, []),
    Row("ep_overlap_pp_without_vpp", EP, refused(EP_KEY, message="=true needs parallel.vpp when pp > 1"), PP2),
    Row("ep_overlap_pp_with_vpp", EP, [], VPP2),
    Row("ep_overlap_ep1", EP, refused(EP_KEY, message="=true needs parallel.ep > 1"), {"ep": 1}),
    Row("ep_overlap_ep2", EP, [], {"ep": 2}),
    Row(
        "ep_overlap_allgather",
        {**EP, "moe_token_dispatcher_type": "allgather", "variable_seq_lengths": False},
        refused(EP_KEY, message="=true needs moe_token_dispatcher_type alltoall or flex"),
    ),
    Row("ep_overlap_flex", {**EP, "moe_token_dispatcher_type": "flex"}, []),
    Row(
        "ep_overlap_full_recompute",
        {**EP, "recompute_granularity": "full", "recompute_method": "uniform", "recompute_num_layers": 1},
        refused(EP_KEY, message="=true needs no full recompute and recompute_method=null; recompute_num_layers=null"),
    ),
    Row(
        "ep_overlap_selective_method",
        {**EP, "recompute_granularity": "selective", "recompute_method": "block"},
        refused(EP_KEY, message="=true needs no full recompute and recompute_method=null"),
    ),
    Row("ep_overlap_selective", {**EP, "recompute_granularity": "selective"}, []),
    Row(
        "ep_overlap_recompute_layers",
        {**EP, "recompute_num_layers": 2},
        refused(EP_KEY, message="=true needs recompute_num_layers=null"),
    ),
    Row(
        "ep_overlap_shared_expert_overlap",
        {**EP, "moe_shared_expert_overlap": True},
        refused(EP_KEY, message="=true needs moe_shared_expert_overlap=false"),
    ),
    Row(
        "ep_overlap_mtp1_pp1",
        EP,
        refused(EP_KEY, message="=true needs mtp_num_layers null or 1 (with pp > 1)"),
        {},
        {"mtp_layers": 1},
    ),
    Row("ep_overlap_mtp1_pp2", EP, [], VPP2, {"mtp_layers": 1}),
    Row(
        "ep_overlap_mtp2",
        EP,
        refused(EP_KEY, message="=true needs mtp_num_layers null or 1 (with pp > 1)"),
        VPP2,
        {"mtp_layers": 2},
    ),
    Row(
        "ep_overlap_everything_missing",
        {
            **EP,
            "moe_token_dispatcher_type": "allgather",
            "variable_seq_lengths": False,
            **FULL,
            "moe_shared_expert_overlap": True,
        },
        [
            (("moe_shared_expert_overlap", "moe_token_dispatcher_type"), "=true needs the alltoall dispatcher"),
            *refused(
                EP_KEY,
                message="=true needs parallel.vpp when pp > 1; "
                "parallel.ep > 1; moe_token_dispatcher_type alltoall or flex; "
                "no full recompute and recompute_method=null; "
                "recompute_num_layers=null; moe_shared_expert_overlap=false; mtp_num_layers null or 1 (with pp > 1)",
            ),
        ],
        {"pp": 2, "ep": 1},
        {"mtp_layers": 2},
    ),
    *[
        Row(
            f"{name}_without_ep_overlap",
            {name: True},
            refused(name, EP_KEY, message="=true needs overlap_moe_expert_parallel_comm=true"),
        )
        for name in ("delay_wgrad_compute", "ep_overlap_early_attn_memory_release")
    ],
    *[
        Row(f"{name}_with_ep_overlap", {**EP, name: True}, [])
        for name in ("delay_wgrad_compute", "ep_overlap_early_attn_memory_release")
    ],
]

G, M, N = "recompute_granularity", "recompute_method", "recompute_num_layers"
ROWS += [
    # activation recompute (transformer_config.py)
    Row("recompute_full_uniform", FULL, []),
    Row("recompute_method_unknown", {**FULL, M: "chunked"}, refused(M, message="='chunked' must be uniform or block")),
    Row(
        "recompute_full_without_method",
        {G: "full", N: 1},
        refused(M, G, message="recompute_granularity=full needs recompute_method uniform or block"),
    ),
    Row(
        "recompute_full_without_layers",
        {G: "full", M: "block"},
        refused(N, G, message="recompute_granularity=full needs recompute_num_layers (>= 1)"),
    ),
    Row("recompute_selective", {G: "selective"}, []),
    Row("recompute_selective_with_method", {G: "selective", M: "uniform"}, []),
    Row(
        "recompute_selective_with_layers",
        {G: "selective", N: 2},
        refused(N, G, message="=2 must be null with selective recompute"),
    ),
    Row(
        "recompute_off_with_layers",
        {N: 2},
        [],
    ),
    Row(
        "distribute_saved_activations_sp",
        {**FULL, "distribute_saved_activations": True},
        refused("distribute_saved_activations", message="=true cannot be used with sequence_parallel"),
        {},
        {"sequence_parallel": True},
    ),
    Row("distribute_saved_activations_no_sp", {**FULL, "distribute_saved_activations": True}, []),
    Row(
        "distribute_saved_activations_no_recompute",
        {"distribute_saved_activations": True},
        [],
        {},
        {"sequence_parallel": True},
    ),
    Row("selective_modules_known", {G: "selective", "recompute_modules": ["core_attn", "layernorm"]}, []),
    Row(
        "selective_modules_unknown",
        {G: "selective", "recompute_modules": ["core_attn", "attention"]},
        refused(
            "recompute_modules",
            message="['attention'] not in ['core_attn', 'moe_act', 'layernorm', 'mla_up_proj', 'mlp', "
            "'moe', 'shared_experts']",
        ),
    ),
    Row("modules_ignored_without_selective", {"recompute_modules": ["attention"]}, []),
    Row(
        "selective_moe_act_without_grouped_gemm",
        {G: "selective", "recompute_modules": ["moe_act"]},
        refused("recompute_modules", message="moe_act needs moe_grouped_gemm=true"),
    ),
    Row(
        "selective_moe_act_grouped_gemm",
        {G: "selective", "recompute_modules": ["moe_act"], "moe_grouped_gemm": True},
        [],
    ),
    Row(
        "selective_mla_up_proj",
        {G: "selective", "recompute_modules": ["mla_up_proj"]},
        refused("recompute_modules", message="mla_up_proj needs multi-latent attention (none here)"),
    ),
    Row(
        "selective_shared_experts_overlap",
        {G: "selective", "recompute_modules": ["shared_experts"], "moe_shared_expert_overlap": True},
        refused("recompute_modules", message="shared_experts conflicts with moe_shared_expert_overlap"),
    ),
    Row("selective_shared_experts", {G: "selective", "recompute_modules": ["shared_experts"]}, []),
    Row(
        "moe_layer_recompute_full",
        {**FULL, "moe_layer_recompute": True},
        refused("moe_layer_recompute", message="cannot be combined with full recompute"),
    ),
    Row("moe_layer_recompute_selective", {G: "selective", "moe_layer_recompute": True}, []),
    # no_rope_freq
    Row("no_rope_freq_divides", {"no_rope_freq": 4}, []),
    Row(
        "no_rope_freq_does_not_divide",
        {"no_rope_freq": 3},
        refused("no_rope_freq", message="=3 must divide num_layers=40"),
    ),
    Row(
        "no_rope_freq_list_short",
        {"no_rope_freq": [0] * 39},
        refused("no_rope_freq", message="as a list needs one entry per layer (40)"),
    ),
    Row("no_rope_freq_list_per_layer", {"no_rope_freq": [0] * 40}, []),
]

IMPL, SCOPE = "cuda_graph_impl", "cuda_graph_scope"
ROWS += [
    # CUDA graphs (transformer_config.py, the cuda graph section)
    Row("graphs_local_attn", {IMPL: "local", SCOPE: ["attn"]}, []),
    Row("graphs_scope_without_impl", {SCOPE: ["mlp"]}, []),
    Row(
        "graphs_unknown_scope",
        {IMPL: "local", SCOPE: ["attention"]},
        refused(
            SCOPE,
            message="['attention'] not in ['full_iteration', 'attn', 'mlp', 'moe', 'moe_router', 'moe_preprocess', "
            "'mamba']",
        ),
    ),
    Row(
        "graphs_unknown_scope_without_impl",
        {SCOPE: ["attention"]},
        refused(
            SCOPE,
            message="['attention'] not in ['full_iteration', 'attn', 'mlp', 'moe', 'moe_router', 'moe_preprocess', "
            "'mamba']",
        ),
    ),
    Row("graphs_scope_full", {IMPL: "local", SCOPE: ["full"]}, []),
    Row("graphs_scope_full_string", {IMPL: "local", SCOPE: "full"}, []),
    Row(
        "graphs_scope_full_and_attn",
        {IMPL: "local", SCOPE: ["full", "attn"]},
        refused(SCOPE, message="'full' cannot be combined with other scopes"),
    ),
    Row("graphs_scope_string_list", {IMPL: "transformer_engine", SCOPE: "moe_router,moe_preprocess"}, []),
    Row(
        "graphs_scope_string_mlp",
        {IMPL: "local", SCOPE: "attn,mlp"},
        refused(SCOPE, message="mlp graphs are for dense layers; every Qwen3.5 layer is MoE"),
    ),
    Row("graphs_enable_local_attn", {"enable_cuda_graph": True, SCOPE: ["attn"]}, []),
    Row(
        "graphs_enable_with_impl",
        {"enable_cuda_graph": True, IMPL: "local"},
        refused(
            "enable_cuda_graph",
            IMPL,
            message="enable_cuda_graph/external_cuda_graph are the old spelling of cuda_graph_impl",
        ),
    ),
    Row(
        "graphs_external_with_impl",
        {"external_cuda_graph": True, IMPL: "transformer_engine"},
        refused(
            "enable_cuda_graph",
            IMPL,
            message="enable_cuda_graph/external_cuda_graph are the old spelling of cuda_graph_impl",
        ),
    ),
    Row(
        "graphs_enable_and_external",
        {"enable_cuda_graph": True, "external_cuda_graph": True},
        refused(
            "enable_cuda_graph",
            "external_cuda_graph",
            message="enable_cuda_graph and external_cuda_graph exclude each other",
        ),
    ),
    Row(
        "graphs_external_full_iteration",
        {"external_cuda_graph": True, SCOPE: ["full_iteration"]},
        refused(SCOPE, IMPL, message="full_iteration needs cuda_graph_impl=local"),
    ),
    Row("graphs_enable_full_iteration", {"enable_cuda_graph": True, SCOPE: ["full_iteration"]}, []),
    Row("graphs_enable_is_local_preprocess_adds_router", {"enable_cuda_graph": True, SCOPE: ["moe_preprocess"]}, []),
    Row(
        "graphs_te_full_iteration",
        {IMPL: "transformer_engine", SCOPE: ["full_iteration"]},
        refused(SCOPE, IMPL, message="full_iteration needs cuda_graph_impl=local"),
    ),
    Row(
        "graphs_cpu_offloading",
        {IMPL: "local", SCOPE: ["attn"], "cpu_offloading": True},
        refused(IMPL, "cpu_offloading", message="CUDA graphs do not work with cpu_offloading"),
    ),
    Row("graphs_off_cpu_offloading", {SCOPE: ["attn"], "cpu_offloading": True}, []),
    Row(
        "graphs_moe_and_router",
        {IMPL: "local", SCOPE: ["moe", "moe_router"], **DROP_AND_PAD},
        refused(SCOPE, message="cannot contain both moe and moe_router"),
    ),
    Row("graphs_local_preprocess_adds_router", {IMPL: "local", SCOPE: ["moe_preprocess"]}, []),
    Row(
        "graphs_local_moe_router_and_moe",
        {IMPL: "local", SCOPE: ["moe_router", "moe"], **DROP_AND_PAD},
        refused(SCOPE, message="cannot contain both moe and moe_router"),
    ),
    Row(
        "graphs_te_preprocess_without_router",
        {IMPL: "transformer_engine", SCOPE: ["moe_preprocess"]},
        refused(SCOPE, message="moe_preprocess needs moe_router"),
    ),
    Row("graphs_te_router", {IMPL: "transformer_engine", SCOPE: ["moe_router"]}, []),
    Row("graphs_moe_drop_and_pad", {IMPL: "local", SCOPE: ["moe"], **DROP_AND_PAD}, []),
    *[
        Row(
            f"graphs_moe_{name}",
            {IMPL: "local", SCOPE: ["moe"], **DROP_AND_PAD, **change},
            refused(SCOPE, message="moe graphs need drop-and-pad MoE (capacity factor + pad to capacity)"),
        )
        for name, change in (
            ("no_capacity", {"moe_expert_capacity_factor": None, "moe_pad_expert_input_to_capacity": False}),
            ("negative_capacity", {"moe_expert_capacity_factor": -1.0, "moe_pad_expert_input_to_capacity": False}),
            ("no_pad", {"moe_pad_expert_input_to_capacity": False}),
        )
    ],
    Row(
        "graphs_moe_zero_capacity",
        {IMPL: "local", SCOPE: ["moe"], "moe_expert_capacity_factor": 0.0, "moe_pad_expert_input_to_capacity": True},
        [],
    ),
    Row(
        "graphs_full_recompute",
        {IMPL: "local", SCOPE: ["attn"], **FULL},
        refused(
            SCOPE,
            G,
            message="full recompute works only with cuda_graph_scope=[full_iteration] (and cuda_graph_impl=local)",
        ),
    ),
    Row("graphs_full_recompute_full_iteration", {IMPL: "local", SCOPE: ["full_iteration"], **FULL}, []),
    Row("graphs_selective_recompute", {IMPL: "local", SCOPE: ["attn"], G: "selective"}, []),
    # activation offloading and fusions
    Row(
        "fine_grained_without_modules",
        {"fine_grained_activation_offloading": True},
        refused("offload_modules", message="fine_grained_activation_offloading needs offload_modules"),
    ),
    Row(
        "fine_grained_unknown_module",
        {"fine_grained_activation_offloading": True, "offload_modules": ["attn"]},
        refused(
            "offload_modules",
            message="['attn'] not in ['core_attn', 'attn_proj', 'expert_fc1', 'moe_act', "
            "'attn_norm', 'mlp_norm', 'qkv_linear']",
        ),
    ),
    *[
        Row(f"fine_grained_{m}", {"fine_grained_activation_offloading": True, "offload_modules": [m, "core_attn"]}, [])
        for m in ("core_attn", "attn_proj", "expert_fc1", "moe_act", "attn_norm", "mlp_norm", "qkv_linear")
    ],
    Row(
        "fine_grained_attn_proj_alone",
        {"fine_grained_activation_offloading": True, "offload_modules": ["attn_proj"]},
        refused("offload_modules", message="attn_proj needs core_attn offloaded too"),
    ),
    Row("offload_modules_without_fine_grained", {"offload_modules": ["attn"]}, []),
    Row(
        "bias_activation_fusion_te_activation",
        {"bias_activation_fusion": True, "use_te_activation_func": True},
        refused("bias_activation_fusion", "use_te_activation_func", message="exclude each other"),
    ),
    Row("bias_activation_fusion", {"bias_activation_fusion": True}, []),
    Row("te_activation", {"use_te_activation_func": True}, []),
    Row(
        "glu_offset",
        {"bias_activation_fusion": True, "glu_linear_offset": 0.5},
        refused("glu_linear_offset", message="non-zero needs quick_gelu; Qwen3.5 uses SwiGLU"),
    ),
    Row("glu_offset_zero", {"bias_activation_fusion": True, "glu_linear_offset": 0.0}, []),
    Row("glu_offset_without_fusion", {"glu_linear_offset": 0.5}, []),
    Row(
        "fuse_tp_communication",
        {"inference_fuse_tp_communication": True},
        refused("inference_fuse_tp_communication", message="needs transformer_impl=inference_optimized"),
    ),
    Row(
        "fuse_tp_communication_inference_impl",
        {"inference_fuse_tp_communication": True, "transformer_impl": "inference_optimized"},
        refused(
            "transformer_impl",
            message="=inference_optimized is for inference only (Qwen3.5's zero-centered RMSNorm is refused)",
        ),
    ),
]


SEL = {G: "selective"}
GRAPH_KEYS = ("recompute_modules", SCOPE)
ROWS += [
    # CUDA graphs with selective recompute, and the moe_preprocess graph's host copies
    Row(
        "graphs_preprocess_capacity_no_pad",
        {IMPL: "local", SCOPE: ["moe_router"], "moe_expert_capacity_factor": 1.0},
        refused(
            SCOPE,
            message="moe_preprocess graphs need drop-and-pad MoE when a capacity factor or fp8 router "
            "padding is set with the alltoall dispatcher (the preprocess step copies to the host)",
        ),
    ),
    Row(
        "graphs_preprocess_negative_capacity",
        {IMPL: "local", SCOPE: ["moe_router"], "moe_expert_capacity_factor": -1.0},
        [],
    ),
    Row("graphs_preprocess_capacity_padded", {IMPL: "local", SCOPE: ["moe_router"], **DROP_AND_PAD}, []),
    Row(
        "graphs_preprocess_capacity_flex",
        {
            IMPL: "local",
            SCOPE: ["moe_router"],
            "moe_expert_capacity_factor": 1.0,
            "moe_token_dispatcher_type": "flex",
            "moe_flex_dispatcher_backend": "hybridep",
        },
        [],
    ),
    Row(
        "graphs_te_router_capacity",
        {IMPL: "transformer_engine", SCOPE: ["moe_router"], "moe_expert_capacity_factor": 1.0},
        [],
    ),
    Row(
        "graphs_te_preprocess_router_padding_fp8",
        {
            IMPL: "transformer_engine",
            SCOPE: ["moe_router", "moe_preprocess"],
            "moe_router_padding_for_fp8": True,
            "fp8": "e4m3",
        },
        refused(
            SCOPE,
            message="moe_preprocess graphs need "
            "drop-and-pad MoE when a capacity factor or fp8 router padding is set with the alltoall dispatcher (the "
            "preprocess step copies to the host)",
        ),
        real=TE,
    ),
    Row(
        "graphs_te_moe_recompute_router",
        {IMPL: "transformer_engine", SCOPE: ["moe_router"], **SEL, "recompute_modules": ["moe"]},
        refused(*GRAPH_KEYS, message="moe recompute does not work with a moe_router graph under transformer_engine"),
    ),
    Row(
        "graphs_local_moe_recompute_router",
        {IMPL: "local", SCOPE: ["moe_router"], **SEL, "recompute_modules": ["moe"]},
        [],
    ),
    Row(
        "graphs_te_moe_recompute_attn",
        {IMPL: "transformer_engine", SCOPE: ["attn"], **SEL, "recompute_modules": ["moe"]},
        [],
    ),
    Row(
        "graphs_attention_dropout_attn",
        {IMPL: "local", SCOPE: ["attn"], **SEL, "attention_dropout": 0.1},
        refused("attention_dropout", *GRAPH_KEYS, message="non-zero does not work with graphed core_attn recompute"),
    ),
    Row(
        "graphs_attention_dropout_whole_layer",
        {IMPL: "local", **SEL, "attention_dropout": 0.1, "recompute_modules": ["core_attn"]},
        refused("attention_dropout", *GRAPH_KEYS, message="non-zero does not work with graphed core_attn recompute"),
    ),
    Row(
        "graphs_attention_dropout_router_only",
        {IMPL: "local", SCOPE: ["moe_router"], **SEL, "attention_dropout": 0.1},
        [],
    ),
    Row(
        "graphs_attention_dropout_other_module",
        {IMPL: "local", SCOPE: ["attn"], **SEL, "attention_dropout": 0.1, "recompute_modules": ["layernorm"]},
        [],
    ),
    Row("attention_dropout_without_graphs", {**SEL, "attention_dropout": 0.1}, []),
    Row(
        "graphs_attention_dropout_no_modules",
        {IMPL: "local", SCOPE: ["attn"], **SEL, "attention_dropout": 0.1, "recompute_modules": []},
        [],
    ),
    Row(
        "graphs_hidden_dropout_moe",
        {IMPL: "local", SCOPE: ["moe"], **DROP_AND_PAD, **SEL, "hidden_dropout": 0.1, "recompute_modules": ["moe"]},
        refused("hidden_dropout", *GRAPH_KEYS, message="non-zero does not work with graphed mlp/moe recompute"),
    ),
    Row(
        "graphs_hidden_dropout_whole_layer_mlp",
        {IMPL: "local", **SEL, "hidden_dropout": 0.1, "recompute_modules": ["mlp"]},
        refused("hidden_dropout", *GRAPH_KEYS, message="non-zero does not work with graphed mlp/moe recompute"),
    ),
    Row(
        "graphs_attention_dropout_full_iteration",
        {IMPL: "local", SCOPE: ["full_iteration"], **SEL, "attention_dropout": 0.1},
        refused("attention_dropout", *GRAPH_KEYS, message="non-zero does not work with graphed core_attn recompute"),
    ),
    Row(
        "graphs_hidden_dropout_mlp_scope",
        {IMPL: "local", SCOPE: ["mlp"], **SEL, "hidden_dropout": 0.1, "recompute_modules": ["mlp"]},
        [
            (("cuda_graph_scope",), "mlp graphs are for dense layers; every Qwen3.5 layer is MoE"),
            (("hidden_dropout", *GRAPH_KEYS), "non-zero does not work with graphed mlp/moe recompute"),
        ],
    ),
    Row(
        "graphs_hidden_dropout_attn",
        {IMPL: "local", SCOPE: ["attn"], **SEL, "hidden_dropout": 0.1, "recompute_modules": ["moe", "mlp"]},
        [],
    ),
    Row(
        "graphs_jitter_moe",
        {
            IMPL: "local",
            SCOPE: ["moe"],
            **DROP_AND_PAD,
            **SEL,
            "moe_input_jitter_eps": 0.01,
            "recompute_modules": ["moe"],
        },
        refused("moe_input_jitter_eps", *GRAPH_KEYS, message="does not work with graphed moe recompute"),
    ),
    Row(
        "graphs_jitter_moe_not_recomputed",
        {
            IMPL: "local",
            SCOPE: ["moe"],
            **DROP_AND_PAD,
            **SEL,
            "moe_input_jitter_eps": 0.01,
            "recompute_modules": ["core_attn"],
        },
        [],
    ),
    Row(
        "graphs_zero_dropouts",
        {
            IMPL: "local",
            **SEL,
            "attention_dropout": 0.0,
            "hidden_dropout": 0.0,
            "recompute_modules": ["core_attn", "mlp", "moe"],
        },
        [],
    ),
]


def short(keys: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(k.removeprefix(f"{OTC}.") for k in keys)


def fast(row: Row, check_split: bool = True) -> list:
    lo = dataclasses.replace(BASE, **row.layout)
    split = {} if check_split else {"check_split": False}  # the default judges the split
    found = transformer_problems(row.otc, ARCH, lo, **split, **row.kwargs)
    return [(short(p.keys), p.message) for p in found]


def test_the_rows_are_distinct():
    names = [row.name for row in ROWS]
    assert len(names) == len(set(names))


def named(message: str) -> set[str]:
    """What a message names, its substance rather than its wording: `key=value` pairs, numbers, and the
    quoted values, TransformerConfig fields, layout sizes and precisions it mentions."""
    words = set(re.findall(r"[A-Za-z_][\w.]*", message))
    return (
        set(re.findall(r"[\w.]*=[^\s,;:()]+", message))
        | set(re.findall(r"(?<![\w.])\d+(?:\.\d+)?(?![\w.])", message))
        | set(re.findall(r"'[^']+'", message))
        | (words & (MCORE_FIELDS | {"tp", "pp", "cp", "ep", "etp", "vpp", "fp16", "bf16", "fp8", "fp4"}))
    )


MCORE_FIELDS = frozenset(transformer_config_fields())


@pytest.mark.parametrize("row", ROWS, ids=[row.name for row in ROWS])
def test_the_fast_rule_gives_exactly_the_expected_problems(row):
    """The same keys named, in order; each message names what the expected one names (wording may change)."""
    found = fast(row)
    assert [keys for keys, _ in found] == [short(keys) for keys, _ in row.expected]
    for (_, message), (_, expected) in zip(found, row.expected, strict=True):
        assert named(expected) <= named(message), message


@pytest.mark.parametrize("row", [r for r in ROWS if not r.real], ids=[r.name for r in ROWS if not r.real])
def test_megatrons_own_transformer_config_gives_the_same_verdict(row):
    lo = dataclasses.replace(BASE, **row.layout)
    kwargs = {
        "sequence_parallel": row.kwargs.get("sequence_parallel", False),
        "dtype": row.kwargs.get("dtype", "bfloat16"),
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        real = real_transformer_problems(row.otc, ARCH, lo, "gpu", mtp=row.kwargs.get("mtp_layers"), **kwargs)
    assert bool(real) == bool(row.expected), [str(p) for p in real]


def test_a_split_problem_is_left_to_the_caller_when_asked_and_hides_uniform_recompute():
    """check_split=False: the layout rules report the split; uniform recompute is judged only on a split that builds."""
    bad_split = {**FULL, "recompute_num_layers": 3, "num_layers_in_first_pipeline_stage": 40}
    assert fast(Row("x", bad_split, [], PP2), check_split=False) == []
    assert fast(Row("x", {**FULL, "recompute_num_layers": 3}, [], PP2), check_split=False) == [
        (
            ("recompute_num_layers",),
            "=3 does not divide the [20] layer(s) of a model chunk (uniform recompute steps "
            "through each chunk 3 layers at a time); use a divisor such as 1",
        )
    ]


# --- types and enum values against the shipped field list (checks/megatron_keys.py field_spec) ---------------
FIELDS = {
    "f": {"kinds": ["float"]},
    "i": {"kinds": ["int"]},
    "free": {"kinds": ["any"]},
    "s": {"kinds": ["str"], "choices": ["x", "y"]},
    "ls": {"kinds": ["list", "str"], "choices": ["x"]},
    "n": {"kinds": ["null", "int"]},
    "d": {"kinds": ["dict"]},
}


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("unknown", object(), None),  # not a field: megatron_keys.py reports unknown names
        ("free", object(), None),
        ("f", 1, None),  # an int where a float is meant: the dataclass takes it
        ("f", 1.5, None),
        ("f", True, "=True is of type bool; megatron-core expects float"),
        ("f", "1", "='1' is of type str; megatron-core expects float"),
        ("i", 1.0, "=1.0 is of type float; megatron-core expects int"),
        ("i", False, "=False is of type bool; megatron-core expects int"),
        ("s", "x", None),
        ("s", "z", "='z' is not one of ['x', 'y']"),
        ("ls", ["z"], None),  # choices are checked for a string only
        ("ls", "z", "='z' is not one of ['x']"),
        ("ls", ("x",), None),  # a tuple is a list
        ("n", None, None),
        ("n", 3, None),
        ("n", [3], "=[3] is of type list; megatron-core expects null or int"),
        ("d", {"a": 1}, None),
        ("d", object, "=<class 'object'> is of type other; megatron-core expects dict"),
    ],
)
def test_types_and_choices_follow_the_field_list(name, value, message):
    from verl_qwen35.checks.transformer import type_problems

    found = [(p.keys, p.message) for p in type_problems({name: value}, FIELDS, prefix="x.y")]
    assert found == ([((f"x.y.{name}",), message)] if message else [])


def test_types_name_the_override_key_by_default_and_report_every_field():
    from verl_qwen35.checks.transformer import type_problems

    found = type_problems({"f": "a", "i": "b", "s": "x"}, FIELDS)
    assert [p.keys for p in found] == [(f"{OTC}.f",), (f"{OTC}.i",)]


@pytest.mark.parametrize(
    ("otc", "enabled", "model_mtp", "built"),
    [
        ({}, False, 1, None),
        ({"mtp_num_layers": 1}, False, 1, None),
        ({}, True, 1, 1),
        ({"mtp_num_layers": 2}, True, 1, 2),
    ],
)
def test_mtp_layers_built_follow_verls_check_mtp_config(otc, enabled, model_mtp, built):
    from verl_qwen35.checks.transformer import mtp_layers_built

    assert mtp_layers_built(otc, enabled, model_mtp) == built
