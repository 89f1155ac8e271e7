"""What `verl-qwen35 plan` decides: the run it plans (validated before any search), the override line and option
name of a layout, whether a layout is the config's own or in tier 1, and which layouts run as trials.

cli/plan.py parses the command line and prints; the search is planner/search.py, the files a sweep writes
run/layout_sweep.py.
"""

import dataclasses
from pathlib import Path

from verl_qwen35.builder.build import build_run
from verl_qwen35.checks.layout import positive_problems
from verl_qwen35.checks.problem import Problem
from verl_qwen35.checks.schedule import train_rows, training_steps
from verl_qwen35.config import compose
from verl_qwen35.config.line_breaks import check_line_breaks
from verl_qwen35.errors import UserError
from verl_qwen35.model.calibration import calibration_of
from verl_qwen35.model.layout import Layout
from verl_qwen35.model.memory import InputError
from verl_qwen35.model.pipeline import Split
from verl_qwen35.model.run import Run
from verl_qwen35.planner.batches import KEYS as BATCH_KEYS
from verl_qwen35.planner.search import (
    MIN_HEADROOM,
    ROLLOUT,
    TRAINING,
    Candidate,
    Search,
    search,
    split_overrides,
    user_split,
    verified,
)
from verl_qwen35.planner.trials import spread
from verl_qwen35.planner.whole_run import inputs, layout_of

PROG = "verl-qwen35 plan"

LAYOUT_KEYS = {f"parallel.{name}" for name in (*TRAINING, *ROLLOUT)} | set(split_overrides(Split()))


# Short names of verl's micro-batch keys in a sweep's option names (planner/batches.py PASSES' order).
SHORT = dict(zip(BATCH_KEYS, ("mb", "tok", "lpmb", "lptok", "refmb", "reftok"), strict=True))


# The search enumerates divisor combinations of the world size: 1024 x 8 takes ~13 s on a 2-core
# machine, and its cost grows faster than the world. Larger clusters are refused with a message.
MAX_DEVICES = 8192


class UsageError(UserError):
    """A mistake in the command line: one message, exit 2 (errors.answered prints it)."""


def overrides_of(
    lo: Layout, split: Split | None = None, base_split: Split | None = None, changed: tuple[tuple[str, int], ...] = ()
) -> list[str]:
    """`parallel.*` overrides, plus the first/last stage counts when this layout (or the base config) sets them,
    plus verl's micro-batch keys the planner made smaller for this layout to fit (`changed`)."""
    values = {name: getattr(lo, name) for name in (*TRAINING, *ROLLOUT)}
    out = [f"parallel.{name}={'null' if value is None else value}" for name, value in values.items()]
    split, base = split or Split(), base_split or Split()
    if split.layout is None and (split.first, split.last, base.first, base.last) != (None,) * 4:
        out += [f"++{k}={'null' if v is None else v}" for k, v in split_overrides(split).items()]
    return out + [f"{key}={value}" for key, value in changed]


def key_of(override: str) -> str:
    """The key an override sets (`++a.b=1` -> `a.b`)."""
    return override.split("=", 1)[0].lstrip("+~")


def base_overrides(overrides: list[str]) -> list[str]:
    """The user's overrides without the layout numbers the planner chooses."""
    return [o for o in overrides if key_of(o) not in LAYOUT_KEYS]


def name_of(rank: int, lo: Layout, split: Split | None = None, changed: tuple[tuple[str, int], ...] = ()) -> str:
    """A `parallel` option name that says the layout: r01_tp2_pp4_ep16_gtp16 (+ cp, etp, vpp, first/last
    stage layers, rollout dp/ep, and the micro-batches made smaller: mb2 for the update's, lpmb1 and
    refmb1 for the log-prob passes', tok8192 / lptok / reftok for token budgets)."""
    parts = [f"r{rank:02d}", f"tp{lo.tp}", f"pp{lo.pp}"]
    parts += [f"cp{lo.cp}"] if lo.cp > 1 else []
    parts += [f"ep{lo.ep}"] + ([f"etp{lo.etp}"] if lo.etp > 1 else []) + ([f"vpp{lo.vpp}"] if lo.vpp else [])
    parts += [f"f{split.first}"] if split is not None and split.first is not None else []
    parts += [f"l{split.last}"] if split is not None and split.last is not None else []
    parts += [f"gtp{lo.gen_tp}"] + ([f"gdp{lo.gen_dp}"] if lo.gen_dp > 1 else [])
    parts += [f"gep{lo.gen_ep}"] if lo.gen_ep > 1 else []
    parts += [f"{SHORT[key]}{value}" for key, value in changed]
    return "_".join(parts)


