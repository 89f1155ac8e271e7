"""Memory per device (training and rollout) and host memory per node, by arithmetic alone.

No torch, no verl: the numbers come from the model facts (`model.*`), the layout
(`checks.layout.Layout`) and a few resolved verl keys (`Settings`). Two entry points:

- `estimate(cfg)`: the whole estimate of one resolved config (preflight, plan, CLI).
- `estimate_layout(model, layout, settings)`: the same for plain values, so a layout planner
  can rank thousands of layouts in-process (`ModelFacts.of` and `Settings.of` are read once;
  each call is a few microseconds of arithmetic).

Formulas and their sources are written beside the code. Everything is bytes until `GIB`.
What is NOT modelled (and why the device capacities keep a reserve, `hardware.reserved_gib`):
allocator fragmentation, NCCL buffers (the GPU reserve covers them; HCCL's are counted), MoE all-to-all
staging buffers beyond the permuted token copies, the router's scores, CUDA-graph pools, the vision tower's
activations (images are small next to the text), Python/Ray/data-loader host memory, vLLM prefix caching's
larger blocks.
"""

import math
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from functools import wraps
from typing import Any, ParamSpec

from omegaconf import DictConfig

from verl_qwen35.config.schema import Model
from verl_qwen35.model.layout import Layout, device_of

GIB = 2**30
BF16 = 2
FP32 = 4

# Defaults of keys the reference does not give for every model.
VLLM_MAX_NUM_SEQS = 256  # verl rollout.max_num_seqs default (trainer/config/rollout/rollout.yaml)
VLLM_MAX_BATCHED_TOKENS = 8192  # verl rollout.max_num_batched_tokens default
# Bytes per logit (token x vocabulary shard) at the peak of each pass through verl's own logits path:
# megatron-core's Float16Module.forward upcasts the last stage's bf16 output to fp32
# (megatron/core/transformer/module.py), then verl's MegatronEngineWithLMHead._lm_head_logits_processor
# (verl/workers/engine/megatron/transformer_impl.py; the same code inline in verl 0.8.0) divides by the
# temperature in place, clones the logits when it computes entropy (vocab_parallel_entropy,
# verl/utils/megatron/tensor_parallel.py, makes a normalized copy) and takes the log-probs with megatron-core's
# vocab_parallel_cross_entropy (which keeps its fp32 exp-logits for backward). Measured on CPU with the torch
# profiler's memory events by scripts/measure_logit_bytes.py (tests/integration/test_logit_bytes.py holds them to it).
# The update (verl's _update_actor: calculate_entropy only with entropy_coeff != 0 or actor.calculate_entropy):
# the fp32 logits kept for backward + their fp32 gradient from the temperature division.
UPDATE_LOGIT_BYTES = FP32 + FP32
# The same with entropy in the loss: + the clone and entropy's saved softmax.
UPDATE_ENTROPY_LOGIT_BYTES = 3 * FP32
# The old-policy pass (_compute_old_log_prob: calculate_entropy=True, no grad): fp32 logits + clone + entropy's
# normalized copy.
OLD_LOG_PROB_LOGIT_BYTES = 3 * FP32
# The reference pass (_compute_ref_log_prob: calculate_entropy=False, no grad): the bf16 output beside its upcast.
REF_LOG_PROB_LOGIT_BYTES = BF16 + FP32
# HCCL: each communicator holds 2 x HCCL_BUFFSIZE MB (send and receive) for its lifetime, 200 MB by default
# (CANN HCCL user guide, "HCCL_BUFFSIZE"); a rank of the colocated actor/ref + vLLM worker uses 7-8 of them
# (Megatron's TP, PP, DP, CP, EP and expert-DP groups that communicate, vLLM's TP/EP group and the world group).
HCCL_COMMUNICATORS_PER_RANK = 8
HCCL_DEFAULT_BUFFSIZE_MB = 200
# vLLM: attention blocks are multiples of 16 tokens (HybridAttentionMambaModelConfig, kernel alignment).
VLLM_BLOCK_ALIGNMENT = 16
VISION_IN_CHANNELS = 3  # RGB (Qwen3_5MoeVisionConfig.in_channels)

P = ParamSpec("P")


class InputError(ValueError):
    """A value the estimate reads is missing, null, of the wrong type or out of range.

    Every read of `Settings.of` and `ModelFacts.of` goes through `_number`/`_flag`, so this is the
    one place that decides what the estimate accepts; the message names the key, the value and
    what would be right (the preflight, the estimate CLI and the planner all print it as is).
    """

    def __init__(self, key: str, message: str) -> None:
        super().__init__(message)
        self.key = key


def or_unusable(head: str) -> Callable[[Callable[P, list[str]]], Callable[P, list[str]]]:
    """A plan section's lines, or the one line `head: <why>` when a value it reads is unusable: the plan prints
    what it can and names the key (`InputError`) instead of refusing the whole plan."""

    def wrap(lines: Callable[P, list[str]]) -> Callable[P, list[str]]:
        @wraps(lines)
        def section(*args: P.args, **kwargs: P.kwargs) -> list[str]:
            try:
                return lines(*args, **kwargs)
            except InputError as err:
                return [f"{head}: {err}"]

        return section

    return wrap


_MISSING = object()


def _number(
    node: Any,
    name: str,
    where: str,
    *,
    whole: bool = True,
    low: float = 1,
    high: float | None = None,
    above: bool = False,
    optional: bool = False,
    default: Any = _MISSING,
    hint: str = "",
) -> Any:
    """`node[name]` as an int (whole) or a finite float in [low, high] (or (low, high] when above)."""
    key = f"{where}.{name}"
    value = node.get(name, _MISSING) if node is not None else _MISSING
    if value is _MISSING or value is None:
        if default is not _MISSING:
            return default
        if optional:
            return None
        what = "is missing" if value is _MISSING else "is null"
        raise InputError(key, f"{key} {what}: the memory estimate needs {_expected(whole, low, high, above)}{hint}")
    ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    if ok and whole and isinstance(value, float):
        ok = value.is_integer()
    if ok:
        ok = (value > low if above else value >= low) and (high is None or value <= high)
    if not ok:
        raise InputError(key, f"{key}={value!r}: must be {_expected(whole, low, high, above)}{hint}")
    return int(value) if whole else float(value)


