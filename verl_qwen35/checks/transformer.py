"""Values inside `override_transformer_config`, as megatron-core's TransformerConfig judges them.

Each rule restates an assert of megatron-core 0.16.1 `transformer/transformer_config.py`
(`TransformerConfig.__post_init__`) or `model_parallel_config.py` (`ModelParallelConfig.__post_init__`)
that a Qwen3.5 MoE config can reach through overrides; `verl_qwen35/validators/real.py` builds the real
dataclass in `dry_run=full`, and tests/integration/test_rules_agree_with_megatron_and_verl.py keeps the two in
agreement.
Pure over a plain dict, the model facts and the layout: the planner calls it per layout.
"""

from collections.abc import Mapping
from typing import Any

from verl_qwen35.checks.bridges import Bridge, bridge_problems, explain, with_bridge
from verl_qwen35.checks.layout import KEYS
from verl_qwen35.checks.problem import Problem, error
from verl_qwen35.config.schema import PARALLEL_KEYS
from verl_qwen35.model.layout import Layout
from verl_qwen35.model.pipeline import OTC, Split, chunk_layers, split_problems

# override_transformer_config keys that restate a layout number; verl's Megatron-Bridge path applies them
# after the engine's sizes (verl/workers/engine/megatron/transformer_impl.py `_build_tf_config`), so a
# different value silently replaces the layout. Equal values are accepted: verl's Ascend guide
# (docs/ascend_tutorial/.../perf_tuning_on_ascend.rst) sets context_parallel_size in both places.
LAYOUT_FIELDS = {field: source.removeprefix("parallel.") for field, source in PARALLEL_KEYS.items()}
# Architecture facts the checkpoint fixes; an override builds a model the weights do not fit.
ARCH_FIELDS = {
    "num_layers": "num_layers",
    "hidden_size": "hidden_size",
    "num_attention_heads": "num_attention_heads",
    "num_query_groups": "num_key_value_heads",
    "kv_channels": "head_dim",
    "num_moe_experts": "num_experts",
    "moe_ffn_hidden_size": "moe_intermediate_size",
    "moe_shared_expert_intermediate_size": "shared_expert_intermediate_size",
    "linear_num_key_heads": "linear_num_key_heads",
    "linear_num_value_heads": "linear_num_value_heads",
    "linear_key_head_dim": "linear_key_head_dim",
    "linear_value_head_dim": "linear_value_head_dim",
    "linear_attention_freq": "full_attention_interval",
}
# Architecture switches whose only value for Qwen3.5 is the one the checkpoint was trained with.
ARCH_SWITCHES = {
    "experimental_attention_variant": "gated_delta_net",
    "multi_latent_attention": False,
    "moe_layer_freq": 1,
    # Qwen3.5's blocks as Megatron-Bridge builds them (the same values verl_qwen35/validators/real.py
    # `facts_config` hands TransformerConfig): another value builds layers the checkpoint has no weights for.
    "normalization": "RMSNorm",
    "layernorm_zero_centered_gamma": True,
    "gated_linear_unit": True,
    "add_bias_linear": False,
    "attention_output_gate": True,
}
# transformer_config.py: allowed recompute_modules for selective recompute.
RECOMPUTE_MODULES = ("core_attn", "moe_act", "layernorm", "mla_up_proj", "mlp", "moe", "shared_experts")
# transformer/moe/router.py: load-balancing types the router implements (TransformerConfig types it as str).
LOAD_BALANCING = ("aux_loss", "seq_aux_loss", "global_aux_loss", "sinkhorn", "none")
CAPACITY_BALANCING = ("aux_loss", "seq_aux_loss", "global_aux_loss", "none")
# transformer/enums.py CudaGraphScope; "full" is the deprecated spelling of the empty list.
CUDA_GRAPH_SCOPES = ("full_iteration", "attn", "mlp", "moe", "moe_router", "moe_preprocess", "mamba")
# transformer_config.py: fine_grained_activation_offloading modules.
OFFLOAD_MODULES = ("core_attn", "attn_proj", "expert_fc1", "moe_act", "attn_norm", "mlp_norm", "qkv_linear")


