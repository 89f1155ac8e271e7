"""`verl-qwen35 plan <overrides> [--top N] [--format json] [--sweep DIR]`: which layout for my cluster.

Composes the config once (the same overrides as `python -m verl_qwen35`: model, device,
`parallel.nnodes`, `parallel.devices_per_node`, `hardware.*`, recipe keys), then lists the best
training + rollout layouts the preflight accepts and the memory estimate says fit, ranked by the
predicted seconds of one GRPO step (`verl_qwen35.model.step_time`). Each row's override line, added to yours, is what
`python -m verl_qwen35 ... dry_run=true` accepts: every listed layout went through that preflight.

`--picture FILE.png|FILE.svg` draws the config's own layout (nodes x devices, each device's TP/CP/PP/EP/DP ranks,
the groups that cross a node boundary, training and rollout; the `plots` extra). To picture a listed layout, add
its override line to your overrides: the picture is always of the layout the overrides give.

`--sweep DIR` writes the listed layouts as `DIR/parallel/<name>.yaml` and runs one Hydra multirun
over them (`python -m verl_qwen35 -m --config-dir DIR ... parallel=<name>,<name>,...`), a dry run
unless your overrides say `dry_run=...`. Exit 0 when a layout fits, 2 when none does or on a
usage error.
"""

import argparse
import dataclasses
import json
import math
import os
import shlex
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from verl_qwen35.builder.build import build_run
from verl_qwen35.checks.layout import positive_problems
from verl_qwen35.checks.memory import memory_problems
from verl_qwen35.checks.problem import Problem
from verl_qwen35.checks.schedule import train_rows, training_steps
from verl_qwen35.cli.answers import answered
from verl_qwen35.config import compose
from verl_qwen35.config.line_breaks import check_line_breaks
from verl_qwen35.config.yaml_files import MAX_BYTES, read_limited
from verl_qwen35.disk import write_file
from verl_qwen35.errors import UserError
from verl_qwen35.model.calibration import calibration_of
from verl_qwen35.model.layout import Layout
from verl_qwen35.model.memory import InputError, read_inputs
from verl_qwen35.model.pipeline import Split
from verl_qwen35.model.run import Run
from verl_qwen35.planner.batches import KEYS as BATCH_KEYS
from verl_qwen35.planner.measured import rollout_measured, unmeasured_note
from verl_qwen35.planner.search import (
    FIRST,
    LAST,
    MIN_HEADROOM,
    ROLLOUT,
    TRAINING,
    Candidate,
    Search,
    crossing_groups,
    headroom_step,
    judge,
    search,
    split_overrides,
    user_split,
    verified,
)
from verl_qwen35.planner.trials import Cost, cost, drill_names, spread
from verl_qwen35.planner.whole_run import checkpoint
from verl_qwen35.run.child import run_attached
from verl_qwen35.run.stops import stops_deferred
from verl_qwen35.terminal import SafeParser, say

PROG = "verl-qwen35 plan"
PICTURE = "--picture"
LAYOUT_KEYS = {f"parallel.{name}" for name in (*TRAINING, *ROLLOUT)} | set(split_overrides(Split()))
# Short names of verl's micro-batch keys in a sweep's option names (planner/batches.py PASSES' order).
SHORT = dict(zip(BATCH_KEYS, ("mb", "tok", "lpmb", "lptok", "refmb", "reftok"), strict=True))
# The search enumerates divisor combinations of the world size: 1024 x 8 takes ~13 s on a 2-core
# machine, and its cost grows faster than the world. Larger clusters are refused with a message.
MAX_DEVICES = 8192
SWEEP_STOP_S = 30.0  # a stopped sweep writes its summary before its group is killed


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


def _key(override: str) -> str:
    return override.split("=", 1)[0].lstrip("+~")


def base_overrides(overrides: list[str]) -> list[str]:
    """The user's overrides without the layout numbers the planner chooses."""
    return [o for o in overrides if _key(o) not in LAYOUT_KEYS]


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


def record(
    rank: int | None,
    c: Candidate,
    base: list[str],
    current: bool,
    steps: int | None,
    base_split: Split,
    device: str = "gpu",
) -> dict[str, Any]:
    """One JSON object: layout numbers, the overrides that give it, the step time, the estimate, whether it fits."""
    changed = {key for key, _ in c.batches}
    return {
        "rank": rank,
        "current": current,
        "layout": c.numbers(),
        "overrides": [
            *(o for o in base if _key(o) not in changed),
            *overrides_of(c.layout, c.split, base_split, c.batches),
        ],
        "fits": c.fits,
        "warnings": list(c.warnings),
        "tier": c.tier,
        "step_time": c.time.as_dict(steps),
        "memory_headroom": round(c.headroom, 4),
        "crossing_groups": crossing_groups(c.layout),
        "rollout_measured": rollout_measured(c.layout, device),
        "estimate": c.estimate.as_dict(),
    }