def _expected(whole: bool, low: float, high: float | None, above: bool) -> str:
    kind = "an integer" if whole else "a number"
    bound = f"{'>' if above else '>='} {low:g}" + (f" and <= {high:g}" if high is not None else "")
    return f"{kind} {bound}"


def _flag(node: Any, name: str, where: str, default: bool = False) -> bool:
    """`node[name]` as a bool: true/false (null or absent: the default); a string like "maybe" is refused."""
    value = node.get(name) if node is not None else None
    if value is None:
        return default
    if not isinstance(value, bool):
        raise InputError(f"{where}.{name}", f"{where}.{name}={value!r}: must be true or false")
    return value


@dataclass(frozen=True, slots=True)
class ModelFacts:
    """Parameter counts of one Qwen3.5 MoE text model, by layer kind (HF weight names in comments).

    Read once from `model.*` (the HF `text_config` facts, see the reference README).
    """

    num_layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    experts: int
    topk: int
    vocab: int
    attention_layers: int
    gdn_layers: int
    # Per layer kind, before any parallel split.
    attn_split: int  # q_proj (query + output gate: 2*heads*hd*h) + o_proj (heads*hd*h): split by TP
    attn_kv_per_head: int  # k_proj + v_proj per KV head (2*hd*h): split by TP while kv_heads >= TP, else replicated
    attn_replicated: int  # q_norm, k_norm (hd each), input/post-attention layernorm (h each)
    gdn_split: int  # in_proj_qkv, in_proj_z, in_proj_b, in_proj_a, conv1d, dt_bias, A_log, out_proj: by TP
    gdn_replicated: int  # the gated RMSNorm (dv) and the two layernorms (h each)
    expert: int  # one routed expert: gate, up, down projections (3*h*moe_ffn)
    shared: int  # the shared expert (3*h*shared_ffn): split by TP
    router: int  # mlp.gate (E*h) + shared_expert_gate (h): replicated
    embedding: int  # embed_tokens (V*h): vocab-parallel over TP, first pipeline stage
    output: int  # lm_head (V*h), last pipeline stage; 0 when tied and PP == 1
    mtp_extra: int  # per MTP layer beyond its decoder layer: eh_proj (2h*h), enorm, hnorm, final norm
    # GDN geometry for the vLLM state shapes.
    gdn_conv_dim: int  # 2*Hk*dk + Hv*dv
    gdn_value_heads: int
    gdn_key_dim: int
    gdn_value_dim: int
    conv_kernel: int
    attention_prefix: tuple[int, ...] = field(repr=False)  # full-attention layers among the first i layers
    # The vision tower (transformers Qwen3_5MoeVisionModel; tests/unit/test_vision_params.py counts the real one).
    vision_split: int = 0  # the blocks' qkv, proj, fc1, fc2 and the merger's fc1, fc2 weights: split by TP
    vision_replicated: int = 0  # patch and position embeddings, norms, biases

    @classmethod
    def of(cls, m: "Mapping[str, Any] | ModelFacts") -> "ModelFacts":
        if isinstance(m, ModelFacts):
            return m
        hint = " (the HF text_config fact; a model of your own needs it in model/<name>.yaml)"

        def fact(name: str, low: int = 1, **kw: Any) -> int:
            return _number(m, name, "model", low=low, hint=hint, **kw)

        h, L, hd = fact("hidden_size"), fact("num_layers"), fact("head_dim")
        heads, kv = fact("num_attention_heads"), fact("num_key_value_heads")
        hk, hv = fact("linear_num_key_heads"), fact("linear_num_value_heads")
        dk, dv = fact("linear_key_head_dim"), fact("linear_value_head_dim")
        kernel = fact("linear_conv_kernel_dim", default=Model.linear_conv_kernel_dim)
        interval = fact("full_attention_interval")
        experts = fact("num_experts")
        topk = fact("num_experts_per_tok", high=experts)
        vocab, moe_ffn = fact("vocab_size"), fact("moe_intermediate_size")
        shared_ffn = fact("shared_expert_intermediate_size", low=0)
        # Layer i is full attention when (i + 1) % interval == 0 (HF `layer_types`).
        prefix = [0]
        for i in range(L):
            prefix.append(prefix[-1] + ((i + 1) % interval == 0))
        conv_dim = 2 * hk * dk + hv * dv
        gdn_split = h * conv_dim + h * hv * dv + 2 * h * hv + conv_dim * kernel + 2 * hv + hv * dv * h
        tied = _flag(m, "tie_word_embeddings", "model")
        vision_split, vision_replicated = _vision_params(m, h, hint)
        return cls(
            num_layers=L,
            hidden=h,
            heads=heads,
            kv_heads=kv,
            head_dim=hd,
            experts=experts,
            topk=topk,
            vocab=vocab,
            attention_layers=prefix[-1],
            gdn_layers=L - prefix[-1],
            attn_split=2 * heads * hd * h + heads * hd * h,
            attn_kv_per_head=2 * hd * h,
            attn_replicated=2 * hd + 2 * h,
            gdn_split=gdn_split,
            gdn_replicated=dv + 2 * h,
            expert=3 * h * moe_ffn,
            shared=3 * h * shared_ffn,
            router=experts * h + h,
            embedding=vocab * h,
            output=0 if tied else vocab * h,
            mtp_extra=2 * h * h + 3 * h,
            gdn_conv_dim=conv_dim,
            gdn_value_heads=hv,
            gdn_key_dim=dk,
            gdn_value_dim=dv,
            conv_kernel=kernel,
            attention_prefix=tuple(prefix),
            vision_split=vision_split,
            vision_replicated=vision_replicated,
        )

    @property
    def vision_params(self) -> int:
        return self.vision_split + self.vision_replicated

    @property
    def attention_layer(self) -> int:
        return self.attn_split + self.attn_kv_per_head * self.kv_heads + self.attn_replicated

    @property
    def gdn_layer(self) -> int:
        return self.gdn_split + self.gdn_replicated

    @property
    def moe_layer(self) -> int:
        return self.experts * self.expert + self.shared + self.router

    @property
    def moe_active(self) -> int:
        return self.topk * self.expert + self.shared + self.router

    @property
    def params_total(self) -> int:
        """Text model without MTP (what the published totals count); final norm included."""
        body = self.attention_layers * self.attention_layer + self.gdn_layers * self.gdn_layer
        return body + self.num_layers * self.moe_layer + self.embedding + self.output + self.hidden

    @property
    def params_active(self) -> int:
        """Per token: every dense weight plus top-k routed experts and the shared expert per layer."""
        body = self.attention_layers * self.attention_layer + self.gdn_layers * self.gdn_layer
        return body + self.num_layers * self.moe_active + self.embedding + self.output + self.hidden

    @property
    def ffn_active_width(self) -> int:
        """Intermediate width a token passes through in one MoE layer (top-k experts + shared)."""
        return (self.topk * self.expert + self.shared) // (3 * self.hidden)