def kind_of(value: Any) -> str:
    if value is None:
        return "null"
    for kind, types in (("bool", bool), ("int", int), ("float", float), ("str", str)):
        if isinstance(value, types):
            return kind
    if isinstance(value, list | tuple):
        return "list"
    return "dict" if isinstance(value, Mapping) else "other"


def type_problems(otc: Mapping[str, Any], fields: Mapping[str, dict], prefix: str = OTC) -> list[Problem]:
    """Types and enum values from the generated field list (`verl_qwen35/data/upstream/megatron_core_*.json`)."""
    found = []
    for name, value in otc.items():
        spec = fields.get(name)
        if spec is None or "any" in spec["kinds"]:
            continue
        kinds, kind = spec["kinds"], kind_of(value)
        fits = kind in kinds or (kind == "int" and "float" in kinds)
        if not fits:
            found.append(
                error(f"{prefix}.{name}", f"={value!r} is of type {kind}; megatron-core expects {' or '.join(kinds)}")
            )
        elif "choices" in spec and kind == "str" and value not in spec["choices"]:
            found.append(error(f"{prefix}.{name}", f"={value!r} is not one of {spec['choices']}"))
    return found


def transformer_problems(
    otc: Mapping[str, Any],
    arch: Any,
    lo: Layout,
    *,
    sequence_parallel: bool = False,
    dtype: str = "bfloat16",
    mtp_layers: int | None = None,
    check_split: bool = True,
    bridge: Bridge | None = None,
    split: Split | None = None,
) -> list[Problem]:
    """TransformerConfig's verdict on these overrides for this model and layout (values already typed).

    `sequence_parallel` is the engine's (verl turns it off at tp=1); `mtp_layers` the MTP layers that
    will be built (None when verl disables MTP). With `bridge`, megatron-core judges what verl's engine
    hands it: the bridge's values for Qwen3.5 and verl's steps, then these overrides (`checks/bridges.py`);
    a refusal then says which of its values the bridge set. `split`: the pipeline split of `otc`, when the caller
    has it (a `Run`'s)."""
    kwargs = {"sequence_parallel": sequence_parallel, "dtype": dtype, "mtp_layers": mtp_layers}
    kwargs |= {"check_split": check_split, "split": split or Split.of(otc)}  # bridges set no stage counts
    if bridge is None:
        return _judged(otc, arch, lo, **kwargs)
    settings = bridge.settings(lo, sequence_parallel)
    merged = with_bridge(otc, settings)
    # Neither mbridge nor Megatron-Bridge's path sets it for mbridge: megatron-core's default
    # (transformer_config.py `attention_backend: AttnBackend = AttnBackend.auto`).
    merged.setdefault("attention_backend", "auto")
    return explain(_judged(merged, arch, lo, **kwargs), otc, settings) + bridge_problems(otc, arch, lo, bridge)