def headroom_cell(c: Candidate) -> str:
    """The headroom in whole percent, rounded down as its step is (34.8% is "34%", never "35% [30+]"), and for a
    tier-1 row the 5% step tier 1 is ordered by ("26% [25+]": 25-30%)."""
    pct = f"{math.floor(round(100 * c.headroom, 6))}%"
    return f"{pct} [{headroom_step(c.headroom)}+]" if c.tier == 1 else pct


def table(rows: list[tuple[str, Candidate]], base_split: Split, device: str = "gpu") -> str:
    from tabulate import tabulate  # only the table format prints one

    head = ("rank", "tier", "tp", "pp", "cp", "ep", "etp", "vpp", "first/last", "gen tp/dp/ep", "s/step (band)")
    head += ("gen s", "train s", "train GiB", "rollout GiB", "headroom", "x-node", "warnings", "override line")
    body = []
    for rank, c in rows:
        lo, e, t = c.layout, c.estimate, c.time
        rollout = t.phases["gen"]
        body.append(
            (
                rank,
                "equal" if c.tier == 1 else str(c.tier or "-"),
                *(str(getattr(lo, n)) if getattr(lo, n) is not None else "-" for n in TRAINING),
                "-" if c.split.first is None and c.split.last is None else f"{c.split.first}/{c.split.last}",
                f"{lo.gen_tp}/{lo.gen_dp}/{lo.gen_ep}" + ("" if rollout_measured(lo, device) else "*"),
                f"~{t.total:.0f} ({t.low:.0f}-{t.high:.0f})",
                f"{rollout:.0f}",
                f"{t.total - rollout:.0f}",
                f"{e.train_gib:.1f}",
                f"{e.rollout_gib:.1f}",
                headroom_cell(c),
                str(crossing_groups(lo)),
                str(len(c.warnings)) if c.warnings else "-",
                " ".join(overrides_of(lo, c.split, base_split, c.batches)),
            )
        )
    return tabulate(body, headers=head, tablefmt="plain", disable_numparse=True)


def sweep_overrides(
    base: list[str], files_set: Iterable[str] = (), group: str = "parallel", dry: bool = True
) -> list[str]:
    """The user's overrides every job of the sweep gets: not the swept `group` (`parallel`, or `trial`), nor the
    verl keys the layout files set (`files_set`, micro-batch sizes), where a command-line value would win over the
    files'; with `dry`, a dry run unless the user says `dry_run=...`."""
    dropped = {group, *files_set}
    kept = [o for o in base if _key(o) not in dropped]
    return kept + ([] if not dry or any(_key(o) == "dry_run" for o in kept) else ["dry_run=true"])


def sweep_command(
    directory: Path,
    base: list[str],
    names: list[str],
    files_set: Iterable[str] = (),
    group: str = "parallel",
    dry: bool = True,
) -> list[str]:
    kept = sweep_overrides(base, files_set, group, dry)
    return [
        sys.executable,
        "-m",
        "verl_qwen35",
        "-m",
        "--config-dir",
        str(directory.resolve()),
        *kept,
        f"{group}={','.join(names)}",
    ]


def batch_keys(listed: list[tuple[str, Candidate]]) -> list[str]:
    """verl's micro-batch keys some listed layout changes: every layout file of a sweep sets them."""
    return list(dict.fromkeys(key for _, c in listed for key, _ in c.batches))


def file_values(c: Candidate, keys: list[str], cfg: DictConfig) -> dict[str, Any]:
    """The micro-batch keys a sweep's layout file sets: this layout's changed values, else the config's."""
    return {key: OmegaConf.select(cfg, key) for key in keys} | dict(c.batches)


def layout_node(c: Candidate, keys: list[str], cfg: DictConfig) -> dict[str, Any]:
    """What a sweep's file sets for one layout: `parallel.*`, uneven stage counts, the micro-batch keys (`keys`)."""
    numbers = {name: getattr(c.layout, name) for name in (*TRAINING, *ROLLOUT)}
    node: dict[str, Any] = {
        "parallel": {"nnodes": c.layout.nnodes, "devices_per_node": c.layout.devices_per_node, **numbers}
    }
    if c.split.first is not None or c.split.last is not None:  # uneven stages live beside the layout
        node["megatron"] = {"override_transformer_config": {FIRST: c.split.first, LAST: c.split.last}}
    for key, value in file_values(c, keys, cfg).items():
        where = node
        *path, last = key.split(".")
        for part in path:
            where = where.setdefault(part, {})
        where[last] = value
    return node


