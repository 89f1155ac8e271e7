"""Predicted seconds of one GRPO step by phase, each phase with its own fitted efficiency and error band.

The phases are verl's own (`timing_s/gen`, `old_log_prob`, `ref`, `update_actor`, `update_weights` of the
colocated `RayPPOTrainer.fit`), run one after another. Each phase's seconds are `a / efficiency + b`: `a` the
part its efficiency scales (kernel time at the hardware's peak), `b` the part it does not (communication at the
link rates, offload over PCIe, the HBM copy of the weight sync). `model/calibration.py` fits one efficiency per
constant and device kind (GPU, NPU) on the measurements of that phase, and gives each phase its band: the 10th to
90th percentile of the measured / predicted ratios of published runs each predicted without itself (it holds
about 8 of 10 of them; `scripts/calibrate.py` prints how many).

- **gen**: prefill compute bound; decode bound by the larger of HBM traffic (vLLM's weights the batch's tokens
  touch, the KV cache and Gated DeltaNet state of its running sequences) and compute, per replica shape (TP, DP,
  EP, sequences per replica up to what its cache holds), plus each layer's TP all-reduces and EP all-to-alls;
- **old_log_prob / ref**: one forward of every sequence (model FLOPs incl. attention over the context and Gated
  DeltaNet's chunked delta rule), the pipeline bubble, and the state traffic of Gated DeltaNet's chunked kernel;
- **update_actor**: forward + backward (+1 forward with full recompute), the 1F1B / interleaved bubble
  (PP-1)/(VPP*m) (Narayanan et al. 2021), the slowest stage; TP/CP/EP/PP/DP collectives over the links their
  groups use (megatron-core rank order tp-cp-ep-dp-pp); the expert all-to-all with
  `override_transformer_config.overlap_moe_expert_parallel_comm` and the gradient reduce-scatter with
  `override_ddp_config.overlap_grad_reduce` hidden behind compute but for the first micro-batch / last bucket;
  verl's param/optimizer offload;
- **update_weights**: every full tensor gathered over TP/EP/PP (the links those groups cross, not fitted) and
  copied into vLLM (fitted); a model larger than the runs that fit it is said to be an extrapolation.

Response lengths: the prediction assumes every response at `data.max_response_length` unless
`plan.response_length` gives the expected mean (what verl logs as `response_length/mean`), or the calibration in
force (`plan.calibration`) was fitted on runs that logged their lengths: then it predicts at those (prompt mean,
response mean and longest), as the efficiencies were fitted at them, and says so. Lengths spread evenly around the
mean up to twice it (or the maximum); a logged longest response beyond that runs alone to its end (a few long
responses, `response_spread`), and the rollout waits for it.
Not modelled: load imbalance of MoE routing, stragglers, Ray and data-loading time, reward, validation and
checkpoint steps, vision tokens, a fixed cost per training pass (no published run measures one: `caveats` says
where a pass is short enough for it to matter).
"""

import dataclasses
import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from verl_qwen35.model.layout import Layout
from verl_qwen35.model.memory import InputError, MemoryEstimate, ModelFacts, Settings, rank_tokens
from verl_qwen35.model.pipeline import Split, chunk_layers, split_problems

BF16 = 2
FP32 = 4
GB = 1e9
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
# An assumption: a training pass predicted under this many seconds is one where a fixed per-pass cost (verl's
# data dispatch to the workers, offload and reload, per-micro-batch launches), which no published run measures
# apart, can be a large share: the prediction says so.
SHORT_PASS_S = 10.0
# A weight sync of a model more than this many times larger than the largest run its efficiency was fitted on is
# an extrapolation, and said to be one.
SYNC_EXTRAPOLATION = 2.0


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


# verl's phases of a colocated step (RayPPOTrainer.fit's `timing_s/<phase>` metrics), in the order they run.
PHASES = ("gen", "old_log_prob", "ref", "update_actor", "update_weights")
# The fitted efficiency that scales each phase: the log-prob passes run the update's forward kernels, so they
# share a constant unless a calibration has rows that measure them (model/calibration.py).
CONSTANT = {
    "gen": "gen",
    "old_log_prob": "log_prob",
    "ref": "log_prob",
    "update_actor": "update",
    "update_weights": "update_weights",
}
CONSTANTS = ("gen", "log_prob", "update", "update_weights")


def phase_seconds(terms: Mapping[str, tuple[float, float]], efficiency: Mapping[str, float]) -> dict[str, float]:
    """Each phase's seconds `a / efficiency + b` under these efficiencies (the one place the formula lives)."""
    return {p: a / efficiency[CONSTANT[p]] + b for p, (a, b) in terms.items()}