def _judged(
    otc: Mapping[str, Any],
    arch: Any,
    lo: Layout,
    *,
    sequence_parallel: bool,
    dtype: str,
    mtp_layers: int | None,
    check_split: bool,
    split: Split,
) -> list[Problem]:
    found = _layout_and_arch(otc, arch, lo)
    get = otc.get
    sp = bool(get("sequence_parallel", sequence_parallel and lo.tp > 1))

    def add(keys: str | tuple[str, ...], message: str) -> None:
        keys = (keys,) if isinstance(keys, str) else keys
        found.append(error(tuple(k if "." in k else f"{OTC}.{k}" for k in keys), message))

    # model_parallel_config.py
    if sp and lo.tp <= 1:
        add(("sequence_parallel", KEYS["tp"]), "=true needs tensor parallelism (tp > 1); set it false or raise tp")
    if get("defer_embedding_wgrad_compute"):
        if lo.pp == 1:
            add(("defer_embedding_wgrad_compute", KEYS["pp"]), "=true needs pipeline parallelism (pp > 1)")
        if not get("gradient_accumulation_fusion", False):
            add("defer_embedding_wgrad_compute", "=true needs gradient_accumulation_fusion=true")
    # verl's Megatron-Bridge path turns overlap_p2p_comm on only for vpp > 1 (transformer_impl.py `_build_tf_config`)
    overlap_p2p = get("overlap_p2p_comm", lo.vpp is not None and lo.vpp > 1)
    if get("overlap_p2p_comm_warmup_flush") and (not overlap_p2p or get("batch_p2p_comm")):
        add("overlap_p2p_comm_warmup_flush", "=true needs overlap_p2p_comm=true and batch_p2p_comm=false")
    # transformer_config.py: precision
    bf16, fp16 = get("bf16", dtype == "bfloat16"), get("fp16", dtype == "float16")
    if bf16 and fp16:
        add(("fp16", "bf16", "megatron.dtype"), "only one of fp16 and bf16 may be true; megatron.dtype sets them")
    if get("fp8_param") and not get("fp8"):
        add(("fp8_param", "fp8"), "fp8_param=true needs fp8 (e4m3 or hybrid)")
    if get("fp4_param") and not get("fp4"):
        add(("fp4_param", "fp4"), "fp4_param=true needs fp4=e2m1")
    if get("fp4") and get("fp8"):
        add(("fp4", "fp8"), "fp4 and fp8 cannot be used together")
    if get("fp8") and get("first_last_layers_bf16"):
        if get("fp8_recipe", "delayed") == "delayed":
            add(("first_last_layers_bf16", "fp8_recipe"), "delayed fp8 scaling cannot keep first/last layers in bf16")
        else:
            per_stage = arch.num_layers // lo.pp
            for name in ("num_layers_at_start_in_bf16", "num_layers_at_end_in_bf16"):
                if not 0 <= get(name, 1) <= per_stage:
                    add(name, f"={get(name)} must be between 0 and the {per_stage} layers of a pipeline stage")
    for quant, recipe, factory in (
        ("fp8", "fp8_recipe", "fp8_quantizer_factory"),
        ("fp4", "fp4_recipe", "fp4_quantizer_factory"),
    ):
        if get(quant) and get(recipe) == "custom" and not get(factory):
            add((recipe, factory), f"{recipe}=custom needs {factory} (an import path)")
    if get("transformer_impl") == "inference_optimized":
        add(
            "transformer_impl",
            "=inference_optimized is for inference only (Qwen3.5's zero-centered RMSNorm is refused)",
        )
    found += _moe_problems(otc, arch, lo)
    found += _ep_overlap_problems(otc, lo, mtp_layers)
    found += _recompute_problems(otc, lo, sp)
    if get("cpu_offloading"):
        n = get("cpu_offloading_num_layers", 0)
        if not 0 <= n < arch.num_layers:
            add("cpu_offloading_num_layers", f"={n} must be in [0, {arch.num_layers})")
        if lo.pp > 1:
            add(("cpu_offloading", KEYS["pp"]), "=true does not work with pipeline parallelism (pp > 1)")
        if get("recompute_granularity") is not None:
            add(("cpu_offloading", "recompute_granularity"), "=true does not work with activation recompute")
    if get("fine_grained_activation_offloading") and get("cpu_offloading"):
        add(("fine_grained_activation_offloading", "cpu_offloading"), "cannot be combined with cpu_offloading")
    if lo.cp > 1 and isinstance(get("cp_comm_type"), list) and len(get("cp_comm_type")) != arch.num_layers:
        add("cp_comm_type", f"as a list needs one entry per layer ({arch.num_layers})")
    found += _no_rope_problems(otc, arch)
    found += _cuda_graph_problems(otc)
    found += _offload_and_activation_problems(otc)
    if get("fused_single_qkv_rope") and get("attention_output_gate", True):
        add("fused_single_qkv_rope", "=true does not support gated attention (Qwen3.5's attention output gate)")
    if get("batch_invariant_mode") and get("attention_backend", "flash") != "flash":
        add(("batch_invariant_mode", "attention_backend"), "=true needs attention_backend=flash")
    split_found = split_problems(arch.num_layers, lo.pp, lo.vpp, split, mtp_layers)
    if check_split:
        found += [error(k, m) for k, m in split_found]
    if not split_found:
        found += uniform_recompute_problems(otc, chunk_layers(arch.num_layers, lo.pp, lo.vpp, split))
    return found


