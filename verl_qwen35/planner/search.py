"""Every training and rollout layout the preflight accepts on one cluster, ranked by predicted step time.

The config is composed once (by the caller); layouts are varied in-process, never recomposed:

1. Candidates. Training: TP, PP, CP, ETP among the divisors of the world size, EP among the
   divisors of the model's expert count, VPP among the divisors of the layers per stage (or none);
   where PP does not divide the layers, uneven first/last stages
   (`num_layers_in_first/last_pipeline_stage`, megatron-core `transformer_block.get_num_layers_to_build`)
   with the middle stages even, and VPP dividing every stage. Rollout: TP and DP among the divisors
   of the world size, EP 1 or TP*DP. The generator only proposes values; it decides nothing.
2. The judge is the preflight's own rule functions (`checks.layout.layout_problems`,
   `checks.rollout.rollout_problems`, `checks.batches.batch_problems`, ...) and the memory
   estimate of `model.memory.estimate_layout`; a layout with an error is dropped, one with warnings kept
   and listed. A warning that asks for a change (CP on NPU without MindSpeed's context_parallel_algo set)
   ranks its layout after those without; a note that changes nothing (sequence_parallel at TP 1,
   which verl turns off) does not rank. A training layout whose training phase does not fit at the
   config's micro-batch sizes (or token budgets) is tried at smaller ones (`planner.batches`: the
   largest halving of each pass that fits), timed at those, and carries the changed verl keys.
3. Ranking (`rank_key`): layouts that fit, without a warning asking for a change, by the
   predicted seconds of one GRPO step
   (`verl_qwen35.model.step_time`), then more memory headroom; one row per TP, PP, CP, EP, ETP
   (its fastest VPP and stage split). Each training layout is paired
   with the fastest rollout layout it fits with. Best-first: training layouts are visited in
   the order of a lower bound (their training seconds + the fastest rollout's), so the search
   stops once the next bound is slower than the `top`-th layout found (where smaller micro-batches may be
   given, the bound takes each pass's smallest pipeline bubble: `Model.bound`).
4. `verify`: the listed layouts go through the whole preflight, each as its own `Run` built by the one
   builder from the composed config with only `parallel.*` (and the first/last stage counts, and the
   micro-batch keys a layout changed) changed (`variant`), exactly what
   `python -m verl_qwen35 <overrides> parallel.X=... dry_run=true` checks.
"""

import dataclasses
import functools
import heapq
import math
import operator
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from omegaconf import DictConfig, OmegaConf

from verl_qwen35.builder.build import build_run
from verl_qwen35.checks import preflight
from verl_qwen35.checks.batches import batch_problems, uses_reference
from verl_qwen35.checks.known_issues import config_problems
from verl_qwen35.checks.layout import layout_problems, sequence_parallel_problems
from verl_qwen35.checks.megatron_keys import rules_mcore
from verl_qwen35.checks.problem import Problem
from verl_qwen35.checks.rollout import rollout_problems
from verl_qwen35.checks.sections import structure_problems
from verl_qwen35.model.calibration import calibration_of
from verl_qwen35.model.layout import Layout, divisors
from verl_qwen35.model.memory import MemoryEstimate, ModelFacts, Settings, estimate_layout
from verl_qwen35.model.pipeline import Split
from verl_qwen35.model.run import Run
from verl_qwen35.model.step_time import (
    Calibration,
    Rates,
    Recipe,
    StepTime,
    Terms,
    bubbles,
    combine,
    offload_seconds,
    phase_seconds,
    rollout_terms,
    stage_imbalance,
    training_terms,
)
from verl_qwen35.planner import batches