def write_sweep(directory: Path, listed: list[tuple[str, Candidate]], cfg: DictConfig) -> list[str]:
    """DIR/parallel/<name>.yaml per listed layout: `parallel` options a multirun sweeps by name. A layout that
    needs smaller micro-batches carries them in its file (`# @package _global_`), and so does every other layout
    of the sweep (the config's values): the sweep's command line no longer sets those keys for all of them."""
    directory.mkdir(parents=True, exist_ok=True)  # the directory the user named; below it nothing through a link
    names = []
    keys = batch_keys(listed)
    for rank, c in listed:
        name = name_of(int(rank), c.layout, c.split, c.batches)
        node = layout_node(c, keys, cfg)
        # The package line first: Hydra reads it from the file's header (the stage counts sit beside `parallel`).
        header = "# @package _global_\n"
        shown = json.dumps(str(cfg.model.name))  # quoted as data: nothing in a value ends the comment
        header += f"# Layout {rank} of {PROG} for {shown} on {c.layout.nnodes}x{c.layout.devices_per_node}.\n"
        write_file(directory / "parallel" / f"{name}.yaml", header + OmegaConf.to_yaml(node), within=directory)
        names.append(name)
    return names


TRIAL_GROUP = "trial"
DRILL_DIR = "resume_drill"


def trial_file(option: str, c: Candidate, keys: list[str], cfg: DictConfig, header: str, drill: Path | None) -> str:
    """One trial job's option of the `trial` group: the trial (conf/trial/<option>.yaml) with this layout. The trial
    group comes after the layout and tuning groups, so the layout and micro-batch keys here are the ones applied."""
    node = {"defaults": [option, "_self_"], **layout_node(c, keys, cfg)}
    if drill is not None:
        node["trial"] = {"checkpoint_dir": str(drill)}
    return "# @package _global_\n" + header + OmegaConf.to_yaml(node)


def write_trials(
    directory: Path, named: list[tuple[str, int, Candidate]], cfg: DictConfig, drill: bool
) -> tuple[list[str], Path | None]:
    """DIR/trial/<name>.yaml per chosen layout (`trial=short`), the last as the resume drill's two jobs
    (`_save`, `_resume`, both with trial.checkpoint_dir = DIR/resume_drill, absolute): the options a multirun
    sweeps, in the order it runs them. Returns the option names and the drill's checkpoint folder."""
    directory.mkdir(parents=True, exist_ok=True)
    keys = batch_keys([(str(rank), c) for _, rank, c in named])
    folder = (directory / DRILL_DIR).resolve() if drill else None
    names: list[str] = []
    for i, (name, rank, c) in enumerate(named):
        header = (
            f"# Trial {i + 1} of {len(named)} of {PROG} --trial for {cfg.model.name} on {c.layout.nnodes}x"
            f"{c.layout.devices_per_node}: layout {rank} of tier 1.\n"
        )
        jobs = [(name, "short", None)]
        if drill and i == len(named) - 1:
            save, resume = drill_names(name)
            jobs = [(save, "drill_save", folder), (resume, "drill_resume", folder)]
        for job, option, where in jobs:
            text = trial_file(option, c, keys, cfg, header, where)
            write_file(directory / TRIAL_GROUP / f"{job}.yaml", text, within=directory)
            names.append(job)
    return names, folder


def _hours(band: tuple[float, float, float]) -> str:
    point, low, high = band
    return f"~{point:.2f} ({low:.2f}-{high:.2f})"