def _flag(node: Any, *path: str) -> bool:
    for name in path:
        node = node.get(name) if isinstance(node, Mapping) else None
    return node is True


@dataclass(frozen=True)
class Recipe:
    """The verl keys the time model reads beyond the memory estimate's `Settings`."""

    ppo_epochs: int = 1
    calculate_old_log_prob: bool = True
    overlap_ep: bool = False  # megatron override_transformer_config.overlap_moe_expert_parallel_comm
    overlap_grad_reduce: bool = False  # megatron override_ddp_config.overlap_grad_reduce (verl's default: False)
    response_length: int | None = None  # the expected mean (`plan.response_length`); None: the configured maximum
    prompt_length: int | None = None  # the mean prompt a calibration's runs logged; None: data.max_prompt_length
    longest_response: int | None = None  # the longest response a calibration's runs logged (response_length/max)
    lengths_from: str | None = None  # who chose the lengths: "plan.response_length" or the calibration file

    @classmethod
    def of(cls, cfg: Any) -> "Recipe":
        """The recipe of a config, with `plan.response_length` when the user sets it, else no lengths (every
        response at data.max_response_length); `at(calibration)` then gives the lengths a calibration was fitted at
        (the caller reads the calibration in force: model/calibration.py builds on this module)."""
        actor = cfg.actor_rollout_ref.actor
        epochs = actor.get("ppo_epochs")
        megatron = actor.get("megatron") or {}
        plan = cfg.get("plan") or {}
        mean = plan.get("response_length") if isinstance(plan, Mapping) else None
        recipe = cls(
            ppo_epochs=epochs if isinstance(epochs, int) and not isinstance(epochs, bool) and epochs > 0 else 1,
            overlap_ep=_flag(megatron, "override_transformer_config", "overlap_moe_expert_parallel_comm"),
            overlap_grad_reduce=_flag(megatron, "override_ddp_config", "overlap_grad_reduce"),
        )
        if isinstance(mean, int) and not isinstance(mean, bool) and mean > 0:
            return dataclasses.replace(recipe, response_length=mean, lengths_from="plan.response_length")
        return recipe

    def at(self, cal: "Calibration") -> "Recipe":
        """This recipe at the lengths `cal` was fitted at (a user's calibration whose runs logged them), unless the
        user set plan.response_length."""
        lengths = cal.lengths or {}
        if not lengths.get("response") or self.lengths_from == "plan.response_length":
            return self
        return dataclasses.replace(
            self,
            response_length=lengths["response"],
            prompt_length=lengths.get("prompt"),
            longest_response=lengths.get("longest"),
            lengths_from=f"calibration {cal.source}",
        )

    def timed(self, s: Settings) -> Settings:
        """The settings the time model runs on: responses at the expected mean when one is given, prompts at the
        logged mean and the logged longest response when a calibration gives them (never past the configured
        maxima: the configured lengths bound what a run can do)."""
        out = s
        if self.prompt_length is not None and self.prompt_length < s.prompt_length:
            out = dataclasses.replace(out, prompt_length=self.prompt_length)
        if self.response_length is not None and self.response_length < s.response_length:
            out = dataclasses.replace(out, response_length=self.response_length, response_cap=s.response_length)
        if self.longest_response is not None and out.response_length < self.longest_response <= s.response_length:
            out = dataclasses.replace(out, response_longest=self.longest_response)
        return out


@dataclass(frozen=True)
class Calibration:
    """Fitted efficiencies (share of peak per constant) and each phase's band (measured / predicted, low and high),
    with what they rest on; made by `model/calibration.py` from the shipped rows or a user's `calibrate` file."""

    efficiency: dict[str, float]
    band: dict[str, tuple[float, float]]
    source: str  # the file it came from
    rows: int  # measurements (shipped rows or the user's runs) it rests on
    device: str = "gpu"  # the device kind it predicts (`trainer.device`: gpu or npu), fitted per kind
    device_rows: int | None = None  # of `rows`, those measured on `device` (None: all)
    # The mean prompt, mean and longest response (tokens) its runs logged: predictions are made at them unless
    # plan.response_length says otherwise (None: fitted on published rows, no lengths to carry).
    lengths: Mapping[str, int] | None = None
    # Per constant, the runs of `device` whose measurements fit it (their ids); a constant absent was not fitted on
    # this device kind's runs (model/calibration.py says whence it came).
    support: Mapping[str, tuple[str, ...]] = dataclasses.field(default_factory=dict)
    # The smallest and largest model (bf16 bytes of every parameter) of the runs that fit `update_weights`.
    sync_bytes: tuple[float, float] | None = None

    def describe(self) -> str:
        own = self.rows if self.device_rows is None else self.device_rows
        of_them = f", {own} of them on {self.device}" if own != self.rows else ""
        return f"calibration {self.source} ({self.rows} measured rows{of_them})"