TRAINING = ("tp", "pp", "cp", "ep", "etp", "vpp")
ROLLOUT = ("gen_tp", "gen_dp", "gen_ep")
OTC = "megatron.override_transformer_config"
FIRST, LAST = "num_layers_in_first_pipeline_stage", "num_layers_in_last_pipeline_stage"


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
class Candidate:
    layout: Layout
    split: Split  # the pipeline split (uneven first/last stage counts) this layout uses
    estimate: MemoryEstimate
    warnings: tuple[str, ...]
    time: StepTime
    actionable: bool = False  # a warning asks for a change (not a mere note such as SP at TP 1)
    tier: int = 0  # 1: within the band of the fastest (the model cannot tell them apart); 2: slower; 0: unranked
    # verl's micro-batch keys this layout changes to fit (planner/batches.py), e.g.
    # (("actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu", 2),); empty: the config's own sizes.
    batches: tuple[tuple[str, int], ...] = ()

    @property
    def fits(self) -> bool:
        return self.estimate.fits

    @property
    def headroom(self) -> float:
        return 1 - self.estimate.peak_gib / self.estimate.device_memory_gib

    def numbers(self) -> dict[str, Any]:
        out = {name: getattr(self.layout, name) for name in (*TRAINING, *ROLLOUT)}
        return out | {FIRST: self.split.first, LAST: self.split.last} | dict(self.batches)


def _errors(found: list[Problem]) -> list[Problem]:
    return [p for p in found if p.level == "error"]


def user_split(cfg: Any) -> Split:
    return Split.of(cfg.megatron.override_transformer_config)