def uniform_recompute_problems(otc: Mapping[str, Any], chunks: list[int]) -> list[Problem]:
    """Uniform full recompute checkpoints `recompute_num_layers` layers at a time and indexes past the
    end of a model chunk whose layer count it does not divide (megatron-core 0.16.1
    transformer/transformer_block.py `_checkpointed_forward`: `self._get_layer(index)` -> IndexError)."""
    n = otc.get("recompute_num_layers")
    if otc.get("recompute_granularity") != "full" or otc.get("recompute_method") != "uniform" or not n:
        return []
    if bad := sorted({c for c in chunks if c % n}):
        return [
            error(
                f"{OTC}.recompute_num_layers",
                f"={n} does not divide the {bad} layer(s) of a model chunk (uniform recompute steps through "
                f"each chunk {n} layers at a time); use a divisor such as 1",
            )
        ]
    return []


def _layout_and_arch(otc: Mapping[str, Any], arch: Any, lo: Layout) -> list[Problem]:
    found = []
    for name, short in LAYOUT_FIELDS.items():
        if name in otc and otc[name] != getattr(lo, short):
            found.append(
                error(
                    (f"{OTC}.{name}", f"parallel.{short}"),
                    f"={otc[name]} but parallel.{short}={getattr(lo, short)}: verl applies this override after the "
                    f"layout, so the two would disagree; set parallel.{short} and drop the override",
                )
            )
    for name, fact in ARCH_FIELDS.items():
        if name in otc and otc[name] != arch.get(fact):
            found.append(
                error(
                    f"{OTC}.{name}",
                    f"={otc[name]} but {arch.name} has {fact}={arch.get(fact)}: the checkpoint would not load; "
                    "drop the override",
                )
            )
    for name, only in ARCH_SWITCHES.items():
        if name in otc and otc[name] != only:
            found.append(
                error(f"{OTC}.{name}", f"={otc[name]!r}: {arch.name} is built with {name}={only!r}; drop the override")
            )
    return found