def trial_lines(
    named: list[tuple[str, int, Candidate]], found: Search, cost: Cost, steps: int, device: str
) -> list[str]:
    """What the trial sweep is and costs, for a person to book it."""
    drill = any(j.name.endswith("_resume") for j in cost.jobs)
    out = [
        f"trials: {len(named)} of the {found.tier_size} layouts of tier 1, chosen by spread over pipeline depth, EP, "
        f"TP and the rollout (verl_qwen35/planner/trials.py), {steps} steps each (trial.steps; the first is warm-up)"
        + (
            ", the last with the resume drill (save at its last step, a second job resumes and runs one more)"
            if drill
            else ""
        )
    ]
    by_name = {name: (rank, c) for name, rank, c in named}
    for job in cost.jobs:
        base = job.name.removesuffix("_save").removesuffix("_resume")
        rank, c = by_name[base]
        lo, t = c.layout, c.time
        gen = f"{lo.gen_tp}/{lo.gen_dp}/{lo.gen_ep}" + ("" if rollout_measured(lo, device) else "*")
        point, low, high = job.seconds
        note = f"; {job.note}" if job.note else ""
        which = f"tier-1 rank {rank}" if rank else "the config's own layout"
        out.append(
            f"  {job.name}: {which}, tp {lo.tp} pp {lo.pp} cp {lo.cp} ep {lo.ep} etp {lo.etp}, gen {gen}; "
            f"{job.steps} x ~{t.total:.0f} s ({t.low:.0f}-{t.high:.0f}) = ~{point:.0f} s ({low:.0f}-{high:.0f}){note}"
        )
    out.append(
        f"cost: {_hours(cost.wall_hours)} h wall, {_hours(cost.device_hours)} device-hours on {cost.world} devices, "
        "the jobs one after another; plus each job's start-up (Ray, weight loading, vLLM), not modelled"
    )
    return out


def applied(
    directory: Path, overrides: list[str], listed: list[tuple[str, Candidate]], names: list[str], resolved: DictConfig
) -> None:
    """Hydra merges a `parallel` option before the groups after it (tuning, submit): a layout file's micro-batch
    key is overridden when one of them sets it too. Every file sets the same keys (`batch_keys`) at the same
    place of the defaults list, so one layout composed as its sweep job will be tells for all; a UsageError
    names the key when Hydra would not apply a file's value."""
    rank, c = next((rank, c) for rank, c in listed if c.batches)
    name = names[[r for r, _ in listed].index(rank)]
    cfg = compose([*overrides, f"parallel={name}"], config_dirs=[directory])
    for key, value in file_values(c, batch_keys(listed), resolved).items():
        if OmegaConf.select(cfg, key) != value:
            raise UsageError(
                f"--sweep: the layout files set {key} ({directory}/parallel/{name}.yaml: {value}, what layout {rank} "
                f"fits with), but a config group after `parallel` (tuning or submit) sets {key} again and Hydra "
                "applies that one in every job; run the layouts whose override lines hold the key alone, or drop "
                "the key from that group"
            )


def copy_tree(source: Path, target: Path) -> None:
    """The user's config files into --sweep DIR by the one writer: a link already in DIR is replaced, not followed."""
    target.mkdir(parents=True, exist_ok=True)
    for path in sorted(source.rglob("*")):
        if path.is_file():
            write_file(target / path.relative_to(source), read_limited(path, MAX_BYTES, "config file"), within=target)


def _writable_dir(directory: Path) -> None:
    """--sweep DIR must be a directory this user can create or write into; checked before any search."""
    existing = next(p for p in (directory.absolute(), *directory.absolute().parents) if p.exists())
    if existing == directory.absolute() and not existing.is_dir():
        raise UsageError(f"--sweep {directory}: is a file, not a directory; give a new or existing directory")
    if not existing.is_dir() or not os.access(existing, os.W_OK | os.X_OK):
        raise UsageError(f"--sweep {directory}: {existing} is not a writable directory; choose another DIR")


def _parse(argv: list[str] | None) -> argparse.Namespace:
    parser = SafeParser(prog=PROG, description=__doc__.splitlines()[0])
    parser.add_argument("overrides", nargs="*", help="the same overrides as python -m verl_qwen35")
    parser.add_argument("--top", type=int, default=10, help="how many layouts to list (0: every one that fits)")
    parser.add_argument(
        "--min-headroom",
        type=float,
        default=MIN_HEADROOM,
        metavar="SHARE",
        help=f"memory headroom under which a layout never ranks first (default {MIN_HEADROOM:g}: 10%%)",
    )
    parser.add_argument("--format", choices=("table", "json"), default="table")
    parser.add_argument("--json", dest="format", action="store_const", const="json", help="the same as --format json")
    parser.add_argument("--sweep", type=Path, metavar="DIR", help="write the listed layouts to DIR and sweep them")
    parser.add_argument(
        "--trial",
        type=int,
        metavar="K",
        help="with --sweep DIR: write trial runs (trial=short) of tier 1's K most informative layouts, the last "
        "with the resume drill, to DIR/trial/, print their cost and the launch command, and dry-run them",
    )
    parser.add_argument(
        "--no-drill", dest="drill", action="store_false", help="with --trial: no resume drill on the last trial"
    )
    parser.add_argument(
        "--picture",
        metavar="FILE",
        help="draw the config's own layout (nodes x devices, groups) into FILE.png or FILE.svg; to picture a "
        "listed layout, add its override line to your overrides",
    )
    parser.add_argument(
        "--config-dir", "-cd", type=Path, help="a directory of your own config groups, as for the entrypoint"
    )
    args = parser.parse_intermixed_args(argv)
    if args.top < 0:
        parser.error("--top must be >= 0")
    if args.trial is not None and args.trial < 1:
        parser.error("--trial K: K must be >= 1 (how many layouts to run as trials)")
    if args.trial is not None and args.sweep is None:
        parser.error("--trial K writes the trial sweep into a directory: add --sweep DIR")
    if not 0 <= args.min_headroom < 1:
        parser.error("--min-headroom must be a share in [0, 1), e.g. 0.1 for 10%")
    return args


