"""Predicted seconds of one GRPO step (colocated verl: vLLM rollout, Megatron log-prob passes and update).

Pure arithmetic over the model facts, the layout, the resolved verl keys (`Settings`), the memory
estimate of the same layout (vLLM's weights per rank, KV bytes per token, sequences the cache
holds) and the hardware's rates (`Rates`, from `hardware.*`). Phases run one after another, as in
verl's colocated `RayPPOTrainer.fit` (generate, old log-prob, ref log-prob, update, weight sync):

- **rollout**: prefill is compute bound (prompt FLOPs over the engine's devices); decode is
  HBM-bandwidth bound: every decode iteration each device reads its vLLM weights (the experts the
  batch touches) and the KV cache / Gated DeltaNet state of its running sequences, plus the
  latency of the TP all-reduces and EP all-to-alls of every layer;
- **old / ref log-prob**: one forward of every sequence (model FLOPs / peak x `train_mfu`);
- **update**: forward + backward = 3 forwards, +1 with full recompute; the pipeline bubble
  (PP-1)/(VPP*m) of the 1F1B / interleaved schedule (Narayanan et al. 2021), the slowest pipeline
  stage (the last one also holds lm_head and the MTP layer);
- **communication** of the update and the log-prob passes, per kind, each group's volume over the
  link it really uses: megatron-core's `RankGenerator` orders ranks tp-cp-ep-dp-pp
  (`parallel_state.initialize_model_parallel`, order "tp-cp-ep-dp-pp"; experts: etp-ep-edp-pp),
  so a group of `size` ranks `stride` apart stays on one node when size*stride <= the fast domain;
- **weight sync**: verl streams every full tensor from Megatron (gathered over TP/EP/PP) to vLLM
  (`verl/workers/rollout/..` `update_weights` buckets);
- **offload**: verl's param/optimizer offload moves weights and optimizer state over PCIe.

The free parameters (`Efficiency`) are fitted on published measurements by `calibrate` below
(rows in `verl_qwen35/data/calibration/measurements.yaml`, printed by `scripts/calibrate.py`).
Not modelled: overlap of communication with compute (Megatron's overlap_grad_reduce,
overlapped MoE all-to-all), CPU time of the hybrid CPU optimizer, response lengths below the
configured maximum (the prediction is for full-length responses), load imbalance of MoE routing,
stragglers, Ray and data-loading time, validation and checkpoint steps, vision tokens.
"""

import dataclasses
import functools
import math
import statistics
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import yaml

from verl_qwen35.data import DATA_DIR
from verl_qwen35.model.layout import Layout
from verl_qwen35.model.memory import InputError, MemoryEstimate, ModelFacts, Settings, estimate_layout
from verl_qwen35.model.pipeline import Split, chunk_layers, split_problems

BF16 = 2
FP32 = 4
GB = 1e9
CALIBRATION = DATA_DIR / "calibration" / "measurements.yaml"
# Assumptions (not fitted; see docs/planning.md): the share of a link's peak a collective reaches
# (bus bandwidth in nccl-tests is typically 70-85% of the link), the latency of one small collective
# inside and across nodes, the host-device copy rate of offloading (PCIe Gen4/5 x16 in practice),
# and the Gated DeltaNet chunk size (fla's chunked delta rule, 64).
LINK_EFFICIENCY = 0.75
LATENCY_INTRA_S = 10e-6
LATENCY_INTER_S = 30e-6
PCIE_GBPS = 25.0
GDN_CHUNK = 64
# Small GEMMs run below the fitted MFU: x (1 + HALF/tokens) for the tokens of one micro-batch on one
# rank (after CP) and x (1 + HALF/width) for the hidden width a TP rank multiplies (an assumption:
# every published row the fit uses runs >= 2k tokens and >= 2k wide, so it cannot fit these).
GEMM_HALF_TOKENS = 256
GEMM_HALF_WIDTH = 256