@dataclass(frozen=True)
class StepTime:
    """One step's prediction: each phase's seconds `a / efficiency + b` (`terms`), its band, the step's range.

    `total`, `low`, `high`: seconds of the step and its band (the sum of the phases' bands); `phases`: seconds
    by verl phase; `communication`: the collectives' seconds by kind inside those phases (informative)."""

    terms: dict[str, tuple[float, float]]
    calibration: Calibration
    communication: dict[str, float]
    tokens: float  # tokens of the step's sequences (prompt + response) as timed
    world: int
    response_length: int  # the response length the prediction assumes
    response_is_mean: bool  # True: plan.response_length (expected mean); False: data.max_response_length
    longest_response: int  # the longest response the rollout waits for (response_range)
    prompt_length: int = 0  # the prompt length it assumes
    lengths_from: str | None = None  # plan.response_length, or the calibration whose runs logged the lengths
    model_bytes: float = 0.0  # bf16 bytes of every parameter: the weight sync's size
    sync_floor: float = 0.0  # the weight sync's seconds over the links alone (its `b`): the fastest it can be

    @functools.cached_property
    def phases(self) -> dict[str, float]:
        eff = self.calibration.efficiency
        return phase_seconds(self.terms, eff)

    @property
    def total(self) -> float:
        return sum(self.phases.values())

    seconds = total

    @property
    def low(self) -> float:
        return sum(v * self.band(p)[0] for p, v in self.phases.items())

    def band(self, phase: str) -> tuple[float, float]:
        return phase_band(self.calibration, phase, self.phases[phase], self.sync_floor, self.model_bytes)

    def _sync_extrapolated(self) -> bool:
        return sync_extrapolated(self.calibration, self.model_bytes)

    def caveats(self) -> list[str]:
        """What this prediction rests on least, said where it bites (none: it rests on what it was fitted on)."""
        cal, out = self.calibration, []
        if self._sync_extrapolated() and cal.sync_bytes is not None:
            lo, hi = cal.sync_bytes
            out.append(
                f"weight sync of a {self.model_bytes / GB:.0f} GB model is not calibrated (fitted on runs of "
                f"{lo / GB:.0f}-{hi / GB:.0f} GB): its {self.phases['update_weights']:.0f} s is an extrapolation, "
                f"x{self.band('update_weights')[0]:.2f}-x{self.band('update_weights')[1]:.1f} (down to the "
                f"{self.sync_floor:.0f} s its gathers take over the links)"
            )
        short = [p for p in ("old_log_prob", "ref", "update_actor") if 0 < self.phases[p] < SHORT_PASS_S]
        if short:
            listed = ", ".join(f"{p} {self.phases[p]:.1f} s" for p in short)
            out.append(
                f"{listed}: no fixed per-pass cost is modelled (no published run measures one), so a pass this short "
                "is likely slower than predicted"
            )
        for constant, phases in (("log_prob", ("old_log_prob", "ref")), ("update", ("update_actor",))):
            runs = cal.support.get(constant, ())
            if len(runs) == 1 and any(self.phases[p] > 0 for p in phases):
                out.append(f"{cal.device} {'/'.join(phases)} efficiency rests on one run ({runs[0]})")
        return out

    @property
    def high(self) -> float:
        return sum(v * self.band(p)[1] for p, v in self.phases.items())

    @property
    def tokens_per_second_per_device(self) -> float:
        return self.tokens / self.total / self.world

    def device_hours(self, steps: int, seconds: float | None = None) -> float:
        return steps * (self.total if seconds is None else seconds) * self.world / 3600

    def phrase(self, steps: int | None = None) -> str:
        """'~80 s a step (60-110 s)', with the device-hours of `steps` steps and their range."""
        out = f"~{_round(self.total)} s a step ({_round(self.low)}-{_round(self.high)} s)"
        if steps:
            hours = [self.device_hours(steps, s) for s in (self.total, self.low, self.high)]
            out += f", ~{_round(hours[0])} device-hours ({_round(hours[1])}-{_round(hours[2])}) for {steps} steps"
        return out

    def assumption(self) -> str:
        """The lengths it assumes and who chose them, then its caveats."""
        if self.lengths_from and self.lengths_from != "plan.response_length":
            text = (
                f"prompts of {self.prompt_length} and responses of {self.response_length} tokens on average, the "
                f"longest {self.longest_response}, as the runs of {self.lengths_from} logged them "
                "(plan.response_length=N predicts at another mean)"
            )
        elif self.response_is_mean:
            text = (
                f"responses of {self.response_length} tokens on average (plan.response_length), "
                f"the longest {self.longest_response}"
            )
        else:
            text = (
                f"every response at data.max_response_length={self.response_length} "
                "(set plan.response_length=N, the expected mean)"
            )
        return "; ".join([text, *self.caveats()])

    def as_dict(self, steps: int | None = None) -> dict[str, Any]:
        hours = (
            None
            if steps is None
            else [round(self.device_hours(steps, s), 1) for s in (self.total, self.low, self.high)]
        )
        return {
            "seconds_per_step": round(self.total, 3),
            "low": round(self.low, 3),
            "high": round(self.high, 3),
            "tokens_per_second_per_device": round(self.tokens_per_second_per_device, 2),
            "phases": {k: round(v, 3) for k, v in self.phases.items()},
            "communication": {k: round(v, 3) for k, v in self.communication.items()},
            "response_length": self.response_length,
            "response_length_is_mean": self.response_is_mean,
            "longest_response": self.longest_response,
            "prompt_length": self.prompt_length,
            "lengths_from": self.lengths_from,
            "caveats": self.caveats(),
            "calibration": self.calibration.source,
            "calibration_rows": self.calibration.rows,
            "calibration_device": self.calibration.device,
            "calibration_device_rows": (
                self.calibration.rows if self.calibration.device_rows is None else self.calibration.device_rows
            ),
            "total_steps": steps,
            "device_hours": None if hours is None else hours[0],
            "device_hours_low": None if hours is None else hours[1],
            "device_hours_high": None if hours is None else hours[2],
        }