def _compose(overrides: list[str], config_dirs: list[Path]) -> tuple[Run, Layout]:
    """(the run, keeping its composed config for the search, its own layout), or a UsageError naming what to fix."""
    # A plan launches nothing: it judges layouts as a dry run does (so `plan.megatron_core` plans another machine's
    # megatron-core), unless the overrides say `dry_run=...` themselves.
    if not any(_key(o) == "dry_run" for o in overrides):
        overrides = [*overrides, "dry_run=true"]
    # Hydra's and OmegaConf's errors: errors.answered names the override or key
    composed = compose(overrides, config_dirs=config_dirs)
    check_line_breaks(composed)  # a value that could end a line of a file the plan writes, before any is written
    run, broken = build_run(composed, mode="dry", keep_composed=True)
    if broken:
        raise UsageError("; ".join(f"{', '.join(p.keys)}: {p.message}" for p in broken))
    resolved = run.config
    own = run.layout or Layout.of(resolved)
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
        read_inputs(resolved)  # the estimate ranks every layout: its inputs must be usable first
        calibration_of(resolved)  # and the time model's calibration file (plan.calibration), when one is named
    except InputError as err:
        raise UsageError(f"{err}; nothing searched") from None
    return run, own


def _is_own(c: Candidate, own: Layout, own_split: Split) -> bool:
    """The config's own layout at the config's own micro-batches."""
    same_split = (c.split.first, c.split.last) == (own_split.first, own_split.last)
    return c.layout == own and same_split and not c.batches


def rank_one_time(c: Candidate, steps: int | None) -> str:
    """Rank 1's step and band in the table's own figures (whole seconds), with the run's device-hours when the step
    count is known: the line under the table never shows other numbers than its row."""
    t = c.time
    out = f"~{t.total:.0f} s a step ({t.low:.0f}-{t.high:.0f} s)"
    if steps:
        hours = [t.device_hours(steps, s) for s in (t.total, t.low, t.high)]
        out += f", ~{hours[0]:.0f} device-hours ({hours[1]:.0f}-{hours[2]:.0f}) for {steps} steps"
    return out


def in_tier_one(c: Candidate, fastest: Candidate | None) -> bool:
    """The tier rule of planner/search.py `tiered`: fits, no warning asking for a change, step within the band of
    the fastest layout."""
    return fastest is not None and c.fits and not c.actionable and c.time.total <= fastest.time.high


def compare_current(pick: Candidate, other: Candidate, fastest: Candidate | None) -> str:
    """How the config's own layout (`other`, not listed) compares with rank 1 (`pick`): both points, how far apart,
    whether the model's band can tell them apart (tier 1 is what lies within the fastest layout's band), and the
    phases where rank 1 saves the most seconds."""
    p, o = pick.time, other.time
    apart = (o.total - p.total) / p.total if p.total else 0.0
    than = f"{abs(apart):.0%} {'slower' if apart >= 0 else 'faster'} at the points"
    points = (
        f"~{o.total:.0f} s a step ({o.low:.0f}-{o.high:.0f}) against rank 1's ~{p.total:.0f} s "
        f"({p.low:.0f}-{p.high:.0f}), {than}"
    )
    gains = sorted(((o.phases[k] - v, k) for k, v in p.phases.items()), reverse=True)
    named = ", ".join(f"{k} {o.phases[k]:.0f} -> {p.phases[k]:.0f} s" for d, k in gains[:3] if d > 0.5)
    where = f"; rank 1 differs most in {named}" if named and apart > 0 else ""
    if in_tier_one(other, fastest):
        return (
            f"{points}; both lie within tier 1's band (up to ~{fastest.time.high:.0f} s, the fastest layout's high "
            f"end), so the model cannot tell them apart{where}; a short trial of each (trial=short) would"
        )
    if not other.fits:
        return f"{points}; it does not fit in memory by the estimate{where}"
    if other.actionable:
        return f"{points}; tier 2: a warning asks for a change (see its row){where}"
    return (
        f"{points}; tier 2: slower than the fastest layout's band (up to ~{fastest.time.high:.0f} s){where}"
        if (fastest is not None)
        else f"{points}{where}"
    )