@dataclass(frozen=True)
class Rates:
    """What the hardware does per device and second (`hardware.*`, each number sourced in conf/hardware)."""

    bf16_tflops: float  # dense bf16 peak
    hbm_gbps: float
    intra_node_gbps: float  # one direction, per device
    inter_node_gbps: float  # one direction, per device
    fast_domain_devices: int  # devices sharing the fast interconnect (8 for a DGX H100, 72 for NVL72)

    @classmethod
    def of(cls, hw: Mapping[str, Any]) -> "Rates":
        def number(name: str) -> float:
            value = hw.get(name) if hw is not None else None
            ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value) and value > 0
            if not ok:
                raise InputError(
                    f"hardware.{name}",
                    f"hardware.{name}={value!r}: the step-time model needs a number > 0 "
                    "(pick a hardware preset, hardware=h100, or set it)",
                )
            return float(value)

        return cls(
            bf16_tflops=number("bf16_tflops"),
            hbm_gbps=number("hbm_gbps"),
            intra_node_gbps=number("intra_node_gbps"),
            inter_node_gbps=number("inter_node_gbps"),
            fast_domain_devices=int(number("fast_domain_devices")),
        )


@dataclass(frozen=True)
class Efficiency:
    """The fitted parameters: shares of peak the real kernels reach."""

    train_mfu: float  # model FLOPs / peak in Megatron's forward and backward (log-prob passes too)
    decode_bandwidth: float  # bytes read / HBM peak in vLLM's decode iterations
    prefill_mfu: float  # model FLOPs / peak in vLLM's prefill


@dataclass(frozen=True)
class Recipe:
    """The few verl keys the time model reads beyond the memory estimate's `Settings`."""

    ppo_epochs: int = 1
    calculate_old_log_prob: bool = True

    @classmethod
    def of(cls, cfg: Any) -> "Recipe":
        epochs = cfg.actor_rollout_ref.actor.get("ppo_epochs")
        return cls(ppo_epochs=epochs if isinstance(epochs, int) and not isinstance(epochs, bool) and epochs > 0 else 1)


@dataclass(frozen=True)
class StepTime:
    """Seconds of one step by part; `parts` is what the plan JSON lists (docs/planning.md)."""

    parts: dict[str, float]
    tokens: float  # tokens of the step's sequences (prompt + response): what verl trains on
    world: int

    @property
    def seconds(self) -> float:
        return sum(self.parts.values())

    @property
    def tokens_per_second_per_device(self) -> float:
        return self.tokens / self.seconds / self.world

    def device_hours(self, steps: int) -> float:
        return steps * self.seconds * self.world / 3600

    def as_dict(self, steps: int | None = None) -> dict[str, Any]:
        out: dict[str, Any] = {
            "seconds_per_step": round(self.seconds, 3),
            "tokens_per_second_per_device": round(self.tokens_per_second_per_device, 2),
            "parts": {k: round(v, 3) for k, v in self.parts.items()},
            "total_steps": steps,
            "device_hours": None if steps is None else round(self.device_hours(steps), 1),
        }
        return out


# -- model FLOPs -----------------------------------------------------------------------------


def forward_flops_per_token(m: ModelFacts, context: float) -> float:
    """Forward FLOPs of one token attending to `context` earlier tokens.

    Matmuls: 2 x the active parameters (top-k routed experts + the shared expert; embedding is a
    lookup, lm_head counts). Full-attention layers add QK^T and PV: 4 x heads x head_dim x context.
    Gated DeltaNet layers (chunked delta rule): the state update and read-out, ~6 x Hv x dk x dv per
    token, plus the intra-chunk products, 2 x Hv x (dk + dv) x chunk.
    """
    matmul = 2 * (m.params_active - m.embedding)
    attention = m.attention_layers * 4 * m.heads * m.head_dim * context
    hv, dk, dv = m.gdn_value_heads, m.gdn_key_dim, m.gdn_value_dim
    gdn = m.gdn_layers * (6 * hv * dk * dv + 2 * hv * (dk + dv) * GDN_CHUNK)
    return matmul + attention + gdn


def gemm_slowdown(tokens: float, hidden: int, tp: int) -> float:
    """How much slower than the fitted MFU a pass runs whose micro-batches hold `tokens` a rank."""
    return (1 + GEMM_HALF_TOKENS / max(1.0, tokens)) * (1 + GEMM_HALF_WIDTH / max(1.0, hidden / tp))


def _layer_flops(m: ModelFacts, context: float) -> float:
    """Mean forward FLOPs per decoder layer and token (lm_head excluded)."""
    return (forward_flops_per_token(m, context) - 2 * m.output) / m.num_layers