def _vision_params(m: "Mapping[str, Any]", out: int, hint: str) -> tuple[int, int]:
    """(TP-split, replicated) parameters of the Qwen3.5 vision tower (transformers modeling_qwen3_5_moe.py
    Qwen3_5MoeVisionModel): Conv3d patch embedding with bias, learned position embedding, `depth` blocks of two
    LayerNorms, a biased qkv and proj, a biased fc1/fc2 MLP, and the patch merger (LayerNorm, fc1 over the
    merge^2 patches, fc2 to the text hidden size). The linear weights are split by TP in training as mbridge
    builds a vision model beside the language model on the first stage (mbridge/models/qwen2_5_vl/model.py) and
    in vLLM (qwen3_vl.py Qwen3_VisionBlock: QKVParallelLinear, RowParallelLinear, MLP)."""

    def fact(name: str, low: int = 1) -> int:
        return _number(m, name, "model", low=low, hint=hint, default=getattr(Model, name))

    depth = fact("vision_depth", low=0)
    if depth == 0:
        return 0, 0
    c, f = fact("vision_hidden_size"), fact("vision_intermediate_size")
    p, t, merge = fact("vision_patch_size"), fact("vision_temporal_patch_size"), fact("vision_spatial_merge_size")
    merged = c * merge * merge
    split = depth * (4 * c * c + 2 * c * f) + merged * merged + merged * out
    patch = VISION_IN_CHANNELS * t * p * p * c + c
    block_rest = 4 * c + 3 * c + c + f + c  # two LayerNorms (weight, bias), qkv, proj, fc1, fc2 biases
    merger_rest = 2 * c + merged + out  # its LayerNorm, fc1 and fc2 biases
    replicated = patch + fact("vision_num_position_embeddings") * c + depth * block_rest + merger_rest
    return split, replicated