def sync_extrapolated(cal: Calibration, model_bytes: float) -> bool:
    """Whether a model of `model_bytes` is more than SYNC_EXTRAPOLATION x the largest run `cal`'s sync was fitted on."""
    return cal.sync_bytes is not None and model_bytes > SYNC_EXTRAPOLATION * cal.sync_bytes[1]


def phase_band(
    cal: Calibration, phase: str, seconds: float, sync_floor: float, model_bytes: float
) -> tuple[float, float]:
    """A phase's band (measured / predicted); a weight sync extrapolated past the runs that fit it reaches down to
    the links alone (its `b`, `sync_floor`): nothing measured says how little of the fitted part a larger model
    pays, only that it cannot pay less than the gathers."""
    low, high = cal.band[phase]
    if phase == "update_weights" and seconds > 0 and sync_extrapolated(cal, model_bytes):
        low = min(low, sync_floor / seconds)
    return low, high


def _round(x: float) -> str:
    """Two significant digits: the band says the third is noise."""
    if x <= 0:
        return "0"
    if x < 10:
        return f"{x:.1f}"
    return f"{float(f'{x:.2g}'):.0f}"


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


def _layer_flops(m: ModelFacts, context: float, per_token: float | None = None) -> float:
    """Mean forward FLOPs per decoder layer and token (lm_head excluded); `per_token`: the model's, when known."""
    return ((per_token or forward_flops_per_token(m, context)) - 2 * m.output) / m.num_layers


def stage_imbalance(
    m: ModelFacts, lo: Layout, split: Split, mtp: int, context: float, per_token: float | None = None
) -> float:
    """The slowest pipeline rank's FLOPs over the mean (1.0 at PP 1): the last rank also runs lm_head
    (2*V*h a token: ~4 decoder layers of 397B) and the MTP layers; uneven first/last stages exist
    to even this out (megatron-core get_num_layers_to_build). `per_token`: `forward_flops_per_token(m, context)`
    when the caller has it."""
    if lo.pp == 1 or split.layout is not None or split_problems(m.num_layers, lo.pp, lo.vpp, split):
        return 1.0  # a layout string (or a split megatron-core refuses) is taken as balanced
    chunks = chunk_layers(m.num_layers, lo.pp, lo.vpp, split)
    per_rank = [sum(chunks[i :: lo.pp]) for i in range(lo.pp)] if lo.vpp else chunks
    layer = _layer_flops(m, context, per_token)
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