def _moe_problems(otc: Mapping[str, Any], arch: Any, lo: Layout) -> list[Problem]:
    found, get = [], otc.get

    def add(keys: tuple[str, ...], message: str) -> None:
        found.append(error(tuple(f"{OTC}.{k}" for k in keys), message))

    dispatcher = get("moe_token_dispatcher_type", "alltoall")
    topk = get("moe_router_topk", arch.num_experts_per_tok)
    if not 1 <= topk <= arch.num_experts:
        add(("moe_router_topk",), f"={topk} must be between 1 and num_experts={arch.num_experts}")
    if get("moe_apply_probs_on_input") and topk != 1:
        # moe/experts.py (GroupedMLP, TEGroupedMLP, SequentialMLP forward): asserted at the first step
        add(("moe_apply_probs_on_input", "moe_router_topk"), f"=true only works with moe_router_topk=1 (it is {topk})")
    balancing = get("moe_router_load_balancing_type", "none")  # verl's Megatron-Bridge default
    types = balancing if isinstance(balancing, list) else [balancing]
    if bad := [t for t in types if t not in LOAD_BALANCING]:
        add(("moe_router_load_balancing_type",), f"{bad} not in {list(LOAD_BALANCING)}")
    if isinstance(balancing, list):
        coeff = get("moe_aux_loss_coeff", 0.0)
        if not isinstance(coeff, list) or len(coeff) != len(balancing):
            add(("moe_aux_loss_coeff", "moe_router_load_balancing_type"), "must be a list as long as the types list")
    if get("moe_enable_deepep"):
        if dispatcher != "flex":
            add(("moe_enable_deepep", "moe_token_dispatcher_type"), "=true needs moe_token_dispatcher_type=flex")
        if get("moe_flex_dispatcher_backend") == "hybridep":
            add(("moe_enable_deepep", "moe_flex_dispatcher_backend"), "=true conflicts with the hybridep backend")
    backend = "deepep" if get("moe_enable_deepep") else get("moe_flex_dispatcher_backend", "deepep")
    if dispatcher == "flex" and get("moe_pad_expert_input_to_capacity") and backend == "deepep":
        add(("moe_pad_expert_input_to_capacity",), "is not supported by the flex dispatcher with deepep")
    if get("moe_shared_expert_overlap") and dispatcher != "alltoall":
        add(("moe_shared_expert_overlap", "moe_token_dispatcher_type"), "=true needs the alltoall dispatcher")
    capacity = get("moe_expert_capacity_factor")
    # Any capacity factor, even a negative one (which megatron then turns into None), is checked here.
    if capacity is not None and any(t not in CAPACITY_BALANCING for t in types):
        add(("moe_expert_capacity_factor", "moe_router_load_balancing_type"), f"needs one of {CAPACITY_BALANCING}")
    if get("moe_pad_expert_input_to_capacity") and (capacity is None or capacity < 0):
        add(("moe_pad_expert_input_to_capacity", "moe_expert_capacity_factor"), "needs moe_expert_capacity_factor")
    if get("add_bias_linear") and lo.etp != 1:
        add(("add_bias_linear",), f"bias in MoE layers needs etp=1 (parallel.etp={lo.etp})")
    if get("moe_router_enable_expert_bias") and get("moe_router_score_function", "softmax") != "sigmoid":
        add(("moe_router_enable_expert_bias", "moe_router_score_function"), "=true needs score function sigmoid")
    if get("moe_router_padding_for_quantization") or get("moe_router_padding_for_fp8"):
        if get("fp8") is None and get("fp4") is None:
            add(("moe_router_padding_for_quantization",), "needs fp8 or fp4")
        if dispatcher == "allgather":
            add(("moe_router_padding_for_quantization", "moe_token_dispatcher_type"), "not with allgather")
    if (
        topk == 1
        and get("moe_router_score_function", "softmax") == "softmax"
        and not get("moe_router_pre_softmax", False)
        and balancing != "sinkhorn"
    ):
        add(("moe_router_topk", "moe_router_pre_softmax"), "=1 with softmax scoring needs moe_router_pre_softmax=true")
    if group_topk := get("moe_router_group_topk"):
        groups = get("moe_router_num_groups")
        if get("moe_router_topk_limited_devices"):
            add(("moe_router_topk_limited_devices",), "is replaced by moe_router_group_topk; drop it")
        elif not groups:
            add(("moe_router_group_topk", "moe_router_num_groups"), "group routing needs moe_router_num_groups")
        elif arch.num_experts % groups or group_topk > groups:
            add(
                ("moe_router_group_topk", "moe_router_num_groups"),
                f"num_groups={groups} must divide {arch.num_experts} experts and be >= group_topk={group_topk}",
            )
    if get("moe_token_dispatcher_type") == "allgather" and get("variable_seq_lengths", True):
        # verl's Megatron-Bridge path sets variable_seq_lengths=True (transformer_impl.py `_build_tf_config`).
        add(("moe_token_dispatcher_type",), "=allgather does not support variable sequence lengths; use alltoall")
    return found