def stage_imbalance(m: ModelFacts, lo: Layout, split: Split, mtp: int, context: float) -> float:
    """The slowest pipeline rank's FLOPs over the mean (1.0 at PP 1): the last rank also runs lm_head
    (2*V*h a token: ~4 decoder layers of 397B) and the MTP layers; uneven first/last stages exist
    to even this out (megatron-core get_num_layers_to_build)."""
    if lo.pp == 1 or split.layout is not None or split_problems(m.num_layers, lo.pp, lo.vpp, split):
        return 1.0  # a layout string (or a split megatron-core refuses) is taken as balanced
    chunks = chunk_layers(m.num_layers, lo.pp, lo.vpp, split)
    per_rank = [sum(chunks[i :: lo.pp]) for i in range(lo.pp)] if lo.vpp else chunks
    layer = _layer_flops(m, context)
    flops = [n * layer for n in per_rank]
    flops[-1] += 2 * (m.output or m.embedding) + mtp * (layer + 4 * m.hidden * m.hidden)
    return max(flops) / (sum(flops) / lo.pp)


# -- communication ---------------------------------------------------------------------------


def _domain(lo: Layout, rates: Rates) -> int:
    """Devices that talk at intra-node speed: the fast domain when it spans whole nodes, else a node."""
    d = rates.fast_domain_devices
    return d if d >= lo.devices_per_node and d % lo.devices_per_node == 0 else lo.devices_per_node


def _spans(size: int, stride: int, domain: int) -> bool:
    return size > 1 and size * stride > domain


def ring_seconds(bytes_sent: float, size: int, stride: int, lo: Layout, rates: Rates) -> float:
    """A ring collective (all-gather, reduce-scatter): every byte crosses the group's slowest link."""
    if size <= 1 or bytes_sent <= 0:
        return 0.0
    gbps = rates.inter_node_gbps if _spans(size, stride, _domain(lo, rates)) else rates.intra_node_gbps
    return bytes_sent / (gbps * GB * LINK_EFFICIENCY)