def _print_table(
    resolved: DictConfig,
    device: str,
    own: Layout,
    own_split: Split,
    found: Search,
    rows: list[tuple[str, Candidate]],
    current: Candidate | None,
    steps: int | None,
    own_errors: list[Problem] = (),
    own_overrides: list[str] = (),
    min_headroom: float = MIN_HEADROOM,
) -> None:
    current_rank = next((rank for rank, c in rows if _is_own(c, own, own_split)), None)
    if current is not None and current_rank is None:  # its tier by the same rule as the listed ones'
        current = dataclasses.replace(current, tier=1 if in_tier_one(current, found.fastest) else 2)
    shown = rows + ([("current", current)] if current is not None and current_rank is None else [])
    hw = resolved.hardware
    say(
        f"{resolved.model.name} on {own.nnodes} x {own.devices_per_node} = {own.world} "
        f"{device.upper()}s (hardware {hw.get('name', '?')}, {hw.device_memory_gib:g} GiB each): "
        f"{found.training_accepted} training layouts (of {found.training_judged} judged) x "
        f"{found.rollout_accepted} rollout layouts accepted"
    )
    if shown:
        say(table(shown, own_split, device))
    if rows:  # nothing fits: no tiers to explain; the answer on stderr says why and what to change
        say(
            f"tiers: tier 1 ('equal') holds the {found.tier_size} layouts whose predicted step lies within the band of "
            "the fastest: the model cannot tell them apart, so they are ordered by (1) headroom at or above "
            f"--min-headroom ({min_headroom:.0%}) first, (2) more memory headroom in 5% steps (the [N+] beside it: "
            "26% and 29% are one step, 25-30%), (3) fewer group kinds crossing a node (x-node: TP, CP, EP, ETP, DP, "
            "PP), (4) the config's own layout, (5) fewer predicted seconds; tier 2 follows by predicted seconds "
            "(verl_qwen35/model/step_time.py; each training layout with its fastest fitting rollout layout)"
        )
    marked = [c for _, c in shown if not rollout_measured(c.layout, device)]
    if marked:
        say(f"gen *: {unmeasured_note(marked[0].layout, device)}")
    if rows:
        best = rows[0][1]
        t = best.time
        say(f"rank 1: {rank_one_time(best, steps)}; assumes {t.assumption()}; {t.calibration.describe()}")
        for warning in best.warnings:
            say(f"rank 1 warning: {warning}")
    if current is None:
        first = (
            f": [{', '.join(k.split(' ')[0] for k in own_errors[0].keys)}] {own_errors[0].message}"
            if own_errors
            else ""
        )
        more = f" ({len(own_errors) - 1} more)" if len(own_errors) > 1 else ""
        say(
            f"current: the preflight refuses the config's own layout{first}{more}; every reason: "
            + shlex.join(["python", "-m", "verl_qwen35", *own_overrides, "dry_run=true"])
        )
    elif current_rank is not None:
        say(f"current: the config's own layout is rank {current_rank} (tier {dict(rows)[current_rank].tier})")
    elif rows:
        say(f"current: the config's own layout (not listed): {compare_current(rows[0][1], current, found.fastest)}")
    if steps is None:
        say("device-hours: set trainer.total_training_steps (or make data.train_files readable) to count the steps")


def _print_json(
    own: Layout,
    own_split: Split,
    base: list[str],
    rows: list[tuple[str, Candidate]],
    current: Candidate | None,
    steps: int | None,
    found: Search,
    device: str,
) -> None:
    out = [record(int(rank), c, base, _is_own(c, own, own_split), steps, own_split, device) for rank, c in rows]
    if current is not None and not any(_is_own(c, own, own_split) for _, c in rows):
        current = dataclasses.replace(current, tier=1 if in_tier_one(current, found.fastest) else 2)
        out.append(record(None, current, base, True, steps, own_split, device))
    say(json.dumps(out, indent=2))