def _ep_overlap_problems(otc: Mapping[str, Any], lo: Layout, mtp: int | None) -> list[Problem]:
    dispatcher = otc.get("moe_token_dispatcher_type", "alltoall")
    get, found = otc.get, []
    key = f"{OTC}.overlap_moe_expert_parallel_comm"
    if get("overlap_moe_expert_parallel_comm"):
        needs = []
        if lo.pp > 1 and lo.vpp is None:
            needs.append("parallel.vpp when pp > 1")
        if lo.ep <= 1:
            needs.append("parallel.ep > 1")
        if dispatcher not in ("alltoall", "flex"):
            needs.append("moe_token_dispatcher_type alltoall or flex")
        if get("recompute_granularity") == "full" or get("recompute_method") is not None:
            needs.append("no full recompute and recompute_method=null")
        if get("recompute_num_layers") is not None:
            needs.append("recompute_num_layers=null")
        if get("moe_shared_expert_overlap"):
            needs.append("moe_shared_expert_overlap=false")
        if mtp not in (None, 1) or (mtp == 1 and lo.pp == 1):
            needs.append("mtp_num_layers null or 1 (with pp > 1)")
        if needs:
            found.append(error(key, f"=true needs {'; '.join(needs)}"))
    for name in ("delay_wgrad_compute", "ep_overlap_early_attn_memory_release"):
        if get(name) and not get("overlap_moe_expert_parallel_comm"):
            found.append(error((f"{OTC}.{name}", key), "=true needs overlap_moe_expert_parallel_comm=true"))
    return found


def _recompute_problems(otc: Mapping[str, Any], lo: Layout, sequence_parallel: bool) -> list[Problem]:
    get, found = otc.get, []
    granularity, method, layers = get("recompute_granularity"), get("recompute_method"), get("recompute_num_layers")
    g, m, n = (f"{OTC}.recompute_{x}" for x in ("granularity", "method", "num_layers"))
    if granularity is not None:
        if method is not None and method not in ("uniform", "block"):
            found.append(error(m, f"={method!r} must be uniform or block"))
        elif method is None and granularity != "selective":
            found.append(error((m, g), f"recompute_granularity={granularity} needs recompute_method uniform or block"))
        if granularity != "selective" and layers is None:
            found.append(error((n, g), f"recompute_granularity={granularity} needs recompute_num_layers (>= 1)"))
        elif granularity == "selective" and layers is not None:
            found.append(error((n, g), f"={layers} must be null with selective recompute"))
        if get("distribute_saved_activations") and sequence_parallel:
            found.append(error(f"{OTC}.distribute_saved_activations", "=true cannot be used with sequence_parallel"))
    modules = get("recompute_modules") or []
    if granularity == "selective" and modules:
        if bad := sorted(set(modules) - set(RECOMPUTE_MODULES)):
            found.append(error(f"{OTC}.recompute_modules", f"{bad} not in {list(RECOMPUTE_MODULES)}"))
        if "moe_act" in modules and not get("moe_grouped_gemm", False):
            found.append(error(f"{OTC}.recompute_modules", "moe_act needs moe_grouped_gemm=true"))
        if "mla_up_proj" in modules:
            found.append(error(f"{OTC}.recompute_modules", "mla_up_proj needs multi-latent attention (none here)"))
        if "shared_experts" in modules and get("moe_shared_expert_overlap"):
            found.append(error(f"{OTC}.recompute_modules", "shared_experts conflicts with moe_shared_expert_overlap"))
    if get("moe_layer_recompute") and granularity == "full":
        found.append(error(f"{OTC}.moe_layer_recompute", "cannot be combined with full recompute"))
    return found


def _no_rope_problems(otc: Mapping[str, Any], arch: Any) -> list[Problem]:
    freq = otc.get("no_rope_freq")
    if not freq:
        return []
    key = f"{OTC}.no_rope_freq"
    if isinstance(freq, int) and arch.num_layers % freq:
        return [error(key, f"={freq} must divide num_layers={arch.num_layers}")]
    if isinstance(freq, list) and len(freq) != arch.num_layers:
        return [error(key, f"as a list needs one entry per layer ({arch.num_layers})")]
    return []