def planned_run(overrides: list[str], config_dirs: list[Path]) -> tuple[Run, Layout]:
    """(the run, keeping its composed config for the search, its own layout), or a UsageError naming what to fix."""
    # A plan launches nothing: it judges layouts as a dry run does (so `plan.megatron_core` plans another machine's
    # megatron-core), unless the overrides say `dry_run=...` themselves.
    if not any(key_of(o) == "dry_run" for o in overrides):
        overrides = [*overrides, "dry_run=true"]
    # Hydra's and OmegaConf's errors: errors.answered names the override or key
    composed = compose(overrides, config_dirs=config_dirs)
    check_line_breaks(composed)  # a value that could end a line of a file the plan writes, before any is written
    run, broken = build_run(composed, mode="dry", keep_composed=True)
    if broken:
        raise UsageError("; ".join(f"{', '.join(p.keys)}: {p.message}" for p in broken))
    own = layout_of(run)
    for name in ("nnodes", "devices_per_node"):
        value = getattr(own, name)
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise UsageError(f"parallel.{name}={value!r}: the cluster size must be a positive integer")
    if unusable := positive_problems(own):  # the search starts from the config's own numbers
        raise UsageError("; ".join(f"{', '.join(p.keys)}: {p.message}" for p in unusable))
    if own.world > MAX_DEVICES:
        raise UsageError(
            f"parallel.nnodes={own.nnodes} x parallel.devices_per_node={own.devices_per_node} = {own.world} devices: "
            f"the planner searches clusters of up to {MAX_DEVICES} devices; plan one data-parallel slice "
            "(fewer nodes) and scale the batch with the data parallelism"
        )
    try:
        inputs(run)  # the estimate ranks every layout: its inputs (read once, by the builder) must be usable first
        calibration_of(run.config)  # and the time model's calibration file (plan.calibration), when one is named
    except InputError as err:
        raise UsageError(f"{err}; nothing searched") from None
    return run, own


def is_own(c: Candidate, own: Layout, own_split: Split) -> bool:
    """The config's own layout at the config's own micro-batches."""
    same_split = (c.split.first, c.split.last) == (own_split.first, own_split.last)
    return c.layout == own and same_split and not c.batches


def in_tier_one(c: Candidate, fastest: Candidate | None) -> bool:
    """The tier rule of planner/search.py `tiered`: fits, no warning asking for a change, step within the band of
    the fastest layout."""
    return fastest is not None and c.fits and not c.actionable and c.time.total <= fastest.time.high


def run_steps(run: Run) -> int | None:
    """Training steps of the configured run, as verl counts them (checks/schedule.py, the one count)."""
    return training_steps(run.config, train_rows(run.config)).total


def trial_pool(found: Search, current: Candidate | None, min_headroom: float = MIN_HEADROOM) -> list[Candidate]:
    """Tier 1 in its order, and the config's own layout when it lies in tier 1 without being one of its rows (its
    rollout, often verl's own TP engines, is one the tier's rows, each paired with its fastest rollout, lack);
    none under `min_headroom` (a trial that runs out of memory measures nothing), unless all are."""
    pool = list(found.tier_one)
    own = None if current is None else (current.layout, current.split, current.batches)
    listed = {(c.layout, c.split, c.batches) for c in pool}
    if current is not None and in_tier_one(current, found.fastest) and own not in listed:
        pool.append(dataclasses.replace(current, tier=1))
    return [c for c in pool if c.headroom >= min_headroom] or pool


def ranked(run: Run, top: int, min_headroom: float = MIN_HEADROOM) -> tuple[Search, list[Candidate], list[Problem]]:
    """The search (a few more than `top`, since the whole preflight may refuse some) and its best `top` layouts that
    the whole preflight accepts, with the first refusal's errors (planner/search.py `verified`)."""
    found = search(run, top=top + 5 if top else 0, min_headroom=min_headroom)
    return found, *verified(run, found, top)


def split_of(run: Run) -> Split:
    """The pipeline split of the run's own layout."""
    return run.split or user_split(run.config)


def chosen_trials(
    run: Run, found: Search, current: Candidate | None, k: int, min_headroom: float = MIN_HEADROOM
) -> tuple[list[tuple[str, int, Candidate]], int]:
    """`--trial K`: tier 1's K most informative layouts (planner/trials.py `spread`), the tier's first run last (the
    resume drill proves the layout most likely booked), each verified by the whole preflight: (option name, rank in
    tier 1 or 0 for the config's own layout, candidate), and how many were chosen; a UsageError when the preflight
    refuses them all."""
    picked = spread(trial_pool(found, current, min_headroom), k)
    picked = picked[1:] + picked[:1]
    chosen, refusal = verified(run, dataclasses.replace(found, candidates=picked), 0)
    if not chosen:
        raise UsageError(f"--trial: the preflight refuses every chosen layout: {refusal[0] if refusal else 'none'}")
    rank_of = {(c.layout, c.split, c.batches): i + 1 for i, c in enumerate(found.tier_one)}
    named = []
    for i, c in enumerate(chosen):
        rank = rank_of.get((c.layout, c.split, c.batches), 0)  # 0: the config's own layout, not among the listed
        name = name_of(rank, c.layout, c.split, c.batches)
        named.append((f"t{i + 1}_{'own' + name[3:] if rank == 0 else name}", rank, c))
    return named, len(chosen)