def all_to_all_seconds(bytes_sent: float, size: int, stride: int, lo: Layout, rates: Rates) -> float:
    """An all-to-all: the share of peers off the domain goes over the inter-node link."""
    if size <= 1 or bytes_sent <= 0:
        return 0.0
    domain = _domain(lo, rates)
    same = max(1, min(size, domain // stride)) if stride <= domain else 1
    off = 1 - (same - 1) / (size - 1)
    per_byte = off / rates.inter_node_gbps + (1 - off) / rates.intra_node_gbps
    return bytes_sent * per_byte / (GB * LINK_EFFICIENCY)


def _latency(size: int, stride: int, lo: Layout, rates: Rates) -> float:
    if size <= 1:
        return 0.0
    return LATENCY_INTER_S if _spans(size, stride, _domain(lo, rates)) else LATENCY_INTRA_S


def training_communication(
    m: ModelFacts, lo: Layout, s: Settings, rates: Rates, recipe: Recipe, passes_forward: int, passes_update: int
) -> dict[str, float]:
    """Seconds per kind of the update's and log-prob passes' collectives, per device and step.

    Groups by megatron-core's rank order (tp-cp-ep-dp-pp; experts etp-ep-edp-pp), each keyed by its
    kind, never by (size, stride), so EP and DP x CP of the same shape stay two entries."""
    dp, edp = lo.dp, lo.expert_dp
    sp = s.sequence_parallel and lo.tp > 1
    tokens_dp = s.step_sequences * s.sequence_length / dp  # tokens one DP rank handles per pass
    tokens_rank = tokens_dp / lo.cp
    layers = m.num_layers / lo.pp
    passes = passes_forward + passes_update * recipe.ppo_epochs  # forward-equivalents that communicate
    h = m.hidden
    out = {}
    # TP: with SP 2 all-gather + 2 reduce-scatter of s*b*h per layer and pass (Korthikanti et al.
    # 2022); without SP the 2 all-reduces move the same bytes.
    tp_bytes = passes * layers * 4 * tokens_rank * h * BF16 * (lo.tp - 1) / lo.tp
    out["tp"] = ring_seconds(tp_bytes, lo.tp, 1, lo, rates)
    # CP: K and V of each attention layer all-gathered around the ring (backward: their gradients too).
    kv = max(1, m.kv_heads // lo.tp) * m.head_dim
    cp_bytes = (passes + passes_update) * (m.attention_layers / lo.pp) * tokens_dp * 2 * kv * BF16
    out["cp"] = ring_seconds(cp_bytes * (lo.cp - 1) / lo.cp, lo.cp, lo.tp, lo, rates)
    # EP: dispatch + combine all-to-all of every routed copy of a token (top-k), per MoE layer and pass.
    routed = m.topk * tokens_rank / (lo.tp if sp else 1) * h * BF16
    out["ep"] = all_to_all_seconds(passes * layers * 2 * routed * (lo.ep - 1) / lo.ep, lo.ep, lo.etp, lo, rates)
    # ETP: the expert MLPs' own all-gather / reduce-scatter of their routed tokens.
    etp_bytes = passes * layers * 2 * routed * (lo.etp - 1)
    out["etp"] = ring_seconds(etp_bytes, lo.etp, 1, lo, rates)
    # PP: one activation (forward) and one gradient (backward) per micro-batch and virtual stage boundary.
    micro_tokens = (s.max_token_len or s.micro_batch * s.sequence_length) / lo.cp
    micro_batches = max(1.0, tokens_rank / micro_tokens)
    pp_bytes = passes * micro_batches * (lo.vpp or 1) * micro_tokens * h * BF16 / (lo.tp if sp else 1)
    pp_time = ring_seconds(pp_bytes if lo.pp > 1 else 0, lo.pp, lo.world // lo.pp, lo, rates)
    out["pp"] = pp_time + (passes * micro_batches * (lo.vpp or 1) * _latency(lo.pp, lo.world // lo.pp, lo, rates))
    # DP (distributed optimizer), per optimizer step: reduce-scatter of fp32 grads + all-gather of bf16
    # params, dense over DP x CP (stride TP), experts over expert-DP (stride ETP x EP).
    steps = recipe.ppo_epochs * max(1, s.step_sequences // max(1, s.mini_batch_sequences))
    experts = layers * m.experts / lo.ep * m.expert / lo.etp  # routed-expert parameters of one rank
    dense = (m.params_total - m.num_layers * m.experts * m.expert) / (lo.tp * lo.pp)  # the rest, per rank
    grad_bytes = s.grad_bytes + BF16
    dense_group = dp * lo.cp
    dense_time = ring_seconds(
        steps * dense * grad_bytes * (dense_group - 1) / dense_group, dense_group, lo.tp, lo, rates
    )
    expert_time = ring_seconds(steps * experts * grad_bytes * (edp - 1) / edp, edp, lo.etp * lo.ep, lo, rates)
    out["dp"] = dense_time + expert_time
    return out


# -- the step ----------------------------------------------------------------------------------


def rollout_seconds(m: ModelFacts, lo: Layout, s: Settings, e: MemoryEstimate, rates: Rates, eff: Efficiency) -> dict:
    """(prefill, decode) seconds of one step's generation: each vLLM TP group runs its share."""
    groups = max(1, lo.world // lo.gen_tp)
    sequences = s.step_sequences / groups
    prompt, response = s.prompt_length, min(s.response_length, max(1, s.rollout_length - s.prompt_length))
    peak = rates.bf16_tflops * 1e12
    prefill = sequences * prompt * forward_flops_per_token(m, prompt / 2) / (lo.gen_tp * peak * eff.prefill_mfu)
    batch = max(1.0, min(float(s.max_num_seqs), float(max(1, e.sequences_fit)), sequences))
    waves = math.ceil(sequences / batch)
    # Weights read per iteration: dense always, experts only those the batch's tokens touch.
    expert_split = lo.gen_ep if lo.gen_ep > 1 else lo.gen_tp
    expert_params = m.num_layers * m.experts * m.expert / expert_split
    dense_params = max(0.0, e.rollout_params_per_rank - expert_params)
    routed_tokens = batch * (lo.gen_ep // lo.gen_tp if lo.gen_ep > 1 else 1) * m.topk
    touched = 1 - (1 - 1 / m.experts) ** routed_tokens
    weights = BF16 * (dense_params + expert_params * touched)
    context = prompt + response / 2
    kv_token = e.rollout_breakdown["kv_per_token_kib"] * 1024
    state = e.rollout_breakdown["gdn_state_per_sequence_mib"] * 2**20
    cache = batch * (context * kv_token + 2 * state)  # GDN state read and written back
    memory = (weights + cache) / (rates.hbm_gbps * GB * eff.decode_bandwidth)
    compute = batch * forward_flops_per_token(m, context) / lo.gen_tp / (peak * eff.prefill_mfu)
    # Per layer: 2 TP all-reduces of the batch's hidden states, 2 EP all-to-alls of its routed copies.
    comm = 0.0
    if lo.gen_tp > 1:
        ar = 2 * batch * m.hidden * BF16 * 2 * (lo.gen_tp - 1) / lo.gen_tp
        comm += m.num_layers * 2 * (_latency(lo.gen_tp, 1, lo, rates) + ring_seconds(ar / 2, lo.gen_tp, 1, lo, rates))
    if lo.gen_ep > 1:
        a2a = batch * m.topk * m.hidden * BF16 * (lo.gen_ep - 1) / lo.gen_ep
        comm += (
            m.num_layers * 2 * (_latency(lo.gen_ep, 1, lo, rates) + all_to_all_seconds(a2a, lo.gen_ep, 1, lo, rates))
        )
    decode = waves * response * (max(memory, compute) + comm)
    return {"rollout_prefill": prefill, "rollout_decode": decode}


def weight_sync_seconds(m: ModelFacts, lo: Layout, rates: Rates) -> float:
    """verl streams every full bf16 tensor to the colocated vLLM worker (the Megatron-Bridge export:
    each tensor broadcast over PP and gathered over TP, experts over EP x ETP), so each device
    receives what its own shard lacks over those groups' links, then vLLM copies it in."""
    routed = BF16 * m.num_layers * m.experts * m.expert
    dense = BF16 * m.params_total - routed
    pp_stride = lo.world // lo.pp
    seconds = ring_seconds(dense * (1 - 1 / lo.tp) / lo.pp, lo.tp, 1, lo, rates)
    seconds += ring_seconds(routed * (1 - 1 / (lo.ep * lo.etp)) / lo.pp, lo.ep * lo.etp, 1, lo, rates)
    seconds += ring_seconds((dense + routed) * (1 - 1 / lo.pp), lo.pp, pp_stride, lo, rates)
    return seconds + (dense + routed) / (rates.hbm_gbps * GB)


def offload_seconds(e: MemoryEstimate, s: Settings) -> float:
    """verl's param/optimizer offload: weights (and optimizer state) back and forth over PCIe each step."""
    b = e.train_breakdown
    moved = 0.0
    if s.param_offload:
        moved += 2 * (b["weights"] + b["gradients"])
    if s.optimizer_offload:
        moved += 2 * b["optimizer"]
    return moved * 2**30 / (PCIE_GBPS * GB)


def training_seconds(
    m: ModelFacts,
    lo: Layout,
    s: Settings,
    rates: Rates,
    eff: Efficiency,
    recipe: Recipe = Recipe(),
    split: Split | None = None,
) -> dict[str, float]:
    """The parts of a step that depend on the training layout only (no rollout, no offload)."""
    split = split or Split(first=s.first_last[0], last=s.first_last[1])
    seq = s.sequence_length
    tokens = s.step_sequences * seq
    peak = rates.bf16_tflops * 1e12
    forward = tokens * forward_flops_per_token(m, seq / 2)
    imbalance = stage_imbalance(m, lo, split, s.mtp_layers, seq / 2)
    one_forward = forward * imbalance / (lo.world * peak * eff.train_mfu)
    micro_tokens = (s.max_token_len or s.micro_batch * seq) / lo.cp
    lp_micro_tokens = (s.log_prob_max_token_len or s.log_prob_micro_batch * seq) / lo.cp
    recompute = 1 if s.recompute_granularity == "full" else 0
    update = (3 + recompute) * one_forward * recipe.ppo_epochs * gemm_slowdown(micro_tokens, m.hidden, lo.tp)
    log_prob = one_forward * gemm_slowdown(lp_micro_tokens, m.hidden, lo.tp)
    log_prob = log_prob if recipe.calculate_old_log_prob else 0.0
    ref = log_prob if s.uses_reference else 0.0
    # Bubble: (PP-1)/(VPP*m) of each pass, m micro-batches per DP rank (per mini-batch for the update).
    bubble = 0.0
    if lo.pp > 1:
        per_dp = s.step_sequences / lo.dp
        if s.max_token_len:
            micro = max(1.0, s.mini_batch_sequences / lo.dp * seq / s.max_token_len)
        else:
            micro = max(1.0, s.mini_batch_sequences / (lo.dp * s.micro_batch))
        lp_tokens = s.log_prob_max_token_len or s.log_prob_micro_batch * seq
        lp_micro = max(1.0, per_dp * seq / lp_tokens)
        bubble = update * (lo.pp - 1) / ((lo.vpp or 1) * micro)
        bubble += (log_prob + ref) * (lo.pp - 1) / ((lo.vpp or 1) * lp_micro)
    passes_forward = int(recipe.calculate_old_log_prob) + int(s.uses_reference)
    comm = training_communication(m, lo, s, rates, recipe, passes_forward, 2 + recompute)
    return {
        "old_log_prob": log_prob,
        "ref_log_prob": ref,
        "update_compute": update,
        **{f"comm_{kind}": t for kind, t in comm.items()},
        "pipeline_bubble": bubble,
        "weight_sync": weight_sync_seconds(m, lo, rates),
    }


def step_time(
    m: ModelFacts,
    lo: Layout,
    s: Settings,
    e: MemoryEstimate,
    rates: Rates,
    eff: Efficiency | None = None,
    recipe: Recipe = Recipe(),
    split: Split | None = None,
) -> StepTime:
    """One GRPO step of this layout: seconds by part (the plan's `step_time.parts`, in `PARTS` order)."""
    eff = eff or calibrated()
    parts = {
        **rollout_seconds(m, lo, s, e, rates, eff),
        **training_seconds(m, lo, s, rates, eff, recipe, split),
        "offload": offload_seconds(e, s),
    }
    return StepTime(parts={k: parts[k] for k in PARTS}, tokens=s.step_sequences * s.sequence_length, world=lo.world)


PARTS = (
    "rollout_prefill",
    "rollout_decode",
    "old_log_prob",
    "ref_log_prob",
    "update_compute",
    "comm_tp",
    "comm_cp",
    "comm_ep",
    "comm_etp",
    "comm_pp",
    "comm_dp",
    "pipeline_bubble",
    "weight_sync",
    "offload",
)


# -- calibration ---------------------------------------------------------------------------------


def load_measurements() -> list[dict[str, Any]]:
    return yaml.safe_load(CALIBRATION.read_text())["measurements"]


def row_facts(row: Mapping[str, Any]) -> ModelFacts:
    """A measured model's facts; models without Qwen3.5's gated query (Qwen3) count q_proj once."""
    facts = ModelFacts.of(row["model"])
    if not row["model"].get("attention_output_gate", True):
        model = row["model"]
        q_and_o = 2 * model["num_attention_heads"] * model["head_dim"] * model["hidden_size"]
        facts = dataclasses.replace(facts, attn_split=q_and_o)
    return facts


def _pretrain_parts(row: Mapping[str, Any], eff: Efficiency) -> tuple[float, float]:
    """(compute-bound seconds at this efficiency, the rest) of one measured pre-training step."""
    m, r = row_facts(row), row["run"]
    lo = Layout(r["nodes"], r["devices_per_node"], r["tp"], r["pp"], r["cp"], r["ep"], r.get("etp", 1), r.get("vpp"), 1)
    rates = Rates.of(row["hardware"])
    seq, gbs = r["sequence_length"], r["global_batch_size"]
    s = _settings(seq, gbs, gbs, r["micro_batch_size"], r.get("recompute"))
    forward = gbs * seq * forward_flops_per_token(m, seq / 2)
    imbalance = stage_imbalance(m, lo, Split(first=r.get("first_stage"), last=r.get("last_stage")), 0, seq / 2)
    compute = (3 + (1 if r.get("recompute") == "full" else 0)) * forward * imbalance
    compute *= gemm_slowdown(r["micro_batch_size"] * seq / lo.cp, m.hidden, lo.tp)
    compute /= lo.world * rates.bf16_tflops * 1e12 * eff.train_mfu
    micro = gbs / (lo.dp * r["micro_batch_size"])
    bubble = compute * (lo.pp - 1) / ((lo.vpp or 1) * micro) if lo.pp > 1 else 0.0
    comm = training_communication(m, lo, s, rates, Recipe(), 0, 3 - 1)
    return compute + bubble, sum(comm.values())


def _settings(seq: int, step_sequences: int, mini: int, micro: int, recompute: str | None, **kw: Any) -> Settings:
    base = dict(
        device_memory_gib=80.0, host_memory_gib=2048.0, reserved_gib=4.0, prompt_length=0, response_length=seq,
        max_model_len=None, micro_batch=micro, max_token_len=None, mini_batch_sequences=mini,
        step_sequences=step_sequences, param_offload=False, grad_offload=False, optimizer_offload=False,
        optimizer_cpu_offload=False, optimizer_offload_fraction=0.0, grad_bytes=FP32, optimizer_bytes=12,
        recompute_granularity=recompute, recompute_method=None, recompute_num_layers=None,
        sequence_parallel=True, uses_reference=False, mtp_layers=0,
    )  # fmt: skip
    return Settings(**(base | kw))


def predict(row: Mapping[str, Any], eff: Efficiency) -> float:
    """Predicted seconds of one measured row (pre-training iteration or GRPO step) at `eff`."""
    if row["kind"] == "pretrain":
        compute, rest = _pretrain_parts(row, eff)
        return compute + rest
    return _grpo_step(row, eff).seconds


def _grpo_step(row: Mapping[str, Any], eff: Efficiency) -> StepTime:
    """A measured GRPO step (NeMo RL's: generation, policy log-probs, training, refit), colocated."""
    m, r = row_facts(row), row["run"]
    lo = Layout(
        r["nodes"], r["devices_per_node"], r["tp"], r["pp"], r["cp"], r["ep"], r.get("etp", 1), r.get("vpp"),
        r["gen_tp"], r.get("gen_dp", 1), 1, r.get("gen_ep", 1),
    )  # fmt: skip
    s = _settings(
        r["sequence_length"], r["generated_sequences"], r["train_batch_sequences"], r["micro_batch_size"],
        r.get("recompute"), prompt_length=r.get("prompt_length", 0),
        response_length=r["sequence_length"] - r.get("prompt_length", 0),
        gpu_memory_utilization=r.get("gpu_memory_utilization", 0.6), max_num_seqs=r.get("max_num_seqs", 256),
        device_memory_gib=row["hardware"].get("device_memory_gib", 80.0),
    )  # fmt: skip
    e = estimate_layout(m, lo, s)
    return step_time(m, lo, s, e, Rates.of(row["hardware"]), eff, Recipe(calculate_old_log_prob=True))


def _solve(row: Mapping[str, Any], eff: Efficiency, field: str) -> float | None:
    """The value of `field` that makes this row's prediction equal its measurement (bisection on a
    monotone prediction); None when even a perfect kernel would be slower (the rest is too slow)."""
    measured = row["measured_seconds"]
    lo, hi = 1e-3, 1.0
    if predict(row, dataclasses.replace(eff, **{field: hi})) > measured:
        return None
    for _ in range(50):
        mid = (lo + hi) / 2
        if predict(row, dataclasses.replace(eff, **{field: mid})) > measured:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


FITS = {"pretrain": "train_mfu", "grpo": "decode_bandwidth"}
START = Efficiency(train_mfu=0.3, decode_bandwidth=0.5, prefill_mfu=0.3)


@dataclass(frozen=True)
class Fit:
    efficiency: Efficiency
    per_row: list[tuple[dict[str, Any], float | None, float]]  # (row, its own best value, residual at the fit)


def fit(rows: list[dict[str, Any]] | None = None) -> Fit:
    """Training MFU from the pre-training rows (the median of each row's own value), then the decode
    bandwidth share from the GRPO rows with that MFU; prefill runs at the training MFU."""
    rows = load_measurements() if rows is None else rows
    eff = START
    own: dict[int, float | None] = {}
    for kind, name in FITS.items():
        values = []
        for i, row in enumerate(rows):
            if row["kind"] == kind and row.get("fit", True):
                own[i] = _solve(row, eff, name)
                values += [own[i]] if own[i] is not None else []
        if values:
            eff = dataclasses.replace(eff, **{name: statistics.median(values)})
            if name == "train_mfu":
                eff = dataclasses.replace(eff, prefill_mfu=eff.train_mfu)
    per_row = [(row, own.get(i), predict(row, eff) / row["measured_seconds"] - 1) for i, row in enumerate(rows)]
    return Fit(eff, per_row)


@functools.cache
def calibrated() -> Efficiency:
    """The fitted efficiencies, computed once per process from the shipped measurements."""
    return fit().efficiency
