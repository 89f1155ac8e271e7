"""Every training and rollout layout the preflight accepts on one cluster, with its memory estimate, ranked.

The config is composed once (by the caller); layouts are varied in-process, never recomposed:

1. Candidates. Training: TP, PP, CP, ETP among the divisors of the world size, EP among the
   divisors of the model's expert count, VPP among the divisors of the layers per stage (or none);
   rollout: TP and DP among the divisors of the world size, EP 1 or TP*DP. The generator only
   proposes values; it decides nothing.
2. The judge is the preflight's own rule functions (`checks.layout.layout_problems`,
   `checks.rollout.rollout_problems`, `checks.batches.batch_problems`, ...) and the memory
   estimate of `verl_qwen35.estimate`; a layout with an error is dropped, one with warnings kept.
3. Ranking (`rank_key`): layouts that fit first, then those without warnings, then the cost model:
   - bytes a device sends across node boundaries per training step (`traffic`), in half-powers
     of two so near-equal volumes tie,
   - all communication, cross-node or not, likewise,
   - the pipeline bubble (PP-1)/(VPP*m), m micro-batches per update (Narayanan et al. 2021;
     Megatron-LM's interleaved schedule), to the percent,
   - memory headroom: the larger share of device memory left at the peak phase wins.
   The rollout layout paired with each training layout is the config's own when it fits, else
   the first that fits in `rollout_key` order.
4. `verify`: the listed layouts go through the whole preflight on the composed config with only
   `parallel.*` changed, exactly what `python -m verl_qwen35 <overrides> parallel.X=... dry_run=true`
   checks, so a listed layout is one the dry run accepts.

Communication volumes follow Megatron-LM's usual accounting (Korthikanti et al. 2022 for TP with
sequence parallelism: 4 all-gather/reduce-scatter of s*b*h per layer for a forward and backward),
with megatron-core's default rank order "tp-cp-ep-dp-pp" (`parallel_state.initialize_model_parallel`)
deciding which groups span nodes. They are for ranking, not a performance prediction.
"""

import copy
import dataclasses
import itertools
import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from omegaconf import DictConfig, OmegaConf

from verl_qwen35.checks import preflight
from verl_qwen35.checks.batches import batch_problems, uses_reference
from verl_qwen35.checks.layout import layout_problems, sequence_parallel_problems
from verl_qwen35.checks.problem import Problem
from verl_qwen35.checks.rollout import rollout_problems
from verl_qwen35.model.layout import Layout, divisors
from verl_qwen35.model.memory import MemoryEstimate, ModelFacts, Settings, estimate_layout

TRAINING = ("tp", "pp", "cp", "ep", "etp", "vpp")
ROLLOUT = ("gen_tp", "gen_dp", "gen_ep")
BF16 = 2
FP32 = 4


class Plain(dict):
    """A resolved config as plain dicts with attribute reads: the rule functions read `cfg.a.b`, and
    a plain dict answers ~100x faster than a DictConfig when thousands of layouts are judged."""

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError as err:
            raise AttributeError(name) from err

    @classmethod
    def of(cls, tree: Any) -> Any:
        if isinstance(tree, dict):
            return cls({k: cls.of(v) for k, v in tree.items()})
        if isinstance(tree, list):
            return [cls.of(v) for v in tree]
        return tree


@dataclass(frozen=True)
class Cost:
    """The ranking's inputs for one layout (per device, one training step)."""

    cross_node_gib: float
    total_comm_gib: float
    bubble: float
    headroom: float


@dataclass(frozen=True)
class Candidate:
    layout: Layout
    estimate: MemoryEstimate
    warnings: tuple[str, ...]
    cost: Cost

    @property
    def fits(self) -> bool:
        return self.estimate.fits

    def numbers(self) -> dict[str, Any]:
        return {name: getattr(self.layout, name) for name in (*TRAINING, *ROLLOUT)}


def _errors(found: list[Problem]) -> list[Problem]:
    return [p for p in found if p.level == "error"]


def _first_last(cfg: Any) -> tuple[int | None, int | None]:
    otc = cfg.megatron.override_transformer_config
    return otc.get("num_layers_in_first_pipeline_stage"), otc.get("num_layers_in_last_pipeline_stage")