def communication_units(m: ModelFacts, lo: Layout, s: Settings, rates: Rates, recipe: Recipe) -> dict[str, float]:
    """Seconds per device of one pass's collectives by kind (`tp`, `ep`, `etp`, `pp`; `cp`: one pass of the K/V
    ring, which the backward runs again), and of one step's distributed-optimizer collectives (`dp`). Every
    pass's collectives scale with the passes (`training_communication`), so a layout computes them once.

    Groups by megatron-core's rank order (tp-cp-ep-dp-pp; experts etp-ep-edp-pp), each keyed by its
    kind, never by (size, stride), so EP and DP x CP of the same shape stay two entries."""
    dp, edp = lo.dp, lo.expert_dp
    sp = s.sequence_parallel and lo.tp > 1
    tokens_dp = s.step_sequences * s.sequence_length / dp  # tokens one DP rank handles per pass
    tokens_rank = tokens_dp / lo.cp
    layers = m.num_layers / lo.pp
    h = m.hidden
    out = {}
    # TP: with SP 2 all-gather + 2 reduce-scatter of s*b*h per layer and pass (Korthikanti et al.
    # 2022); without SP the 2 all-reduces move the same bytes.
    tp_bytes = layers * 4 * tokens_rank * h * BF16 * (lo.tp - 1) / lo.tp
    out["tp"] = ring_seconds(tp_bytes, lo.tp, 1, lo, rates)
    # CP: K and V of each attention layer all-gathered around the ring (backward: their gradients too).
    kv = max(1, m.kv_heads // lo.tp) * m.head_dim
    cp_bytes = (m.attention_layers / lo.pp) * tokens_dp * 2 * kv * BF16
    out["cp"] = ring_seconds(cp_bytes * (lo.cp - 1) / lo.cp, lo.cp, lo.tp, lo, rates)
    # EP: dispatch + combine all-to-all of every routed copy of a token (top-k), per MoE layer and pass.
    routed = m.topk * tokens_rank / (lo.tp if sp else 1) * h * BF16
    out["ep"] = all_to_all_seconds(layers * 2 * routed * (lo.ep - 1) / lo.ep, lo.ep, lo.etp, lo, rates)
    # ETP: the expert MLPs' own all-gather / reduce-scatter of their routed tokens.
    out["etp"] = ring_seconds(layers * 2 * routed * (lo.etp - 1), lo.etp, 1, lo, rates)
    # PP: one activation (forward) and one gradient (backward) per micro-batch and virtual stage boundary.
    micro_tokens = rank_tokens(s.max_token_len, s.micro_batch, s.sequence_length, lo.cp)
    micro_batches = max(1.0, tokens_rank / micro_tokens)
    pp_bytes = micro_batches * (lo.vpp or 1) * micro_tokens * h * BF16 / (lo.tp if sp else 1)
    pp_time = ring_seconds(pp_bytes if lo.pp > 1 else 0, lo.pp, lo.world // lo.pp, lo, rates)
    out["pp"] = pp_time + micro_batches * (lo.vpp or 1) * _latency(lo.pp, lo.world // lo.pp, lo, rates)
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


def scaled_communication(
    units: Mapping[str, float], recipe: Recipe, passes_forward: int, passes_update: int, optimizer: bool = True
) -> dict[str, float]:
    """`communication_units` for these passes: `passes_forward` forwards, `passes_update` forward-equivalents of
    the update per epoch (`optimizer`: with the distributed optimizer's collectives)."""
    passes = passes_forward + passes_update * recipe.ppo_epochs  # forward-equivalents that communicate
    out = {k: passes * v for k, v in units.items()}
    out["cp"] = (passes + passes_update) * units["cp"]
    out["dp"] = units["dp"] if optimizer else 0.0
    return out


def training_communication(
    m: ModelFacts,
    lo: Layout,
    s: Settings,
    rates: Rates,
    recipe: Recipe,
    passes_forward: int,
    passes_update: int,
    optimizer: bool = True,
) -> dict[str, float]:
    """Seconds per kind of the update's and log-prob passes' collectives, per device and step (`optimizer`:
    with the distributed optimizer's gradient reduce-scatter and parameter all-gather)."""
    units = communication_units(m, lo, s, rates, recipe)
    return scaled_communication(units, recipe, passes_forward, passes_update, optimizer)


# -- the phases --------------------------------------------------------------------------------

Terms = tuple[float, float]  # (a: seconds at peak that the phase's efficiency scales, b: seconds it does not)


def response_spread(mean: int, longest: int | None) -> tuple[float, float]:
    """The shortest and longest response when lengths spread evenly around their `mean` up to `longest` (the
    configured maximum where `mean` is an expected mean): from 0 to twice the mean, or centred on the mean and cut
    at the maximum. Without a maximum above the mean every response is `mean` long."""
    high = float(mean if longest is None or longest <= mean else min(longest, 2 * mean))
    return 2 * mean - high, high


def response_range(s: Settings) -> tuple[int, float, float]:
    """The mean, shortest and longest response of the rollout `s` times (`response_spread`), all within what
    vLLM's max_model_len leaves after the prompt; the longest is the logged one where a run logged it (a few
    responses past the even spread, `rollout_terms`)."""
    response = min(s.response_length, max(1, s.rollout_length - s.prompt_length))
    room = None if s.max_model_len is None else s.max_model_len - s.prompt_length
    cap = s.response_cap if room is None else min(s.response_cap or response, room)
    shortest, longest = response_spread(response, cap)
    if s.response_longest is not None:
        logged = float(s.response_longest if room is None else min(s.response_longest, room))
        longest = max(longest, logged) if logged > response else longest
    return response, shortest, longest


def rollout_terms(m: ModelFacts, lo: Layout, s: Settings, e: MemoryEstimate, rates: Rates) -> Terms:
    """`gen`: each vLLM replica (TP x DP engines, experts over EP when on) runs its share of the sequences; prefill
    at peak FLOPs, decode iterations bound by the larger of HBM traffic and compute (both scaled by the `gen`
    efficiency), each layer's collectives not scaled.

    Decoding runs as vLLM schedules it: as many sequences at once as the cache holds, a waiting one admitted as
    soon as a running one ends (continuous batching), so the slots stay full while sequences wait; the last of
    them then run down to the longest response, fewer and fewer at a time (`response_spread`: lengths even from
    the shortest to the longest, the running count falling linearly, taken at its mean). A step waits for its
    longest response: with an expected mean below the maximum that tail costs iterations at small batches. A logged
    longest response past the even spread (twice the mean) is a few responses running alone to it: iterations of
    one sequence, bound by reading the weights."""
    groups = max(1, lo.world // lo.gen_tp)
    sequences = s.step_sequences / groups
    prompt = s.prompt_length
    response, shortest, longest = response_range(s)
    peak = rates.bf16_tflops * 1e12
    prefill = sequences * prompt * forward_flops_per_token(m, prompt / 2) / (lo.gen_tp * peak)
    batch = max(1.0, min(float(s.max_num_seqs), float(max(1, e.sequences_fit)), sequences))
    # Weights read per iteration: dense always, experts only those the batch's tokens touch.
    expert_split = lo.gen_ep if lo.gen_ep > 1 else lo.gen_tp
    expert_params = m.num_layers * m.experts * m.expert / expert_split
    dense_params = max(0.0, e.rollout_params_per_rank - expert_params)
    context = prompt + response / 2
    kv_token = e.rollout_breakdown["kv_per_token_kib"] * 1024
    state = e.rollout_breakdown["gdn_state_per_sequence_mib"] * 2**20

    def iteration(running: float) -> tuple[float, float]:
        """One decode iteration of `running` sequences: (HBM or compute bound seconds, collectives)."""
        routed_tokens = running * (lo.gen_ep // lo.gen_tp if lo.gen_ep > 1 else 1) * m.topk
        touched = 1 - (1 - 1 / m.experts) ** routed_tokens
        weights = BF16 * (dense_params + expert_params * touched)
        cache = running * (context * kv_token + 2 * state)  # GDN state read and written back
        memory = (weights + cache) / (rates.hbm_gbps * GB)
        compute = running * forward_flops_per_token(m, context) / lo.gen_tp / peak
        # Per layer: 2 TP all-reduces of the batch's hidden states, 2 EP all-to-alls of its routed copies.
        comm = 0.0
        if lo.gen_tp > 1:
            ar = 2 * running * m.hidden * BF16 * 2 * (lo.gen_tp - 1) / lo.gen_tp
            ring = ring_seconds(ar / 2, lo.gen_tp, 1, lo, rates)
            comm += m.num_layers * 2 * (_latency(lo.gen_tp, 1, lo, rates) + ring)
        if lo.gen_ep > 1:
            a2a = running * m.topk * m.hidden * BF16 * (lo.gen_ep - 1) / lo.gen_ep
            exchange = all_to_all_seconds(a2a, lo.gen_ep, 1, lo, rates)
            comm += m.num_layers * 2 * (_latency(lo.gen_ep, 1, lo, rates) + exchange)
        return max(memory, compute), comm

    last = min(sequences, batch)  # the sequences that run to the end together
    even = min(longest, 2.0 * response) if longest > response else longest  # where the even spread ends
    stretches = (  # (iterations, sequences running): slots full while others wait, then the last ones' run-down
        (max(0.0, sequences - batch) * response / batch, batch),
        (shortest, last),
        (even - shortest, last / 2),
        (longest - even, 1.0),  # a logged longest past the even spread: one response at a time
    )
    costs = [(n, iteration(running)) for n, running in stretches if n > 0]
    return prefill + sum(n * c[0] for n, c in costs), sum(n * c[1] for n, c in costs)


def gdn_state_seconds(m: ModelFacts, lo: Layout, tokens: float, rates: Rates) -> float:
    """One forward's HBM traffic of Gated DeltaNet's chunked kernel on one rank: the fp32 state (Hv x dk x dv) of
    every head written and read once per chunk of GDN_CHUNK tokens (fla chunk_gated_delta_rule), beside the
    matmuls' FLOPs; per device (heads split by TP)."""
    state = m.gdn_value_heads * m.gdn_key_dim * m.gdn_value_dim * FP32 * 2 / lo.tp
    return m.gdn_layers / lo.pp * tokens / GDN_CHUNK * state / (rates.hbm_gbps * GB)


def model_bytes(m: ModelFacts) -> float:
    """bf16 bytes of every parameter: what one weight sync moves to each device."""
    return BF16 * (m.params_total + m.mtp_extra)


def weight_sync_terms(m: ModelFacts, lo: Layout, rates: Rates) -> Terms:
    """`update_weights`: verl streams every full bf16 tensor (gathered over TP/EP/PP from Megatron) through
    buckets to each colocated vLLM worker, which keeps its shard: every device handles the whole model once.
    `a`: that model's bytes at HBM speed (the `update_weights` efficiency absorbs the bucket copies and the
    per-tensor overhead, which the published rows measure). `b`: the gathers over the links their groups cross
    (megatron-core rank order tp-cp-ep-dp-pp): each device receives the other pipeline stages' parameters
    (broadcast over PP), the other expert ranks' experts of its stage (EP) and the other TP ranks' shards, each
    byte once over its group's slowest link; not fitted (the rates of conf/hardware)."""
    total = model_bytes(m)
    experts = BF16 * m.num_layers * m.experts * m.expert
    stage, stage_experts = total / lo.pp, experts / lo.pp
    pp = ring_seconds(total - stage, lo.pp, lo.world // lo.pp, lo, rates)
    ep = ring_seconds(stage_experts * (lo.ep - 1) / lo.ep, lo.ep, lo.tp * lo.cp, lo, rates)
    tp = ring_seconds((stage - stage_experts) * (lo.tp - 1) / lo.tp, lo.tp, 1, lo, rates)
    return total / (rates.hbm_gbps * GB), pp + ep + tp


def offload_seconds(e: MemoryEstimate, s: Settings) -> float:
    """verl's param/optimizer offload: weights (and optimizer state) back and forth over PCIe each step."""
    b = e.train_breakdown
    moved = 0.0
    if s.param_offload:
        moved += 2 * (b["weights"] + b["gradients"])
    if s.optimizer_offload:
        moved += 2 * b["optimizer"]
    return moved * 2**30 / (PCIE_GBPS * GB)


# The training phases whose passes run in micro-batches: the update, the old-policy and the reference log-prob passes.
PASSES = ("update_actor", "old_log_prob", "ref")


def micro_tokens(s: Settings, lo: Layout) -> tuple[float, float, float]:
    """Tokens of one micro-batch on one rank (after CP) in each of `PASSES`: the old-policy pass with the
    rollout's keys, the reference pass with its own (the rollout's without a reference model)."""
    seq, cp = s.sequence_length, lo.cp
    old = rank_tokens(s.log_prob_max_token_len, s.log_prob_micro_batch, seq, cp)
    if s.ref_log_prob_micro_batch is None:
        ref = old
    else:
        ref = rank_tokens(s.ref_log_prob_max_token_len, s.ref_log_prob_micro_batch, seq, cp)
    return rank_tokens(s.max_token_len, s.micro_batch, seq, cp), old, ref


def micro_batches(s: Settings, lo: Layout, tokens: tuple[float, float, float]) -> tuple[float, float, float]:
    """Micro-batches per DP rank of each of `PASSES` (per mini-batch for the update), `tokens` their sizes
    (`micro_tokens`): smaller micro-batches, more of them."""
    seq = s.sequence_length
    if s.max_token_len:  # a rank's share of the mini-batch over its budget (`rank_tokens`)
        update = max(1.0, s.mini_batch_sequences / lo.dp * seq / lo.cp / s.max_token_len)
    else:
        update = max(1.0, s.mini_batch_sequences / (lo.dp * s.micro_batch))
    per_dp = s.step_sequences / lo.dp * seq / lo.cp
    return update, max(1.0, per_dp / tokens[1]), max(1.0, per_dp / tokens[2])


def bubbles(s: Settings, lo: Layout) -> dict[str, float]:
    """Each of `PASSES`' pipeline bubble factor 1 + (PP-1)/(VPP*m) (Narayanan et al. 2021), m its micro-batches."""
    counts = micro_batches(s, lo, micro_tokens(s, lo))
    return {phase: 1 + (lo.pp - 1) / ((lo.vpp or 1) * n) for phase, n in zip(PASSES, counts, strict=True)}


def training_terms(
    m: ModelFacts, lo: Layout, s: Settings, rates: Rates, recipe: Recipe = Recipe(), split: Split | None = None
) -> tuple[dict[str, Terms], dict[str, float]]:
    """The phases that depend on the training layout only (log-prob passes, update, weight sync), and the
    collectives' seconds by kind. `s`: the timed settings (`Recipe.timed`)."""
    split = split or Split(first=s.first_last[0], last=s.first_last[1])
    seq = s.sequence_length
    tokens = s.step_sequences * seq
    peak = rates.bf16_tflops * 1e12
    per_token = forward_flops_per_token(m, seq / 2)
    imbalance = stage_imbalance(m, lo, split, s.mtp_layers, seq / 2, per_token)
    one_forward = tokens * per_token * imbalance / (lo.world * peak)
    recompute = 1 if s.recompute_granularity == "full" else 0
    # Each pass: its GEMMs at its micro-batch's size (smaller ones run below the fitted MFU), times its bubble
    # (as `bubbles`).
    micro = micro_tokens(s, lo)
    count = micro_batches(s, lo, micro)
    stretch = (lo.pp - 1) / (lo.vpp or 1)
    update_x = gemm_slowdown(micro[0], m.hidden, lo.tp) * (1 + stretch / count[0])
    old_x = gemm_slowdown(micro[1], m.hidden, lo.tp) * (1 + stretch / count[1])
    ref_x = old_x if micro[2] == micro[1] else gemm_slowdown(micro[2], m.hidden, lo.tp) * (1 + stretch / count[2])
    update = (3 + recompute) * one_forward * recipe.ppo_epochs * update_x
    gdn = gdn_state_seconds(m, lo, tokens / lo.dp / lo.cp, rates)
    units = communication_units(m, lo, s, rates, recipe)
    forward_comm = scaled_communication(units, recipe, 1, 0, optimizer=False)
    update_comm = scaled_communication(units, recipe, 0, 2 + recompute)
    if recipe.overlap_ep:  # hidden behind the other micro-batches' compute but for the first
        update_comm["ep"] /= count[0]
    if recipe.overlap_grad_reduce:  # hidden behind the backward but for the last bucket (~ one stage's layer)
        update_comm["dp"] /= max(1.0, m.num_layers / lo.pp)
    lp_b = sum(forward_comm.values()) + gdn
    forwards = int(recipe.calculate_old_log_prob) + int(s.uses_reference)
    terms = {
        "old_log_prob": (one_forward * old_x, lp_b) if recipe.calculate_old_log_prob else (0.0, 0.0),
        "ref": (one_forward * ref_x, lp_b) if s.uses_reference else (0.0, 0.0),
        "update_actor": (update, sum(update_comm.values()) + (3 + recompute) * recipe.ppo_epochs * gdn),
        "update_weights": weight_sync_terms(m, lo, rates),
    }
    comm = {k: forwards * forward_comm[k] + update_comm[k] for k in update_comm}
    return terms, comm


def combine(
    rollout: Terms,
    training: tuple[dict[str, Terms], dict[str, float]],
    offload: float,
    s: Settings,
    lo: Layout,
    cal: Calibration,
    recipe: Recipe,
    facts: ModelFacts | None = None,
) -> StepTime:
    """A step from its rollout's and its training layout's terms (the planner computes each once); verl's
    offload (load before, offload after the actor's passes) counts in `update_actor`. `facts`: the model, for the
    weight sync's size (without them no extrapolation of the sync is said)."""
    terms, comm = training
    a, b = terms["update_actor"]
    ordered = {"gen": rollout, **terms, "update_actor": (a, b + offload)}
    return StepTime(
        terms={p: ordered[p] for p in PHASES},
        calibration=cal,
        communication=comm,
        tokens=s.step_sequences * s.sequence_length,
        world=lo.world,
        response_length=s.response_length,
        response_is_mean=recipe.response_length is not None and recipe.response_length == s.response_length,
        longest_response=round(response_range(s)[2]),
        prompt_length=s.prompt_length,
        lengths_from=recipe.lengths_from if s.response_length == recipe.response_length else None,
        model_bytes=0.0 if facts is None else model_bytes(facts),
        sync_floor=terms["update_weights"][1],
    )


def step_time(
    m: ModelFacts,
    lo: Layout,
    s: Settings,
    e: MemoryEstimate,
    rates: Rates,
    cal: Calibration,
    recipe: Recipe = Recipe(),
    split: Split | None = None,
) -> StepTime:
    """One GRPO step of this layout under calibration `cal`; `e`: the memory estimate (at the configured lengths)."""
    timed = recipe.timed(s)
    rollout = rollout_terms(m, lo, timed, e, rates)
    training = training_terms(m, lo, timed, rates, recipe, split)
    return combine(rollout, training, offload_seconds(e, s), timed, lo, cal, recipe, m)