@dataclass(frozen=True, slots=True)
class Settings:
    """The resolved verl keys and capacities the estimate reads, taken once from a config.

    A planner builds it once (`Settings.of(cfg)`) and varies only the `Layout`.
    """

    device_memory_gib: float
    host_memory_gib: float
    reserved_gib: float  # per device: CUDA/CANN context, NCCL/HCCL buffers, fragmentation
    prompt_length: int
    response_length: int
    max_model_len: int | None
    micro_batch: int  # ppo_micro_batch_size_per_gpu (sequences)
    max_token_len: int | None  # ppo_max_token_len_per_gpu when use_dynamic_bsz, else None
    mini_batch_sequences: int  # ppo_mini_batch_size * rollout.n
    step_sequences: int  # train_batch_size * rollout.n: what the rollout generates per step
    param_offload: bool
    grad_offload: bool  # verl 0.8's megatron.grad_offload; on 0.9 param_offload also frees gradients
    optimizer_offload: bool  # verl's: optimizer states to host between steps
    optimizer_cpu_offload: bool  # Megatron's hybrid CPU optimizer (override_optimizer_config)
    optimizer_offload_fraction: float
    grad_bytes: int  # main gradients: fp32 unless a lower main_grads_dtype is configured
    optimizer_bytes: int  # fp32 master + Adam exp_avg + exp_avg_sq per parameter
    recompute_granularity: str | None
    recompute_method: str | None
    recompute_num_layers: int | None
    sequence_parallel: bool
    uses_reference: bool
    mtp_layers: int  # MTP layers Megatron builds and trains (override_transformer_config.mtp_num_layers)
    first_last: tuple[int | None, int | None] = (None, None)
    gpu_memory_utilization: float = 0.5
    max_num_seqs: int = VLLM_MAX_NUM_SEQS
    max_num_batched_tokens: int = VLLM_MAX_BATCHED_TOKENS
    vllm_sleep_level: int = 2
    log_prob_micro_batch: int = 1  # the old-policy pass: rollout.log_prob_micro_batch_size_per_gpu
    log_prob_max_token_len: int | None = None  # rollout.log_prob_max_token_len_per_gpu with log_prob_use_dynamic_bsz
    ref_log_prob_micro_batch: int | None = None  # the reference pass (None without a reference model)
    ref_log_prob_max_token_len: int | None = None  # ref.log_prob_max_token_len_per_gpu with its dynamic batches
    update_entropy: bool = False  # the loss takes entropy: entropy_coeff != 0 or actor.calculate_entropy
    hccl_buffer_gib: float = 0.0  # per device on Ascend: HCCL's communicator buffers (from env HCCL_BUFFSIZE)
    response_cap: int | None = None  # the longest response where response_length is an expected mean
    response_longest: int | None = None  # the longest response a run logged (verl's response_length/max)

    @property
    def sequence_length(self) -> int:
        """Without packing (use_remove_padding=false) verl pads every sequence to prompt + response."""
        return self.prompt_length + self.response_length

    @property
    def rollout_length(self) -> int:
        return min(self.sequence_length, self.max_model_len or self.sequence_length)

    @property
    def startup_length(self) -> int:
        """The max_model_len vLLM starts with: the rollout's, else prompt + response (verl's vLLM server)."""
        return self.max_model_len or self.sequence_length

    @classmethod
    def of(cls, cfg: DictConfig) -> "Settings":
        """Read (and check, see `InputError`) every key the estimate uses, once."""
        arr = cfg.actor_rollout_ref
        actor, rollout, mg = arr.actor, arr.rollout, arr.actor.megatron
        A, R, M = "actor_rollout_ref.actor", "actor_rollout_ref.rollout", "actor_rollout_ref.actor.megatron"
        OTC, OOC = f"{M}.override_transformer_config", f"{A}.optim.override_optimizer_config"
        otc = mg.get("override_transformer_config") or {}
        optim = actor.optim
        ooc = optim.get("override_optimizer_config") or {}
        hw = cfg.get("hardware")
        vllm_kwargs = (rollout.get("engine_kwargs") or {}).get("vllm") or {}
        max_model_len = _number(rollout, "max_model_len", R, optional=True)
        if max_model_len is None:
            max_model_len = _number(vllm_kwargs, "max_model_len", f"{R}.engine_kwargs.vllm", optional=True)
        precision_aware = _flag(ooc, "use_precision_aware_optimizer", OOC) or _flag(
            optim, "use_precision_aware_optimizer", f"{A}.optim"
        )
        dtype_bytes = {"fp32": FP32, "float32": FP32, "bf16": BF16, "bfloat16": BF16, "fp16": BF16, "float16": BF16}

        def optimizer_dtype(key: str) -> int:
            return dtype_bytes.get(str(optim.get(key, "fp32")), FP32) if precision_aware else FP32

        # Capacities: positive sizes, and the reserve must leave something of the device.
        device_memory = _number(hw, "device_memory_gib", "hardware", whole=False, low=0, above=True)
        reserved = _number(
            hw, "reserved_gib", "hardware", whole=False, low=0, high=device_memory,
            hint=f" (a part of hardware.device_memory_gib={device_memory:g})",
        )  # fmt: skip
        uses_ref = _flag(actor, "use_kl_loss", A) or _flag(cfg.algorithm, "use_kl_in_reward", "algorithm")
        REF = "actor_rollout_ref.ref"

        # The old-policy log-probs run with the rollout's log-prob micro-batch, the ref's with its own.
        def log_prob_side(node: Any, where: str) -> tuple[int, int | None]:
            micro = _number(node, "log_prob_micro_batch_size_per_gpu", where, default=1)
            dynamic = _flag(node, "log_prob_use_dynamic_bsz", where)
            return micro, _number(node, "log_prob_max_token_len_per_gpu", where) if dynamic else None

        old_micro, old_tokens = log_prob_side(rollout, R)
        ref_micro, ref_tokens = log_prob_side(arr.ref, REF) if uses_ref else (None, None)
        entropy_coeff = _number(actor, "entropy_coeff", A, whole=False, low=-math.inf, default=0.0)
        param_offload = _flag(mg, "param_offload", M)
        dynamic_bsz = _flag(actor, "use_dynamic_bsz", A)
        rollout_n = _number(rollout, "n", R)
        return cls(
            device_memory_gib=device_memory,
            host_memory_gib=_number(hw, "host_memory_gib", "hardware", whole=False, low=0, above=True),
            reserved_gib=reserved,
            prompt_length=_number(cfg.data, "max_prompt_length", "data"),
            response_length=_number(cfg.data, "max_response_length", "data"),
            max_model_len=max_model_len,
            micro_batch=_number(actor, "ppo_micro_batch_size_per_gpu", A, default=1),
            max_token_len=_number(actor, "ppo_max_token_len_per_gpu", A) if dynamic_bsz else None,
            mini_batch_sequences=_number(actor, "ppo_mini_batch_size", A) * rollout_n,
            step_sequences=_number(cfg.data, "train_batch_size", "data") * rollout_n,
            param_offload=param_offload,
            grad_offload=_flag(mg, "grad_offload", M, default=param_offload),
            optimizer_offload=_flag(mg, "optimizer_offload", M),
            optimizer_cpu_offload=_flag(ooc, "optimizer_cpu_offload", OOC),
            optimizer_offload_fraction=_number(
                ooc, "optimizer_offload_fraction", OOC, whole=False, low=0, high=1, default=1.0
            ),
            grad_bytes=optimizer_dtype("main_grads_dtype"),
            optimizer_bytes=FP32 + optimizer_dtype("exp_avg_dtype") + optimizer_dtype("exp_avg_sq_dtype"),
            recompute_granularity=otc.get("recompute_granularity"),
            recompute_method=otc.get("recompute_method"),
            recompute_num_layers=_number(otc, "recompute_num_layers", OTC, optional=True),
            sequence_parallel=_flag(mg, "sequence_parallel", M, default=True),
            uses_reference=uses_ref,
            mtp_layers=_number(otc, "mtp_num_layers", OTC, low=0, default=0),
            first_last=(
                _number(otc, "num_layers_in_first_pipeline_stage", OTC, low=0, optional=True),
                _number(otc, "num_layers_in_last_pipeline_stage", OTC, low=0, optional=True),
            ),
            gpu_memory_utilization=_number(
                rollout, "gpu_memory_utilization", R, whole=False, low=0, high=1, above=True
            ),
            max_num_seqs=_number(rollout, "max_num_seqs", R, default=VLLM_MAX_NUM_SEQS),
            max_num_batched_tokens=_number(rollout, "max_num_batched_tokens", R, default=VLLM_MAX_BATCHED_TOKENS),
            # verl/third_party/vllm/__init__.py: VLLM_SLEEP_LEVEL is 1 on Ascend (weights kept in host
            # memory), 2 on GPU with vLLM >= 0.18 (weights dropped, re-synced from the actor).
            vllm_sleep_level=1 if device_of(cfg) == "npu" or _flag(rollout, "layered_summon", R) else 2,
            log_prob_micro_batch=old_micro,
            log_prob_max_token_len=old_tokens,
            ref_log_prob_micro_batch=ref_micro,
            ref_log_prob_max_token_len=ref_tokens,
            # verl/trainer/ppo/ray_trainer.py _update_actor.
            update_entropy=entropy_coeff != 0 or _flag(actor, "calculate_entropy", A),
            hccl_buffer_gib=_hccl_buffer_gib(cfg),
        )