def _vpp_choices(lo: Layout, layers: int, first_last: tuple[int | None, int | None]) -> list[int | None]:
    if lo.pp == 1 or any(n is not None for n in first_last) or layers % lo.pp:
        return [None]
    return [None, *divisors(layers // lo.pp)[1:]]


def training_layouts(cfg: Any, base: Layout, device: str, counter: list[int]) -> Iterator[tuple[Layout, list[Problem]]]:
    """Training layouts (rollout as in `base`) the layout and batch rules accept, with their warnings."""
    arch, world, first_last = cfg.model, base.world, _first_last(cfg)
    uses_ref = uses_reference(cfg)
    sizes = divisors(world)
    experts = [e for e in divisors(arch.num_experts) if e <= world]
    for tp in sizes:
        for pp in sizes:
            for cp in sizes:
                if tp * pp * cp > world:
                    break
                for etp in sizes:
                    for ep in experts:
                        if etp * ep * pp > world:
                            break
                        flat = dataclasses.replace(base, tp=tp, pp=pp, cp=cp, ep=ep, etp=etp, vpp=None)
                        for vpp in _vpp_choices(flat, arch.num_layers, first_last):
                            lo = dataclasses.replace(flat, vpp=vpp)
                            counter[0] += 1
                            found = layout_problems(lo, arch, device, first_last)
                            if not _errors(found):
                                found += batch_problems(cfg, lo, uses_ref) + sequence_parallel_problems(cfg, lo)
                            if not _errors(found):
                                yield lo, found
                            elif vpp is None:
                                break  # interleaving cannot mend a layout the rules refuse without it


def rollout_layouts(cfg: Any, base: Layout, counter: list[int]) -> Iterator[tuple[Layout, list[Problem]]]:
    """Rollout layouts (training as in `base`) the rollout rules accept."""
    world, engine = base.world, cfg.actor_rollout_ref.rollout.name
    sizes = divisors(world)
    for gen_tp in sizes:
        for gen_dp in sizes:
            if gen_tp * gen_dp > world:
                break
            for gen_ep in sorted({1, gen_tp * gen_dp}):
                lo = dataclasses.replace(base, gen_tp=gen_tp, gen_dp=gen_dp, gen_pp=1, gen_ep=gen_ep)
                counter[0] += 1
                found = rollout_problems(lo, cfg.model, engine)
                if not _errors(found):
                    yield lo, found


def _off_node(size: int, stride: int, per_node: int) -> float:
    """Share of a group's peers on other nodes, for ranks r, r+stride, ... (nodes hold consecutive ranks)."""
    if size <= 1:
        return 0.0
    same_node = max(1, min(size, per_node // stride)) if stride <= per_node else 1
    return 1 - (same_node - 1) / (size - 1)


def traffic(m: ModelFacts, lo: Layout, s: Settings) -> tuple[float, float]:
    """(cross-node, all) bytes one device sends per training step, by megatron-core's groups."""
    dp = lo.world // (lo.tp * lo.pp * lo.cp)
    edp = lo.world // (lo.etp * lo.ep * lo.pp)
    layers = m.num_layers / lo.pp
    attention_layers = m.attention_layers / lo.pp
    # Forward-equivalents per step: train forward + backward (2) + the old log-prob forward (+ the ref's).
    passes = 4 + (1 if s.uses_reference else 0)
    # Tokens a model-parallel group handles per step; sequence parallelism spreads them over TP.
    tokens = s.step_sequences * s.sequence_length / dp / lo.cp
    act = tokens * m.hidden * BF16
    volumes = {
        # TP + SP: 2 all-gather/reduce-scatter a layer per forward (Korthikanti et al. 2022).
        (lo.tp, 1): passes * layers * 2 * act * (lo.tp - 1) / lo.tp,
        # CP: the K/V of every attention layer circulate once around the CP ring per forward.
        (lo.cp, lo.tp): passes * attention_layers * tokens * 2 * m.kv_heads * m.head_dim * BF16 * (lo.cp - 1) / lo.cp,
        # EP: dispatch and combine all-to-all of each routed token copy, per MoE layer and forward.
        (lo.ep, lo.etp): passes * layers * 2 * act / lo.tp * m.topk * (lo.ep - 1) / lo.ep,
        # ETP: the expert MLPs' own tensor-parallel all-gather/reduce-scatter of their routed tokens.
        (lo.etp, 1): passes * layers * 2 * act / lo.tp * m.topk * (lo.etp - 1) / lo.etp,
        # PP: one activation send per (virtual) stage boundary per forward; VPP multiplies them.
        (lo.pp, lo.world // lo.pp): passes * (lo.vpp or 1) * act / lo.tp if lo.pp > 1 else 0.0,
    }
    # Distributed optimizer, once per update: reduce-scatter fp32 grads, all-gather bf16 params.
    updates = max(1, s.step_sequences // max(1, s.mini_batch_sequences))
    experts = layers * m.experts / lo.ep * m.expert / lo.etp
    dense = max(0.0, m.params_total / (lo.tp * lo.pp) - experts)
    volumes[(dp * lo.cp, lo.tp)] = updates * dense * (FP32 + BF16) * (dp * lo.cp - 1) / (dp * lo.cp)
    volumes[(edp, lo.etp * lo.ep)] = updates * experts * (FP32 + BF16) * (edp - 1) / edp
    per_node = lo.devices_per_node
    cross = sum(v * _off_node(size, stride, per_node) for (size, stride), v in volumes.items())
    return cross, sum(volumes.values())


def bubble(lo: Layout, s: Settings) -> float:
    """Pipeline bubble as a share of compute: (PP-1)/(VPP*m), m micro-batches per DP rank and update."""
    if lo.pp == 1:
        return 0.0
    dp = lo.world // (lo.tp * lo.pp * lo.cp)
    micro = max(1, s.mini_batch_sequences // (dp * max(1, s.micro_batch)))
    return (lo.pp - 1) / ((lo.vpp or 1) * micro)


def cost(m: ModelFacts, lo: Layout, s: Settings, e: MemoryEstimate) -> Cost:
    cross, total = traffic(m, lo, s)
    return Cost(
        cross_node_gib=cross / 2**30,
        total_comm_gib=total / 2**30,
        bubble=bubble(lo, s),
        headroom=1 - e.peak_gib / e.device_memory_gib,
    )


def _half_powers(gib: float) -> float:
    return round(2 * math.log2(1 + gib * 1024)) / 2


def partial_key(warnings: list[Problem] | tuple, k: Cost) -> tuple:
    """The rank key without what needs the memory estimate (fits, headroom)."""
    return (bool(warnings), _half_powers(k.cross_node_gib), _half_powers(k.total_comm_gib), round(k.bubble, 2))


def rank_key(c: Candidate) -> tuple:
    """Fits, no warnings, less cross-node traffic, less traffic, smaller bubble, more headroom."""
    return (not c.fits, *partial_key(c.warnings, c.cost), -c.cost.headroom)


def rollout_key(lo: Layout, own: Layout) -> tuple:
    """Rollout layouts to try, in order: the config's own, then vLLM engines and rollout EP groups
    inside one node, then more replicas (smaller TP*DP), then smaller TP."""
    per_node = lo.devices_per_node
    replica = lo.gen_tp * lo.gen_dp
    return (
        (lo.gen_tp, lo.gen_dp, lo.gen_ep) != (own.gen_tp, own.gen_dp, own.gen_ep),
        lo.gen_tp > per_node,
        lo.gen_ep > per_node,
        replica,
        lo.gen_tp,
    )


# Rollout layouts tried per training layout before it counts as not fitting.
ROLLOUT_TRIES = 12


@dataclass
class Search:
    """One search: the best accepted layouts that fit, and how much was judged."""

    candidates: list[Candidate]
    training_judged: int
    training_accepted: int
    rollout_judged: int
    rollout_accepted: int
    closest: list[Candidate]  # when nothing fits: the smallest peaks, to say how far off


def search(cfg: DictConfig, device: str, top: int = 10) -> Search:
    """Accepted layouts of this composed config's cluster and model that fit, best first (`top`; 0: all).

    Estimates are computed lazily in rank order, so a long list of accepted layouts costs only
    what the top needs."""
    plain = Plain.of(OmegaConf.to_container(cfg, resolve=True))
    own = Layout.of(plain)
    facts, settings = ModelFacts.of(plain.model), Settings.of(plain)
    trained, rolled = [0], [0]
    trainings = list(training_layouts(plain, own, device, trained))
    accepted = list(rollout_layouts(plain, own, rolled))
    rollout_warnings = {(lo.gen_tp, lo.gen_dp, lo.gen_ep): w for lo, w in accepted}
    rollouts = sorted((lo for lo, _ in accepted), key=lambda lo: rollout_key(lo, own))
    ordered = sorted(
        ((partial_key(w, cost_of_training(facts, lo, settings)), lo, w) for lo, w in trainings),
        key=lambda item: item[0],
    )
    listed: list[Candidate] = []
    closest: list[Candidate] = []
    for _, group in itertools.groupby(ordered, key=lambda item: item[0]):
        found = [_paired(facts, settings, lo, w, rollouts, rollout_warnings) for _, lo, w in group]
        listed += sorted((c for c in found if c.fits), key=rank_key)
        closest = sorted(closest + [c for c in found if not c.fits], key=lambda c: c.estimate.peak_gib)[:5]
        if top and len(listed) >= top:
            break
    return Search(listed[:top] if top else listed, trained[0], len(trainings), rolled[0], len(rollouts), closest)


def cost_of_training(m: ModelFacts, lo: Layout, s: Settings) -> Cost:
    cross, total = traffic(m, lo, s)
    return Cost(cross / 2**30, total / 2**30, bubble(lo, s), 0.0)


def _paired(
    m: ModelFacts,
    s: Settings,
    train: Layout,
    train_warnings: list[Problem],
    rollouts: list[Layout],
    rollout_warnings: dict[tuple[int, int, int], list[Problem]],
) -> Candidate:
    """This training layout with the first rollout layout (in `rollout_key` order) it fits with."""
    first = None
    for roll in rollouts[:ROLLOUT_TRIES]:
        lo = dataclasses.replace(train, gen_tp=roll.gen_tp, gen_dp=roll.gen_dp, gen_pp=1, gen_ep=roll.gen_ep)
        e = estimate_layout(m, lo, s)
        warnings = tuple(str(p) for p in [*train_warnings, *rollout_warnings[(roll.gen_tp, roll.gen_dp, roll.gen_ep)]])
        candidate = Candidate(lo, e, warnings, cost(m, lo, s, e))
        if e.fits:
            return candidate
        first = first or candidate
        if e.train_gib > e.device_memory_gib:
            break  # no rollout layout makes the training phase fit
    assert first is not None, "a search needs at least one accepted rollout layout"
    return first


def judge(cfg: DictConfig, lo: Layout) -> tuple[Candidate | None, list[Problem]]:
    """Any layout (e.g. the config's own) through the whole preflight, then estimated and costed like
    the search's: (candidate, errors); no candidate when the preflight refuses the layout."""
    resolved = with_layout(cfg, lo)
    found = preflight(resolved, machine_missing="warning")
    errors = [p for p in found if p.level == "error"]
    if errors:
        return None, errors
    plain = Plain.of(OmegaConf.to_container(resolved))
    m, s = ModelFacts.of(plain.model), Settings.of(plain)
    e = estimate_layout(m, lo, s)
    warnings = tuple(str(p) for p in found if p.level == "warning")
    return Candidate(lo, e, warnings, cost(m, lo, s, e)), []


def with_layout(cfg: DictConfig, lo: Layout) -> DictConfig:
    """The composed (unresolved) config with `parallel.*` set to this layout: what the override
    `parallel.X=...` on the command line gives, since every layout key interpolates `parallel.*`."""
    out = copy.deepcopy(cfg)
    for name in (*TRAINING, *ROLLOUT):
        out.parallel[name] = getattr(lo, name)
    OmegaConf.resolve(out)
    return out


def verify(cfg: DictConfig, lo: Layout) -> list[Problem]:
    """The dry run's whole preflight on this layout (missing local files are warnings, as in a dry run)."""
    return preflight(with_layout(cfg, lo), machine_missing="warning")


def verified(cfg: DictConfig, found: Search, top: int) -> tuple[list[Candidate], list[Problem]]:
    """The search's layouts that the whole preflight accepts (all of them, unless something outside
    the layout is wrong: then the first refusal's errors say what)."""
    kept: list[Candidate] = []
    first_refusal: list[Problem] = []
    for c in found.candidates:
        errors = [p for p in verify(cfg, c.layout) if p.level == "error"]
        if errors:
            first_refusal = first_refusal or errors
            continue
        kept.append(c)
        if top and len(kept) == top:
            break
    return kept, first_refusal