def _nothing_fits(resolved: DictConfig, own: Layout, found: Search) -> int:
    if not found.training_accepted or not found.rollout_accepted:
        say(
            f"{PROG}: the preflight accepts no {'training' if not found.training_accepted else 'rollout'} layout of "
            f"{resolved.model.name} on {own.nnodes} x {own.devices_per_node} = {own.world} devices "
            f"({found.training_judged} training, {found.rollout_judged} rollout layouts judged); use a "
            "parallel.devices_per_node and parallel.nnodes whose product the model's heads and experts divide "
            "(e.g. 8 or 16 devices per node), and data.train_batch_size divisible by the data parallelism",
            file=sys.stderr,
        )
        return 2
    hw = resolved.hardware
    where = (
        f"{PROG}: nothing fits: no accepted layout of {resolved.model.name} fits in memory on {own.nnodes} x "
        f"{own.devices_per_node} = {own.world} devices (hardware.device_memory_gib={hw.device_memory_gib:g}, "
        f"hardware.host_memory_gib={hw.host_memory_gib:g} a node)"
    )
    advice = (
        "to change: more devices (parallel.nnodes), or what each failing constraint above names; hardware.* if it "
        "does not describe your machines"
    )
    if not found.closest:
        say(f"{where}; {advice}", file=sys.stderr)
        return 2
    c = found.closest[0]
    e = c.estimate
    failed = [p for p in memory_problems(resolved, e, c.layout) if p.level == "error"]
    lines = [
        f"{where}.",
        f"closest: {' '.join(overrides_of(c.layout, c.split, changed=c.batches))} (device peak {e.peak_gib:.1f} "
        f"GiB of {e.device_memory_gib:g} GiB; host {e.host_per_node_gib:.0f} GiB of {e.host_memory_gib:g} a node)",
        *(f"  does not fit: [{', '.join(k.split(' ')[0] for k in p.keys)}] {p.message}" for p in failed),
        advice,
    ]
    say("\n".join(lines), file=sys.stderr)
    return 2


def picture_line(resolved: DictConfig, current: Candidate | None, errors: list[Problem], value: str) -> str:
    """The config's own layout drawn, or why not (a layout the preflight refuses is not drawn)."""
    if current is None:
        first = f": {errors[0].message}" if errors else ""
        return (
            f"picture: not drawn: the preflight refuses the config's own layout{first}; add a listed layout's "
            "override line to picture it"
        )
    from verl_qwen35.review.picture import draw_config

    return f"picture: {draw_config(resolved, value, PICTURE).absolute()}"


def run_steps(cfg: DictConfig) -> int | None:
    """Training steps of the configured run, as verl counts them (checks/schedule.py, the one count)."""
    return training_steps(cfg, train_rows(cfg)).total