def _hccl_buffer_gib(cfg: DictConfig) -> float:
    """Per device on Ascend: communicators x 2 x HCCL_BUFFSIZE MB (the CANN HCCL user guide, "HCCL_BUFFSIZE":
    each communicator holds a send and a receive buffer of that size); 0 on GPU (NCCL's are in the reserve)."""
    if cfg.trainer.get("device") != "npu":
        return 0.0
    env = (cfg.get("env") or {}).get("set") or {}
    raw = env.get("HCCL_BUFFSIZE", HCCL_DEFAULT_BUFFSIZE_MB)
    try:
        size = float(raw)
    except (TypeError, ValueError):
        raise InputError("env.set.HCCL_BUFFSIZE", f"env.set.HCCL_BUFFSIZE={raw!r}: must be a number of MB") from None
    if not math.isfinite(size) or size < 1:
        raise InputError("env.set.HCCL_BUFFSIZE", f"env.set.HCCL_BUFFSIZE={raw!r}: must be a number of MB >= 1")
    return HCCL_COMMUNICATORS_PER_RANK * 2 * size / 1024


@dataclass(frozen=True, slots=True)
class MemoryEstimate:
    """One layout's estimate. All memory in GiB per device unless named per node."""

    params_total: int
    params_active: int
    params_per_rank: int  # training, the fullest pipeline stage
    params_active_per_rank: int
    rollout_params_per_rank: int
    device_memory_gib: float
    train_gib: float
    train_stage: int  # pipeline stage with the highest training estimate
    train_breakdown: dict[str, float]
    rollout_gib: float
    rollout_breakdown: dict[str, float]
    rollout_budget_gib: float  # gpu_memory_utilization * device memory
    sequences_fit: int  # full-length sequences one vLLM engine's KV/state cache holds
    sequences_wanted: int  # sequences one vLLM engine would run at once (its share of a step, <= max_num_seqs)
    host_per_node_gib: float
    host_memory_gib: float
    host_breakdown: dict[str, float]
    fits: bool
    vision_params: int  # the vision tower (not in params_total, as the published totals count the text model)
    update_gib: float  # the training update's peak (with the reserve and HCCL buffers)
    log_prob_gib: float  # the forward-only log-prob passes' peak (likewise)
    log_prob_breakdown: dict[str, float]
    startup_fits: bool  # vLLM's start-up check: one whole max_model_len sequence fits the cache
    startup_length: int  # the max_model_len vLLM starts with

    @property
    def peak_gib(self) -> float:
        return max(self.train_gib, self.rollout_gib)

    def as_dict(self) -> dict[str, Any]:
        """Rounded to 0.01 GiB for people and JSON; the attributes keep full precision."""
        return rounded(asdict(self) | {"peak_gib": self.peak_gib})