def pipeline_splits(layers: int, pp: int, own: Split, imbalance: Any = None) -> list[tuple[Split, list[int | None]]]:
    """(split, VPP choices) to try at this PP. A user's layout string or embedding/loss accounting is
    kept as given; otherwise even stages when PP divides the layers, and of the first/last pairs that
    leave the middle stages even (megatron-core transformer_block.get_num_layers_to_build), the one
    that best evens out the stages' work (`imbalance(split)`: lm_head weighs ~4 decoder layers of
    these models) and the best one that admits VPP > 1 (every stage divisible by it)."""
    if own.layout is not None or own.embedding or own.loss:
        return [(own, [None])]
    if pp == 1:
        return [(Split(), [None])]
    found: list[tuple[Split, list[int | None]]] = []
    if layers % pp == 0:
        found.append((Split(), [None, *divisors(layers // pp)[1:]]))
    uneven: list[tuple[Split, list[int | None]]] = []
    per = layers / pp
    for first in range(1, int(per) + 3):
        for last in range(1, int(per) + 3):
            middle_layers, middle_stages = layers - first - last, pp - 2
            if middle_stages == 0:
                if middle_layers:
                    continue
                counts = [first, last]
            elif middle_layers <= 0 or middle_layers % middle_stages:
                continue
            else:
                counts = [first, middle_layers // middle_stages, last]
            if max(counts) - min(counts) > 4 or len(set(counts)) == 1:
                continue  # far from balanced (never faster), or the even split again
            common = [d for d in divisors(min(counts))[1:] if all(c % d == 0 for c in counts)]
            uneven.append((Split(first=first, last=last), [None, *common]))
    if imbalance is None or not uneven:
        return found + uneven
    by_work = sorted(uneven, key=lambda item: (imbalance(item[0]), item[0].first, item[0].last))
    found.append(by_work[0])
    found += [item for item in by_work if len(item[1]) > 1][:1] if len(by_work[0][1]) == 1 else []
    return found


def training_layouts(
    cfg: Any,
    base: Layout,
    device: str,
    counter: list[int],
    facts: ModelFacts | None = None,
    mcore: tuple[int, int] | None = None,
) -> Iterator[tuple[Layout, Split, list[Problem], list[Problem]]]:
    """Training layouts (rollout as in `base`) the layout and batch rules accept, with their warnings
    and their notes (warnings that change nothing: sequence_parallel at TP 1, which verl turns off);
    with `facts`, only the uneven stage splits that best even out the work (see `pipeline_splits`);
    `mcore`: the megatron-core release whose rules apply, as the preflight picks it (`rules_mcore`)."""
    arch, world, own = cfg.model, base.world, user_split(cfg)
    uses_ref = uses_reference(cfg)
    otc = cfg.megatron.override_transformer_config or {}
    mtp, cp_algo = otc.get("mtp_num_layers"), otc.get("context_parallel_algo")
    sizes = divisors(world)
    experts = [e for e in divisors(arch.num_experts) if e <= world]
    for tp in sizes:
        for pp in sizes:
            staged = dataclasses.replace(base, pp=pp, vpp=None)
            work = None
            if facts is not None:
                context = (cfg.data.max_prompt_length + cfg.data.max_response_length) / 2

                def work(split: Split, staged: Layout = staged, context: float = context) -> float:
                    return stage_imbalance(facts, staged, split, int(mtp or 0), context)

            splits = pipeline_splits(arch.num_layers, pp, own, work)
            for cp in sizes:
                if tp * pp * cp > world:
                    break
                for etp in sizes:
                    for ep in experts:
                        if etp * ep * pp > world:
                            break
                        flat = dataclasses.replace(base, tp=tp, pp=pp, cp=cp, ep=ep, etp=etp, vpp=None)
                        for split, vpps in splits:
                            for vpp in vpps:
                                lo = dataclasses.replace(flat, vpp=vpp)
                                counter[0] += 1
                                found = layout_problems(
                                    lo, arch, device, split=split, mcore=mcore, mtp=mtp, cp_algo=cp_algo
                                )
                                if not _errors(found):
                                    found += batch_problems(cfg, lo, uses_ref)
                                if not _errors(found):
                                    yield lo, split, found, sequence_parallel_problems(cfg, lo)
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


def rank_key(c: Candidate) -> tuple:
    """Fits, no warning asking for a change, fewer predicted seconds per step, more memory headroom."""
    return (not c.fits, c.actionable, round(c.time.seconds, 2), -c.headroom)


# A layout with less memory headroom than this never ranks first (`verl-qwen35 plan --min-headroom`).
MIN_HEADROOM = 0.10


def crossing_groups(lo: Layout) -> int:
    """How many of the layout's group kinds (TP, CP, EP, ETP, DP, PP) span more than one node (megatron-core's
    rank order tp-cp-ep-dp-pp; experts etp-ep-edp-pp): each such group's traffic leaves the node."""
    kinds = (
        (lo.tp, 1),
        (lo.cp, lo.tp),
        (lo.ep, lo.etp),
        (lo.etp, 1),
        (lo.dp, lo.tp * lo.cp),
        (lo.pp, lo.world // lo.pp),
    )
    return sum(1 for size, stride in kinds if size > 1 and size * stride > lo.devices_per_node)


# Tier 1 orders memory headroom in steps of this share (floor): 26% and 29% are one step (25-30%), where fewer
# groups crossing nodes decide; the plan prints each tier-1 row's step beside its headroom.
HEADROOM_STEP = 0.05


def headroom_step(headroom: float) -> int:
    """The 5% step (its lower end, in %) tier 1 orders a layout's headroom by."""
    step = round(HEADROOM_STEP * 100)
    return int(math.floor(round(headroom * 100, 6) / step) * step)


def tiered(cands: list[Candidate], own: Layout | None = None, min_headroom: float = MIN_HEADROOM) -> list[Candidate]:
    """Tier 1: the layouts that fit without a warning asking for a change whose predicted step lies within the
    band of the fastest one's (its `high`): the model cannot tell them apart, so they are ordered by what an
    operator values, in this order: headroom at or above `min_headroom` first (a layout under it never ranks
    first), more headroom in steps of 5% (`headroom_step`), fewer group kinds crossing nodes (`crossing_groups`),
    the config's own (shipped) layout, then fewer predicted seconds. The rest (tier 2) follow by predicted
    seconds. docs/planning.md ("Ranking") and the plan's `tiers:` line state the same order."""
    ranked = sorted(cands, key=rank_key)
    clean = [c for c in ranked if c.fits and not c.actionable]
    if not clean:
        return [dataclasses.replace(c, tier=2) for c in ranked]
    fastest = clean[0].time
    first = [c for c in clean if c.time.total <= fastest.high]

    def operator(c: Candidate) -> tuple:
        base = (
            dataclasses.replace(c.layout, gen_tp=own.gen_tp, gen_dp=own.gen_dp, gen_pp=own.gen_pp, gen_ep=own.gen_ep)
            if own
            else None
        )
        return (
            c.headroom < min_headroom,
            -headroom_step(c.headroom),
            crossing_groups(c.layout),
            own is None or shape_of(c.layout) != shape_of(own) or base != own,
            c.time.total,
        )

    ones = {id(c) for c in first}
    return [dataclasses.replace(c, tier=1) for c in sorted(first, key=operator)] + [
        dataclasses.replace(c, tier=2) for c in ranked if id(c) not in ones
    ]


@dataclass(frozen=True)
class Model:
    """What every candidate of one search shares: facts, settings, rates, efficiencies, recipe."""

    facts: ModelFacts
    settings: Settings
    rates: Rates
    calibration: Calibration
    recipe: Recipe

    @classmethod
    def of(cls, plain: Any, run: Run | None = None) -> "Model":
        """`run`: its facts and settings, read once when it was built (else read from `plain`)."""
        facts = run.facts if run is not None and run.facts is not None else ModelFacts.of(plain.model)
        settings = run.settings if run is not None and run.settings is not None else Settings.of(plain)
        cal = calibration_of(plain)
        return cls(facts, settings, Rates.of(plain.hardware), cal, Recipe.of(plain).at(cal))

    def settings_for(self, split: Split, settings: Settings | None = None) -> Settings:
        """The config's settings (or `settings`: smaller micro-batches) with this stage split."""
        s = settings or self.settings
        if (split.first, split.last) == s.first_last:
            return s
        return dataclasses.replace(s, first_last=(split.first, split.last))

    @functools.cached_property
    def timed(self) -> Settings:
        """The settings the time model runs on (the stage split aside, which the time model takes apart)."""
        return self.recipe.timed(self.settings)

    def candidate(
        self,
        lo: Layout,
        split: Split,
        warnings: tuple[str, ...],
        train: Any,
        actionable: bool = False,
        gen: Terms | None = None,
        settings: Settings | None = None,
    ) -> Candidate:
        """`gen`: the rollout layout's terms when already computed (they depend on the rollout layout only);
        `settings`: smaller micro-batches than the config's (`planner.batches`), which the candidate names."""
        s = self.settings_for(split, settings)
        e = estimate_layout(self.facts, lo, s)
        timed = self.recipe.timed(s)
        rollout = gen if gen is not None else rollout_terms(self.facts, lo, timed, e, self.rates)
        time = combine(rollout, train, offload_seconds(e, s), timed, lo, self.calibration, self.recipe, self.facts)
        return Candidate(lo, split, e, warnings, time, actionable, batches=batches.changed(self.settings, s))

    def training(
        self, lo: Layout, split: Split, settings: Settings | None = None
    ) -> tuple[dict[str, Terms], dict[str, float]]:
        timed = self.timed if settings is None else self.recipe.timed(settings)
        return training_terms(self.facts, lo, timed, self.rates, self.recipe, split)

    def bound(self, lo: Layout, train: tuple[dict[str, Terms], dict[str, float]]) -> float:
        """A lower bound of this training layout's seconds under any micro-batches it may be given: at the
        config's, or (when a pass can be made smaller) with each pass's GEMMs at the config's size but its
        pipeline bubble at the smallest size's (smaller micro-batches, more of them, less bubble), and without
        the expert all-to-all where it overlaps (hidden behind all micro-batches but the first)."""
        terms, comm = train
        if lo.pp == 1 and not self.recipe.overlap_ep:
            return self.seconds(terms)
        least = batches.smallest(self.settings, lo)
        if least is self.settings:
            return self.seconds(terms)
        scaled = dict(terms)
        if lo.pp > 1:
            now, fewest = bubbles(self.timed, lo), bubbles(self.recipe.timed(least), lo)
            scaled = {p: (a * fewest[p] / now[p], b) if p in now else (a, b) for p, (a, b) in terms.items()}
        if self.recipe.overlap_ep:
            a, b = scaled["update_actor"]
            scaled["update_actor"] = (a, max(0.0, b - comm["ep"]))
        return self.seconds(scaled)

    def seconds(self, terms: dict[str, Terms]) -> float:
        """Seconds of these phases under the calibration (a bound for the search's order)."""
        return sum(phase_seconds(terms, self.calibration.efficiency).values())


@dataclass
class Search:
    """One search: the best accepted layouts that fit, and how much was judged."""

    candidates: list[Candidate]
    training_judged: int
    training_accepted: int
    rollout_judged: int
    rollout_accepted: int
    closest: list[Candidate]  # when nothing fits: the smallest peaks, to say how far off
    tier_size: int = 0  # parallel shapes in tier 1 (listed or not): how many the model cannot tell apart
    fastest: Candidate | None = None  # the fastest layout without a warning asking for a change: tier 1's band
    tier_one: list[Candidate] = dataclasses.field(default_factory=list)  # the whole tier 1, in its order


# Rollout layouts tried per training layout (fastest first) before it counts as not fitting.
ROLLOUT_TRIES = 12


def search(run: Run, device: str | None = None, top: int = 10, min_headroom: float = MIN_HEADROOM) -> Search:
    """Accepted layouts of this run's cluster and model that fit, fastest first (`top`; 0: all); `device` defaults
    to the run's.

    The rollout's seconds depend only on the rollout layout, the training's only on the training
    layout, so both are computed once each; memory estimates run lazily in the order of
    training + fastest rollout, a lower bound of every pairing's time."""
    resolved = run.config
    device = device or run.device
    plain = Plain.of(OmegaConf.to_container(resolved, resolve=True))
    own = run.layout or Layout.of(plain)  # None: a layout the values leave undefined, which Layout.of names
    model = Model.of(plain, run)
    trained, rolled = [0], [0]
    trainings = list(training_layouts(plain, own, device, trained, model.facts, rules_mcore(resolved)))
    accepted = list(rollout_layouts(plain, own, rolled))
    rollout_warnings = {(lo.gen_tp, lo.gen_dp, lo.gen_ep): w for lo, w in accepted}
    rollouts = []
    for lo, w in accepted:  # vLLM's weights, KV bytes and cache size do not depend on the training layout
        e = estimate_layout(model.facts, lo, model.settings)
        gen = rollout_terms(model.facts, lo, model.timed, e, model.rates)
        rollouts.append((bool(w), model.seconds({"gen": gen}), lo, gen))
    rollouts.sort(key=lambda item: item[:2])  # without warnings first, then fastest
    fastest = min((seconds for _, seconds, _, _ in rollouts), default=0.0)
    # (a warning asks for a change, a lower bound of the step's seconds): no pairing ranks before its bound.
    ordered = sorted(
        (
            ((bool(w), model.bound(lo, train) + fastest), lo, split, w, notes, train)
            for lo, split, w, notes in trainings
            for train in [model.training(lo, split)]
        ),
        key=lambda item: item[0],
    )
    best: dict[tuple[int, ...], tuple[tuple, Candidate]] = {}  # per parallel shape: its fastest VPP and split
    closest: list[Candidate] = []
    fastest_clean: Candidate | None = None  # tier 1 is what lies within this one's band: it is searched whole
    threshold = (True, float("inf"))  # the top-th listed layout's (actionable, seconds): no later bound beats it
    for bound, lo, split, w, notes, train in ordered:
        if bound > threshold:
            break
        shape = shape_of(lo)
        if shape in best and _cannot_beat(bound, best[shape][1]):
            continue  # another VPP or stage split of a shape found faster: it cannot replace it
        c = _paired(model, lo, split, w, notes, train, rollouts, rollout_warnings, plain)
        key = rank_key(c)
        if not c.fits:
            closest = sorted([*closest, c], key=lambda c: c.estimate.peak_gib)[:5]
            continue
        if shape in best and key >= best[shape][0]:
            continue
        best[shape] = (key, c)
        if not c.actionable and (fastest_clean is None or key < rank_key(fastest_clean)):
            fastest_clean = c
        if top and len(best) >= top:
            kth = heapq.nsmallest(top, best.values(), key=operator.itemgetter(0))[-1][1]
            band = fastest_clean.time.high if fastest_clean is not None else 0.0
            threshold = (kth.actionable, max(kth.time.seconds, band))
    listed = tiered([c for _, c in best.values()], own, min_headroom)
    ones = sum(1 for c in listed if c.tier == 1)
    kept = listed[:top] if top else listed
    tier_one = [c for c in listed if c.tier == 1]
    return Search(kept, trained[0], len(trainings), rolled[0], len(rollouts), closest, ones, fastest_clean, tier_one)


def _cannot_beat(bound: tuple[bool, float], found: Candidate) -> bool:
    """A pairing whose (warning flag, lower bound of seconds) is beyond `found`'s rank can never rank before it
    (`rank_key` rounds seconds to 0.01)."""
    return bound[0] > found.actionable or (bound[0] == found.actionable and bound[1] > found.time.seconds + 0.01)


def shape_of(lo: Layout) -> tuple[int, ...]:
    """TP, PP, CP, EP, ETP: layouts that differ only in VPP or the stage split are one row of the plan."""
    return (lo.tp, lo.pp, lo.cp, lo.ep, lo.etp)


def _paired(
    model: Model,
    train: Layout,
    split: Split,
    train_warnings: list[Problem],
    train_notes: list[Problem],
    train_parts: Any,
    rollouts: list[tuple[bool, float, Layout, Terms]],
    rollout_warnings: dict[tuple[int, int, int], list[Problem]],
    plain: Any,
) -> Candidate:
    """This training layout with the fastest rollout layout (without warnings first) it fits with; when its
    training phase does not fit at the config's micro-batches, at the largest smaller ones that fit
    (`planner.batches`: the training phase does not depend on the rollout layout), timed at those."""
    first = None
    settings = None  # the config's micro-batches until they are found not to fit
    for _, _, roll, gen in rollouts[:ROLLOUT_TRIES]:
        lo = dataclasses.replace(train, gen_tp=roll.gen_tp, gen_dp=roll.gen_dp, gen_pp=1, gen_ep=roll.gen_ep)
        actionable = [*train_warnings, *rollout_warnings[(roll.gen_tp, roll.gen_dp, roll.gen_ep)]]
        warnings = tuple(str(p) for p in [*actionable, *train_notes])
        candidate = model.candidate(lo, split, warnings, train_parts, bool(actionable), gen, settings)
        if candidate.estimate.train_gib > candidate.estimate.device_memory_gib and settings is None:
            configured = model.settings_for(split)
            smaller = batches.fitting(
                plain,
                lo,
                configured,
                lambda s, lo=lo: estimate_layout(model.facts, lo, s),
                candidate.estimate,
                configured.uses_reference,
            )
            if smaller is not None:
                settings = smaller[0]
                train_parts = model.training(train, split, settings)
                candidate = model.candidate(lo, split, warnings, train_parts, bool(actionable), gen, settings)
        if candidate.fits:
            return candidate
        first = first or candidate
        if candidate.estimate.train_gib > candidate.estimate.device_memory_gib:
            break  # no rollout layout makes the training phase fit
    assert first is not None, "a search needs at least one accepted rollout layout"
    return first


def judge(run: Run, lo: Layout, split: Split | None = None) -> tuple[Candidate | None, list[Problem]]:
    """Any layout (e.g. the run's own) through the whole preflight, then estimated and timed like the search's:
    (candidate, errors); no candidate when the preflight refuses the layout. The layout's own `Run` is a variant of
    `run` (`variant`)."""
    candidate = variant(run, lo, split)
    found = dry_run_problems(candidate)
    errors = [p for p in found if p.level == "error"]
    if errors:
        return None, errors
    model = Model.of(Plain.of(OmegaConf.to_container(candidate.config)), candidate)
    split = candidate.split or user_split(candidate.config)
    warnings = tuple(str(p) for p in found if p.level == "warning")
    return model.candidate(lo, split, warnings, model.training(lo, split)), []


def split_overrides(split: Split) -> dict[str, int | None]:
    return {f"{OTC}.{FIRST}": split.first, f"{OTC}.{LAST}": split.last}


def layout_changes(
    composed: DictConfig, lo: Layout, split: Split | None = None, changed: tuple[tuple[str, int], ...] = ()
) -> dict[str, Any]:
    """The keys a layout sets on the composed config: `parallel.*` (and the first/last stage counts to `split`'s,
    verl's micro-batch keys to `changed`): what the overrides `parallel.X=...`, `++megatron...=N` and
    `actor_rollout_ref....=N` give, since every layout key interpolates `parallel.*` and the ref and actor read
    `megatron.*`."""
    out: dict[str, Any] = {f"parallel.{name}": getattr(lo, name) for name in (*TRAINING, *ROLLOUT)}
    out |= dict(changed)  # a value in place of the config's (or its interpolation)
    if split is not None and split.layout is None:
        otc = composed.megatron.override_transformer_config
        for key, value in ((FIRST, split.first), (LAST, split.last)):
            if value is not None or key in otc:
                out[f"{OTC}.{key}"] = value
    return out


def variant(run: Run, lo: Layout, split: Split | None = None, changed: tuple[tuple[str, int], ...] = ()) -> Run:
    """The `Run` of this layout: the one builder's, from `run`'s composed config with the layout's keys changed
    (`layout_changes`), so the candidate is checked exactly as `python -m verl_qwen35 <overrides> parallel.X=...`
    would be. `run` must keep its composed config (`build_run(..., keep_composed=True)`)."""
    composed = composed_of(run)
    return build_run(
        composed, run.choices, run.output_dir, run.mode, changes=layout_changes(composed, lo, split, changed)
    )[0]


def composed_of(run: Run) -> DictConfig:
    """The composed (unresolved) config the planner varies: the Run's kept one."""
    if run.composed is None:
        raise ValueError("the planner varies the composed config: build the Run with keep_composed=True")
    return run.composed


def dry_run_problems(run: Run) -> list[Problem]:
    """What a dry run of this run finds (run/job.py `problems`, dry mode): the preflight, missing local files as
    warnings, and the known upstream issues it would meet (the shipped table, this shell's environment)."""
    found = preflight(run, machine_missing="warning")
    if not structure_problems(run.config):
        found += config_problems(run.config, (), os.environ)
    return found


def verify(
    run: Run, lo: Layout, split: Split | None = None, changed: tuple[tuple[str, int], ...] = ()
) -> list[Problem]:
    """The dry run's findings on this layout (missing local files are warnings, as in a dry run), with the known
    upstream issues it would meet (the shipped table and the shell's environment, as the dry run reads them; a
    team's own table is read by the dry run of the printed command)."""
    return dry_run_problems(variant(run, lo, split, changed))


def verified(run: Run, found: Search, top: int) -> tuple[list[Candidate], list[Problem]]:
    """The search's layouts that the whole preflight accepts (all of them, unless something outside
    the layout is wrong: then the first refusal's errors say what), each with the warnings a dry run of
    it prints (little memory headroom among them) beside the search's own."""
    kept: list[Candidate] = []
    first_refusal: list[Problem] = []
    for c in found.candidates:
        found_here = verify(run, c.layout, c.split, c.batches)
        errors = [p for p in found_here if p.level == "error"]
        if errors:
            first_refusal = first_refusal or errors
            continue
        warned = [str(p) for p in found_here if p.level == "warning"]
        kept.append(dataclasses.replace(c, warnings=tuple(dict.fromkeys([*c.warnings, *warned]))))
        if top and len(kept) == top:
            break
    return kept, first_refusal