def run(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    if args.sweep is not None:
        _writable_dir(args.sweep)
    if args.picture is not None:  # before the search: a file that cannot be written is said at once
        from verl_qwen35.review.picture import require_matplotlib, target

        target(args.picture, PICTURE)
        require_matplotlib(PICTURE)
    config_dirs = [args.config_dir] if args.config_dir else []
    run, own = _compose(args.overrides, config_dirs)
    resolved = run.config
    found = search(run, top=args.top + 5 if args.top else 0, min_headroom=args.min_headroom)
    listed, refusal = verified(run, found, args.top)
    if refusal and not listed:
        for problem in refusal:
            say(problem, file=sys.stderr)
        raise UsageError("the preflight refuses the best layouts for the reasons above; fix those overrides first")
    own_split = run.split or user_split(resolved)
    current, own_errors = judge(run, own, own_split)
    base = base_overrides(args.overrides)
    rows = [(str(i + 1), c) for i, c in enumerate(listed)]
    steps = run_steps(resolved)
    if args.format == "json":
        _print_json(own, own_split, base, rows, current, steps, found, run.device)
    else:
        _print_table(
            resolved,
            run.device,
            own,
            own_split,
            found,
            rows,
            current,
            steps,
            own_errors,
            [o for o in args.overrides if _key(o) != "dry_run"],
            args.min_headroom,
        )
        say(f"took {time.perf_counter() - started:.2f} s after start-up (compose, search, verify)")
        if refusal:
            say(f"note: layouts the search accepted but the whole preflight refused were left out: {refusal[0]}")
    if args.picture is not None:
        line = picture_line(resolved, current, own_errors, args.picture)
        say(line, file=sys.stdout if args.format == "table" else sys.stderr)
    if not listed:
        return _nothing_fits(resolved, own, found)
    if args.sweep is None:
        if args.format == "table":
            own_dir = ["--config-dir", str(args.config_dir)] if args.config_dir else []
            # Each word quoted for the shell (a pasted line runs exactly these words); DIR is the user's to fill.
            line = shlex.join([*PROG.split(), *own_dir, *args.overrides, "--top", str(len(listed))]) + " --sweep DIR"
            say(f"sweep:   {line}  (writes DIR/parallel/*.yaml, runs them as one multirun)")
            trial = shlex.join([*PROG.split(), *own_dir, *args.overrides, "--trial", "3"]) + " --sweep DIR"
            say(
                f"trials:  {trial}  (short real runs of 3 tier-1 layouts, the resume drill on the last: measure them, "
                "then calibrate; docs/planning.md, Trial runs)"
            )
        return 0
    if args.trial is not None:
        return run_trials(args, run, found, config_dirs, base, current)
    try:
        for own_dir in config_dirs:  # one --config-dir for the multirun: the user's groups join the layouts
            copy_tree(Path(own_dir), args.sweep)
        names = write_sweep(args.sweep, rows, resolved)
    except OSError as err:
        raise UsageError(f"--sweep {args.sweep}: cannot write the layouts ({err.strerror}: {err.filename})") from None
    keys = batch_keys(rows)
    command = sweep_command(args.sweep, base, names, keys)
    if keys:
        applied(args.sweep, sweep_overrides(base, keys), rows, names, resolved)
    say("sweep:   " + shlex.join(command[1:]), file=sys.stderr, flush=True)  # safe to paste: each word quoted
    return run_attached(command, stop_s=SWEEP_STOP_S)  # its own group: stopped with us, nothing left behind


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


def run_trials(
    args: argparse.Namespace,
    run: Run,
    found: Search,
    config_dirs: list[Path],
    base: list[str],
    current: Candidate | None = None,
) -> int:
    """`--trial K --sweep DIR`: choose, verify, write, price, print the launch line, and dry-run the trial sweep."""
    resolved, device = run.config, run.device
    pool = trial_pool(found, current, args.min_headroom)
    picked = spread(pool, args.trial)
    picked = (
        picked[1:] + picked[:1]
    )  # the tier's first runs last: the resume drill proves the layout most likely booked
    chosen, refusal = verified(run, dataclasses.replace(found, candidates=picked), 0)
    if not chosen:
        raise UsageError(f"--trial: the preflight refuses every chosen layout: {refusal[0] if refusal else 'none'}")
    rank_of = {(c.layout, c.split, c.batches): i + 1 for i, c in enumerate(found.tier_one)}
    named = []
    for i, c in enumerate(chosen):
        rank = rank_of.get((c.layout, c.split, c.batches), 0)  # 0: the config's own layout, not among the listed
        name = name_of(rank, c.layout, c.split, c.batches)
        named.append((f"t{i + 1}_{'own' + name[3:] if rank == 0 else name}", rank, c))
    steps = int(resolved.trial.steps)
    try:
        for own_dir in config_dirs:
            copy_tree(Path(own_dir), args.sweep)
        names, folder = write_trials(args.sweep, named, resolved, args.drill)
    except OSError as err:
        raise UsageError(f"--sweep {args.sweep}: cannot write the trials ({err.strerror}: {err.filename})") from None
    price = cost([(name, c) for name, _, c in named], steps, checkpoint(run, 1).write_seconds, args.drill)
    for line in trial_lines(named, found, price, steps, device):
        say(line)
    if unmeasured := [c for _, _, c in named if not rollout_measured(c.layout, device)]:
        say(f"gen *: {unmeasured_note(unmeasured[0].layout, device)}")
    if folder is not None:
        say(f"drill: checkpoint folder {folder} (trial.checkpoint_dir): on storage every node and both jobs see")
    if len(chosen) < args.trial:
        say(f"note: {len(chosen)} layouts, not {args.trial}: tier 1 has no more that differ in PP, EP, TP or rollout")
    keys = batch_keys([(str(rank), c) for _, rank, c in named])
    launch = sweep_command(args.sweep, base, names, keys, TRIAL_GROUP, dry=False)
    say("launch:  " + shlex.join(["python", *launch[1:]]), flush=True)  # paste-ready: each word quoted
    command = sweep_command(args.sweep, base, names, keys, TRIAL_GROUP)
    say("sweep:   " + shlex.join(command[1:]), file=sys.stderr, flush=True)
    return run_attached(command, stop_s=SWEEP_STOP_S)


def main(argv: list[str] | None = None) -> int:
    args = _parse(argv)
    # the entrypoint's answers: one message and exit 2, `| head` ends quietly; SIGTERM stops the sweep as Ctrl-C
    with answered(PROG), stops_deferred():
        code = run(args)
        sys.stdout.flush()
    return code


if __name__ == "__main__":
    sys.exit(main())