def _kv_heads_per_rank(kv_heads: int, tp: int) -> int:
    """KV heads split while there are enough, else one replicated head per rank
    (megatron-core `get_num_query_groups`; vLLM `get_num_kv_heads`: max(1, kv // tp))."""
    return max(1, kv_heads // tp)


def rank_tokens(budget: int | None, micro_batch: int, sequence_length: int, cp: int) -> float:
    """Tokens of one micro-batch on one rank. A dynamic batch's budget is per rank: verl's megatron engine hands
    `max_token_len_per_gpu * context_parallel_size` tokens to the CP group (verl/workers/engine/utils.py
    `prepare_micro_batches`, sp_size set in engine/megatron/transformer_impl.py), each of its CP ranks a 1/CP slice.
    Fixed micro-batches are whole sequences split over the CP ranks."""
    return float(budget) if budget else micro_batch * sequence_length / cp


def _stage_layers(L: int, pp: int, first_last: tuple[int | None, int | None]) -> list[tuple[int, int]]:
    """(start, end) layer index per pipeline stage (megatron-core transformer_block.get_num_layers_to_build)."""
    first, last = first_last
    if pp == 1:
        return [(0, L)]
    counts: list[int]
    if first is None and last is None:
        counts = [L // pp] * pp
        counts[-1] += L - sum(counts)  # uneven counts are refused by the layout check anyway
    else:
        middle_stages = pp - (first is not None) - (last is not None)
        rest = L - (first or 0) - (last or 0)
        per = rest // middle_stages if middle_stages else 0
        counts = ([first] if first is not None else []) + [per] * middle_stages + ([last] if last is not None else [])
    bounds, start = [], 0
    for c in counts:
        bounds.append((start, start + c))
        start += c
    return bounds


def _layer_activation_bytes(tokens: float, m: ModelFacts, tp: int, sp: bool) -> float:
    """Activations one transformer layer keeps for backward, without recompute, with flash attention.

    Korthikanti et al. 2022 ("Reducing Activation Recomputation in Large Transformer Models",
    eq. 2 and table 2): s*b*h*(10 + 24/t) bytes per layer with TP (34/t with sequence parallel,
    where the 10 s*b*h of layernorm inputs and dropout masks are split too); the 5*a*s/h term of
    attention scores is absent with flash attention. Megatron-LM's theoretical_memory_usage.py
    writes the MLP part for any FFN width: s*b*h*(18 + 4*ffn/h) with SP. For MoE the FFN width a
    token passes through is top-k experts + the shared expert; a Gated DeltaNet layer is counted
    like an attention layer (its q/k/v/z projections and gated norm are of the same order).

    MoE: the formula counts an MLP's input once, but each token reaches its top-k experts as k copies. The
    token dispatcher permutes them (megatron/core/transformer/moe/token_dispatcher.py
    MoEAlltoAllTokenDispatcher.token_dispatch: tokens x topk rows after the all-to-all), the grouped experts keep
    that input for their fc1 backward (experts.py TEGroupedMLP), and the combine keeps the experts' output to
    weight it by the routing probabilities (moe_utils.py unpermute): 2 x topk x h bf16 per token, split like the
    rest under sequence parallelism (each TP rank dispatches its own sequence shard).
    """
    coefficient = 18 + 4 * m.ffn_active_width / m.hidden + 2 * m.topk * BF16
    replicated = 0 if sp else 10
    return tokens * m.hidden * ((coefficient - replicated) / tp + replicated)


def _activation_bytes(
    m: ModelFacts, lo: Layout, s: Settings, layers: int, stage: int, num_micro: int, tokens: float, sp: bool
) -> float:
    """Activations of one pipeline stage at its peak: in-flight micro-batches under 1F1B, recompute."""
    full = _layer_activation_bytes(tokens, m, lo.tp, sp)
    layer_input = BF16 * tokens * m.hidden / (lo.tp if sp else 1)
    # 1F1B: stage i holds min(pp - i, micro-batches) forward passes before its first backward.
    in_flight = min(lo.pp - stage, num_micro)
    if lo.vpp and lo.pp > 1 and stage == 0:
        # Interleaved schedule: Megatron-LM theoretical_memory_usage.py, x (1 + (p-1)/(p*v)).
        in_flight *= 1 + (lo.pp - 1) / (lo.pp * lo.vpp)
    if s.recompute_granularity == "full":
        n = max(1, s.recompute_num_layers or 1)
        if s.recompute_method == "block":
            # The first n layers of the stage keep only their input; the others keep everything.
            kept = min(n, layers) * layer_input + max(0, layers - n) * full
            return kept * in_flight + full
        # uniform: each chunk of n layers keeps its input; backward recomputes one chunk at a time.
        return math.ceil(layers / n) * layer_input * in_flight + min(n, layers) * full
    # selective (core_attn) or none: with flash attention both keep the whole layer's activations.
    return layers * full * in_flight


def _train_stage_params(m: ModelFacts, lo: Layout, start: int, end: int, last: bool, mtp: int) -> tuple[int, int]:
    """(dense, expert) parameters one training rank of this stage holds (megatron-core sharding)."""
    attn = m.attention_prefix[end] - m.attention_prefix[start]
    gdn = (end - start) - attn
    layers = end - start
    kv = _kv_heads_per_rank(m.kv_heads, lo.tp)
    attention = m.attn_split // lo.tp + m.attn_kv_per_head * kv + m.attn_replicated
    dense = attn * attention + gdn * (m.gdn_split // lo.tp + m.gdn_replicated)
    dense += layers * (m.shared // lo.tp + m.router)
    expert_layer = (m.experts // lo.ep) * (m.expert // lo.etp)
    expert = layers * expert_layer
    if start == 0:
        dense += m.embedding // lo.tp + m.vision_split // lo.tp + m.vision_replicated
    if last:
        dense += (m.output or (m.embedding if lo.pp > 1 else 0)) // lo.tp + m.hidden
        # MTP layers (a full-attention decoder layer each, plus eh_proj and norms) sit on the last stage.
        dense += mtp * (attention + m.shared // lo.tp + m.router + m.mtp_extra)
        expert += mtp * expert_layer
    return dense, expert


def _rollout_params(m: ModelFacts, lo: Layout) -> int:
    """Parameters one vLLM rank holds: dense weights split by gen_tp (KV heads replicated beyond their
    count), routed experts split over the rollout EP group when EP > 1, else by TP inside each expert
    (vLLM FusedMoE); embedding and lm_head vocab-parallel."""
    gt = lo.gen_tp
    kv = _kv_heads_per_rank(m.kv_heads, gt)
    attention = m.attn_split // gt + m.attn_kv_per_head * kv + m.attn_replicated
    dense = m.attention_layers * attention + m.gdn_layers * (m.gdn_split // gt + m.gdn_replicated)
    dense += m.num_layers * (m.shared // gt + m.router) + (m.embedding + m.output) // gt + m.hidden
    dense += m.vision_split // gt + m.vision_replicated
    expert_split = lo.gen_ep if lo.gen_ep > 1 else gt
    return dense + m.num_layers * m.experts * m.expert // expert_split


def _gib(b: float) -> float:
    return b / GIB


def rounded(value: Any) -> Any:
    """Every float in `value` (nested dicts, lists and tuples, which become lists) to 0.01, for people and JSON."""
    if isinstance(value, float):
        return round(value, 2)
    if isinstance(value, dict):
        return {k: rounded(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [rounded(v) for v in value]
    return value


def estimate_layout(model: "ModelFacts | Mapping[str, Any]", layout: Layout, settings: Settings) -> MemoryEstimate:
    """The memory estimate of one layout.

    `model`: `ModelFacts` (build once with `ModelFacts.of(cfg.model)`) or the `model.*` mapping;
    `layout`: `verl_qwen35.checks.layout.Layout` (must already pass the layout rules: DP and
    expert-DP are integers); `settings`: `Settings.of(cfg)`, read once per config.
    """
    m, lo, s = ModelFacts.of(model), layout, settings
    cap = s.device_memory_gib * GIB
    reserved = s.reserved_gib * GIB
    sp = s.sequence_parallel and lo.tp > 1  # verl turns SP off at TP 1
    # Distributed optimizer (Megatron-LM theoretical_memory_usage.py, "6 + 12/DP" bytes per
    # parameter): bf16 weights and fp32 main grads on every rank; fp32 master weights and Adam
    # m, v sharded over the data-parallel group incl. CP for dense parameters (megatron-core
    # distributed_data_parallel.py, with_context_parallel=True) and over expert-DP =
    # world / (ETP*EP*PP) for routed experts.
    dense_shard = max(1, lo.world // (lo.tp * lo.pp))
    expert_shard = max(1, lo.world // (lo.etp * lo.ep * lo.pp))
    dp = max(1, lo.world // (lo.tp * lo.pp * lo.cp))
    # Tokens of one micro-batch on one rank (`rank_tokens`); the log-prob passes': the old policy's with the rollout's
    # keys, the ref's with its own (0 without a reference model).
    tokens = rank_tokens(s.max_token_len, s.micro_batch, s.sequence_length, lo.cp)
    old_tokens = rank_tokens(s.log_prob_max_token_len, s.log_prob_micro_batch, s.sequence_length, lo.cp)
    ref_tokens = 0.0
    if s.ref_log_prob_micro_batch is not None:
        ref_tokens = rank_tokens(s.ref_log_prob_max_token_len, s.ref_log_prob_micro_batch, s.sequence_length, lo.cp)
    update_logit_bytes = UPDATE_ENTROPY_LOGIT_BYTES if s.update_entropy else UPDATE_LOGIT_BYTES
    hccl = s.hccl_buffer_gib * GIB
    num_micro = max(1, s.mini_batch_sequences // (dp * max(1, s.micro_batch)))

    frac = s.optimizer_offload_fraction if s.optimizer_cpu_offload else 0.0
    best: tuple[float, int, dict[str, float], dict[str, float], float, float] | None = None
    worst_residue = 0.0
    host_rank_sum = 0.0
    stages = _stage_layers(m.num_layers, lo.pp, s.first_last)
    params_rank = active_rank = 0
    for index, (start, end) in enumerate(stages):
        last = index == len(stages) - 1
        dense, expert = _train_stage_params(m, lo, start, end, last, s.mtp_layers)
        params = dense + expert
        weights = BF16 * params
        grads = s.grad_bytes * params
        optimizer = s.optimizer_bytes * (dense / dense_shard + expert / expert_shard)
        optimizer_device = optimizer * (1 - frac)
        activations = _activation_bytes(m, lo, s, end - start, index, num_micro, tokens, sp)
        logits = 0.0
        heads = 1 + s.mtp_layers  # the output layer's logits, one more set per MTP layer
        if last:
            # Over the TP shard of the vocabulary, the bytes verl's own path holds (UPDATE_LOGIT_BYTES).
            logits = heads * update_logit_bytes * tokens * m.vocab / lo.tp
        ref = BF16 * params if s.uses_reference and not s.param_offload else 0.0
        # verl's param/optimizer offload only moves them out between phases: entering the training
        # context loads weights, gradients and the optimizer back onto the device before the first
        # forward (verl/workers/engine/base.py BaseEngineCtx._context_switch). Only Megatron's hybrid
        # CPU optimizer keeps its `fraction` off the device during training.
        update = weights + grads + ref + activations + logits + optimizer_device
        # What the actor (and ref) leave on the device while vLLM generates.
        residue = (0 if s.param_offload else weights) + (0 if s.grad_offload else grads) + ref
        residue += 0 if s.optimizer_offload else optimizer_device
        # Log-prob passes (old policy, ref): forward only, in eval mode verl loads the weights alone
        # (BaseEngineCtx: model yes, optimizer and gradients no); one layer's activations at a time and
        # the logits of a log-prob micro-batch on the last stage, at the bytes per logit of each pass
        # (OLD_LOG_PROB_LOGIT_BYTES: with entropy and a clone; REF_LOG_PROB_LOGIT_BYTES: log-probs only).
        loaded = weights if s.param_offload else 0.0
        old_logits = OLD_LOG_PROB_LOGIT_BYTES * old_tokens * m.vocab / lo.tp if last else 0.0
        ref_logits = REF_LOG_PROB_LOGIT_BYTES * ref_tokens * m.vocab / lo.tp if last else 0.0
        old_activations = _layer_activation_bytes(old_tokens, m, lo.tp, sp)
        ref_activations = _layer_activation_bytes(ref_tokens, m, lo.tp, sp)
        old_pass = residue + loaded + old_activations + old_logits
        ref_pass = residue + loaded + ref_activations + ref_logits if ref_tokens else 0.0
        log_prob = max(old_pass, ref_pass)
        peak = max(update, log_prob)
        breakdown = {
            "weights": _gib(weights),
            "gradients": _gib(grads),
            "optimizer": _gib(optimizer_device),
            "activations": _gib(activations),
            "logits": _gib(logits),
            "reference": _gib(ref),
            "reserved": _gib(reserved),
            "hccl_buffers": _gib(hccl),
            "log_prob_pass": _gib(log_prob),  # the forward-only passes' own peak (compared, not added)
        }
        passes = {
            "resident": _gib(residue),  # what the actor (and ref) keep on the device between phases
            "loaded_weights": _gib(loaded),  # the offloaded weights verl loads back for the pass
            "old_log_prob_activations": _gib(old_activations),
            "old_log_prob_logits": _gib(old_logits),
            "old_log_prob": _gib(old_pass),
            "ref_log_prob_activations": _gib(ref_activations),
            "ref_log_prob_logits": _gib(ref_logits),
            "ref_log_prob": _gib(ref_pass),
        }
        if best is None or peak > best[0]:
            best = (peak, index, breakdown, passes, update, log_prob)
            params_rank = params
            active_rank = dense + expert * m.topk // m.experts
        worst_residue = max(worst_residue, residue)
        # Host: verl keeps a pinned copy of offloaded weights (megatron_utils.offload_megatron_model_to_cpu;
        # gradients are freed, not copied); the ref's weights likewise; verl's optimizer offload moves
        # master weights and Adam states; Megatron's hybrid CPU optimizer keeps `fraction` of them plus an
        # fp32 gradient copy on the host all the time (megatron/core/optimizer/cpu_offloading/
        # hybrid_optimizer.py: fp32 CPU copies of the parameters, pinned CPU gradients).
        host = (weights if s.param_offload else 0) + (BF16 * params if s.uses_reference and s.param_offload else 0)
        host += optimizer * frac * (s.optimizer_bytes + FP32) / s.optimizer_bytes
        host += optimizer_device if s.optimizer_offload else 0
        host_rank_sum += host
    assert best is not None
    train_peak, train_stage, train_breakdown, log_prob_breakdown, update_peak, log_prob_peak = best
    train_total = train_peak + reserved + hccl

    # Rollout (vLLM, colocated): vLLM takes gpu_memory_utilization of the device's total memory for
    # weights, profile activations and the KV/state cache (vllm/v1/worker/gpu_worker.py
    # determine_available_memory; startup refuses when free memory is below that budget).
    rollout_params = _rollout_params(m, lo)
    vllm_weights = BF16 * rollout_params
    # Profile-run peak: fp32 logits of max_num_seqs sequences over the full vocabulary (sampling)
    # plus ~16 hidden-sized bf16 buffers per batched token (approximation).
    workspace = s.max_num_seqs * m.vocab * FP32 + s.max_num_batched_tokens * m.hidden * BF16 * 16
    budget = s.gpu_memory_utilization * cap
    cache = budget - vllm_weights - workspace
    # KV cache of a hybrid model (vLLM v1). One full-attention layer's page per token: K and V, bf16, KV heads
    # per rank as above (FullAttentionSpec.page_size_bytes). One GDN layer's state per sequence
    # (MambaStateShapeCalculator.gated_delta_net_state_shape): conv state (2*Hk*dk + Hv*dv)/TP x (kernel-1) in
    # bf16, recurrent state Hv/TP x dv x dk in fp32 (Qwen3.5 sets mamba_ssm_dtype float32).
    attention_token = 2 * _kv_heads_per_rank(m.kv_heads, lo.gen_tp) * m.head_dim * BF16
    kv_token = attention_token * m.attention_layers
    conv = m.gdn_conv_dim // lo.gen_tp * (m.conv_kernel - 1) * BF16
    recurrent = max(1, m.gdn_value_heads // lo.gen_tp) * m.gdn_value_dim * m.gdn_key_dim * FP32
    gdn_state = conv + recurrent
    # vllm/model_executor/models/config.py HybridAttentionMambaModelConfig.verify_and_update_config (without
    # prefix caching): the attention block is the smallest multiple of 16 tokens whose page holds one GDN
    # state, and the GDN page is padded to the attention page.
    block_tokens = VLLM_BLOCK_ALIGNMENT * math.ceil(gdn_state / (VLLM_BLOCK_ALIGNMENT * attention_token))
    page = block_tokens * attention_token
    # vllm/v1/core/kv_cache_utils.py _get_kv_cache_groups_uniform_page_size: layers of each kind are cut into
    # groups of the smaller kind's count (the larger's when under 1.5x), padded; a block is one page in every
    # layer of a group, drawn from one pool by all groups. A sequence takes ceil(length / block) blocks in each
    # attention group and one block in each GDN group.
    counts = [c for c in (m.attention_layers, m.gdn_layers) if c]
    group_size = max(counts) if max(counts) < 1.5 * min(counts) else min(counts)
    attention_groups = math.ceil(m.attention_layers / group_size)
    gdn_groups = math.ceil(m.gdn_layers / group_size)
    blocks = int(cache // (page * group_size)) if cache > 0 else 0

    def blocks_per_sequence(length: int) -> int:
        return attention_groups * math.ceil(length / block_tokens) + gdn_groups

    sequences_fit = blocks // blocks_per_sequence(s.rollout_length)
    # vllm/v1/core/kv_cache_utils.py check_enough_kv_cache_memory: the engine refuses to start unless the
    # cache holds one whole max_model_len sequence.
    startup_fits = blocks >= blocks_per_sequence(s.startup_length)
    # A step's sequences spread over world / gen_tp vLLM engines (TP groups); each runs at most
    # max_num_seqs at once. Fewer fitting than wanted only means queueing, not failure.
    engines = max(1, lo.world // lo.gen_tp)
    sequences_wanted = min(s.max_num_seqs, math.ceil(s.step_sequences / engines))
    rollout_total = worst_residue + reserved + hccl + budget
    rollout_breakdown = {
        "vllm_budget": _gib(budget),
        "vllm_weights": _gib(vllm_weights),
        "vllm_workspace": _gib(workspace),
        "kv_and_state_cache": _gib(max(0.0, cache)),
        "kv_per_token_kib": kv_token / 1024,
        "gdn_state_per_sequence_mib": m.gdn_layers * gdn_state / 2**20,
        "attention_block_tokens": block_tokens,
        "gdn_state_padded_per_sequence_mib": gdn_groups * group_size * page / 2**20,
        "actor_residue": _gib(worst_residue),
        "reserved": _gib(reserved),
        "hccl_buffers": _gib(hccl),
    }
    host_vllm = vllm_weights if s.vllm_sleep_level == 1 else 0
    host_rank_mean = host_rank_sum / len(stages) + host_vllm
    host_per_node = host_rank_mean * lo.devices_per_node
    host_breakdown = {
        "training_offload": _gib(host_rank_sum / len(stages) * lo.devices_per_node),
        "vllm_sleeping_weights": _gib(host_vllm * lo.devices_per_node),
    }
    fits = (
        train_total <= cap
        and rollout_total <= cap
        and sequences_fit >= 1
        and startup_fits
        and host_per_node <= s.host_memory_gib * GIB
    )
    return MemoryEstimate(
        params_total=m.params_total,
        params_active=m.params_active,
        params_per_rank=params_rank,
        params_active_per_rank=active_rank,
        rollout_params_per_rank=rollout_params,
        device_memory_gib=s.device_memory_gib,
        train_gib=_gib(train_total),
        train_stage=train_stage,
        train_breakdown=train_breakdown,
        rollout_gib=_gib(rollout_total),
        rollout_breakdown=rollout_breakdown,
        rollout_budget_gib=_gib(budget),
        sequences_fit=sequences_fit,
        sequences_wanted=sequences_wanted,
        host_per_node_gib=_gib(host_per_node),
        host_memory_gib=s.host_memory_gib,
        host_breakdown=host_breakdown,
        fits=fits,
        vision_params=m.vision_params,
        update_gib=_gib(update_peak + reserved + hccl),
        log_prob_gib=_gib(log_prob_peak + reserved + hccl),
        log_prob_breakdown=log_prob_breakdown,
        startup_fits=startup_fits,
        startup_length=s.startup_length,
    )


def zero_reasons(s: Settings, last_stage: bool) -> dict[str, str]:
    """Why a part of the estimate is 0 GiB, by its breakdown name: a plan that prints "optimizer 0.0" says why."""
    why = {}
    if s.optimizer_cpu_offload and s.optimizer_offload_fraction >= 1:
        why["optimizer"] = "on the host: override_optimizer_config.optimizer_cpu_offload"
    if not s.uses_reference:
        why["reference"] = "no reference model: use_kl_loss and use_kl_in_reward are off"
    elif s.param_offload:
        why["reference"] = "on the host: megatron.param_offload"
    if not last_stage:
        why["logits"] = why["log_prob_logits"] = "not the last pipeline stage"
    if s.hccl_buffer_gib == 0:
        why["hccl_buffers"] = "none: GPU, NCCL's buffers are in the reserve"
    if not s.param_offload:
        why["loaded_weights"] = "the weights stay on the device, in the resident part"
    if s.param_offload and s.grad_offload and (s.optimizer_offload or "optimizer" in why):
        why["resident"] = why["actor_residue"] = "offloaded between phases: megatron.param_offload, optimizer_offload"
    return why


def read_inputs(cfg: DictConfig) -> tuple[ModelFacts, Settings]:
    """The model facts and settings of a resolved config; `InputError` names the first unusable key."""
    return ModelFacts.of(cfg.get("model") or {}), Settings.of(cfg)


def estimate(cfg: DictConfig) -> MemoryEstimate:
    """The estimate of one resolved config: its model facts, its layout, its verl keys."""
    return estimate_layout(ModelFacts.of(cfg.model), Layout.of(cfg), Settings.of(cfg))