MTP_ENABLE = "actor_rollout_ref.model.mtp.enable"


def mtp_layers_built(otc: Mapping[str, Any], enabled: bool, model_mtp: int) -> int | None:
    """MTP layers megatron builds: verl forces None unless `model.mtp.enable`
    (verl/utils/megatron_utils.py `check_mtp_config`), else the override or the checkpoint's count."""
    if not enabled:
        return None
    return otc.get("mtp_num_layers", model_mtp)


def mtp_problems(otc: Mapping[str, Any], enabled: bool, model_mtp: int, model_name: str) -> list[Problem]:
    asked = otc.get("mtp_num_layers")
    key = f"{OTC}.mtp_num_layers"
    if enabled and not model_mtp:
        return [error(MTP_ENABLE, f"=true but {model_name} has no MTP layers (verl raises); set it false")]
    if asked and not enabled:
        return [
            error(
                (key, MTP_ENABLE),
                f"={asked} is dropped: verl sets mtp_num_layers=None unless {MTP_ENABLE}=true "
                "(verl/utils/megatron_utils.py check_mtp_config); enable MTP or remove the override",
            )
        ]
    if asked is not None and asked > model_mtp:
        return [error(key, f"={asked} but {model_name} ships {model_mtp} MTP layer(s); use at most {model_mtp}")]
    return []


def _cuda_graph_problems(otc: Mapping[str, Any]) -> list[Problem]:
    """transformer_config.py, cuda graph section (Qwen3.5: every layer MoE, no drop-and-pad by default)."""
    get, found = otc.get, []
    key, impl_key, scope_key = f"{OTC}.enable_cuda_graph", f"{OTC}.cuda_graph_impl", f"{OTC}.cuda_graph_scope"
    impl = get("cuda_graph_impl", "none")
    if get("enable_cuda_graph") or get("external_cuda_graph"):
        if impl != "none":
            return [
                error((key, impl_key), "enable_cuda_graph/external_cuda_graph are the old spelling of cuda_graph_impl")
            ]
        if get("enable_cuda_graph") and get("external_cuda_graph"):
            return [
                error(
                    (key, f"{OTC}.external_cuda_graph"), "enable_cuda_graph and external_cuda_graph exclude each other"
                )
            ]
        impl = "local" if get("enable_cuda_graph") else "transformer_engine"
    scope = get("cuda_graph_scope") or []
    scope = scope.split(",") if isinstance(scope, str) else list(scope)
    if "full" in scope:
        if scope != ["full"]:
            return [error(scope_key, "'full' cannot be combined with other scopes")]
        scope = []
    if bad := [s for s in scope if s not in CUDA_GRAPH_SCOPES]:
        return [error(scope_key, f"{bad} not in {list(CUDA_GRAPH_SCOPES)}")]
    if impl == "none":
        return []
    if get("cpu_offloading"):
        found.append(error((impl_key, f"{OTC}.cpu_offloading"), "CUDA graphs do not work with cpu_offloading"))
    if impl == "local" and ("moe_router" in scope or "moe_preprocess" in scope):
        scope = list(dict.fromkeys([*scope, "moe_router", "moe_preprocess"]))
    if impl == "transformer_engine" and "full_iteration" in scope:
        found.append(error((scope_key, impl_key), "full_iteration needs cuda_graph_impl=local"))
    if "moe" in scope and "moe_router" in scope:
        found.append(error(scope_key, "cannot contain both moe and moe_router"))
    if "moe_preprocess" in scope and "moe_router" not in scope:
        found.append(error(scope_key, "moe_preprocess needs moe_router"))
    if "mlp" in scope:
        found.append(error(scope_key, "mlp graphs are for dense layers; every Qwen3.5 layer is MoE"))
    capacity = get("moe_expert_capacity_factor")
    capacity = None if capacity is not None and capacity < 0 else capacity  # megatron: negative means none
    if capacity is None or not get("moe_pad_expert_input_to_capacity"):
        if "moe" in scope:
            found.append(error(scope_key, "moe graphs need drop-and-pad MoE (capacity factor + pad to capacity)"))
        alltoall = get("moe_token_dispatcher_type", "alltoall") == "alltoall"
        if alltoall and "moe_preprocess" in scope and (capacity is not None or get("moe_router_padding_for_fp8")):
            found.append(
                error(
                    scope_key,
                    "moe_preprocess graphs need drop-and-pad MoE when a capacity factor or fp8 router padding is "
                    "set with the alltoall dispatcher (the preprocess step copies to the host)",
                )
            )
    granularity = get("recompute_granularity")
    if granularity and granularity != "selective" and scope != ["full_iteration"]:
        found.append(
            error(
                (scope_key, f"{OTC}.recompute_granularity"),
                "full recompute works only with cuda_graph_scope=[full_iteration] (and cuda_graph_impl=local)",
            )
        )
    if granularity == "selective":
        found += _graphed_recompute_problems(otc, impl, scope)
    return found


def _graphed_recompute_problems(otc: Mapping[str, Any], impl: str, scope: list[str]) -> list[Problem]:
    """Selective recompute of a module inside a CUDA graph: the graph replays no fresh random numbers.
    Dropouts default to Qwen3.5's 0.0 (config.json attention_dropout; Megatron-Bridge's hidden_dropout)."""
    get, found = otc.get, []
    modules = get("recompute_modules")
    modules = ["core_attn"] if modules is None else modules  # megatron-core's default; [] stays empty
    keys = (f"{OTC}.recompute_modules", f"{OTC}.cuda_graph_scope")
    whole = not scope or "full_iteration" in scope
    if impl == "transformer_engine" and "moe" in modules and "moe_router" in scope:
        found.append(error(keys, "moe recompute does not work with a moe_router graph under transformer_engine"))
    if get("attention_dropout", 0.0) and "core_attn" in modules and (whole or "attn" in scope):
        message = "non-zero does not work with graphed core_attn recompute"
        found.append(error((f"{OTC}.attention_dropout", *keys), message))
    mlp = "mlp" in modules and (whole or "mlp" in scope)
    if get("hidden_dropout", 0.0) and (mlp or ("moe" in modules and (whole or "moe" in scope))):
        found.append(error((f"{OTC}.hidden_dropout", *keys), "non-zero does not work with graphed mlp/moe recompute"))
    if get("moe_input_jitter_eps") is not None and "moe" in modules and (whole or "moe" in scope):
        found.append(error((f"{OTC}.moe_input_jitter_eps", *keys), "does not work with graphed moe recompute"))
    return found


def _offload_and_activation_problems(otc: Mapping[str, Any]) -> list[Problem]:
    get, found = otc.get, []
    if get("fine_grained_activation_offloading"):
        modules = get("offload_modules") or []
        key = f"{OTC}.offload_modules"
        if not modules:
            found.append(error(key, "fine_grained_activation_offloading needs offload_modules"))
        elif bad := sorted(set(modules) - set(OFFLOAD_MODULES)):
            found.append(error(key, f"{bad} not in {list(OFFLOAD_MODULES)}"))
        elif "attn_proj" in modules and "core_attn" not in modules:
            found.append(error(key, "attn_proj needs core_attn offloaded too"))
    if get("bias_activation_fusion"):
        if get("use_te_activation_func"):
            found.append(
                error((f"{OTC}.bias_activation_fusion", f"{OTC}.use_te_activation_func"), "exclude each other")
            )
        if get("glu_linear_offset", 0.0) != 0.0:
            found.append(error(f"{OTC}.glu_linear_offset", "non-zero needs quick_gelu; Qwen3.5 uses SwiGLU"))
    if (
        get("inference_fuse_tp_communication")
        and get("transformer_impl", "transformer_engine") != "inference_optimized"
    ):
        found.append(error(f"{OTC}.inference_fuse_tp_communication", "needs transformer_impl=inference_optimized"))
    return found
