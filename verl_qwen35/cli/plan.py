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
import json
import os
import shlex
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from verl_qwen35.checks.layout import positive_problems
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
from verl_qwen35.planner.search import (
    FIRST,
    LAST,
    MIN_HEADROOM,
    ROLLOUT,
    TRAINING,
    Candidate,
    Search,
    judge,
    search,
    split_overrides,
    user_split,
    verified,
)
from verl_qwen35.run.child import run_attached
from verl_qwen35.run.resolved import build_run
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
    rank: int | None, c: Candidate, base: list[str], current: bool, steps: int | None, base_split: Split
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
        "estimate": c.estimate.as_dict(),
    }


def table(rows: list[tuple[str, Candidate]], base_split: Split) -> str:
    from tabulate import tabulate  # only the table format prints one

    head = ("rank", "tier", "tp", "pp", "cp", "ep", "etp", "vpp", "first/last", "gen tp/dp/ep", "s/step (band)")
    head += ("gen s", "train s", "train GiB", "rollout GiB", "headroom", "warnings", "override line")
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
                f"{lo.gen_tp}/{lo.gen_dp}/{lo.gen_ep}",
                f"~{t.total:.0f} ({t.low:.0f}-{t.high:.0f})",
                f"{rollout:.0f}",
                f"{t.total - rollout:.0f}",
                f"{e.train_gib:.1f}",
                f"{e.rollout_gib:.1f}",
                f"{100 * c.headroom:.0f}%",
                str(len(c.warnings)) if c.warnings else "-",
                " ".join(overrides_of(lo, c.split, base_split, c.batches)),
            )
        )
    return tabulate(body, headers=head, tablefmt="plain", disable_numparse=True)


def sweep_overrides(base: list[str], files_set: Iterable[str] = ()) -> list[str]:
    """The user's overrides every job of the sweep gets: not `parallel`, nor the verl keys the layout files set
    (`files_set`, micro-batch sizes), where a command-line value would win over the files'; a dry run unless
    the user says `dry_run=...`."""
    dropped = {"parallel", *files_set}
    kept = [o for o in base if _key(o) not in dropped]
    return kept + ([] if any(_key(o) == "dry_run" for o in kept) else ["dry_run=true"])


def sweep_command(directory: Path, base: list[str], names: list[str], files_set: Iterable[str] = ()) -> list[str]:
    kept = sweep_overrides(base, files_set)
    return [
        sys.executable,
        "-m",
        "verl_qwen35",
        "-m",
        "--config-dir",
        str(directory.resolve()),
        *kept,
        f"parallel={','.join(names)}",
    ]


def batch_keys(listed: list[tuple[str, Candidate]]) -> list[str]:
    """verl's micro-batch keys some listed layout changes: every layout file of a sweep sets them."""
    return list(dict.fromkeys(key for _, c in listed for key, _ in c.batches))


def file_values(c: Candidate, keys: list[str], cfg: DictConfig) -> dict[str, Any]:
    """The micro-batch keys a sweep's layout file sets: this layout's changed values, else the config's."""
    return {key: OmegaConf.select(cfg, key) for key in keys} | dict(c.batches)


def write_sweep(directory: Path, listed: list[tuple[str, Candidate]], cfg: DictConfig) -> list[str]:
    """DIR/parallel/<name>.yaml per listed layout: `parallel` options a multirun sweeps by name. A layout that
    needs smaller micro-batches carries them in its file (`# @package _global_`), and so does every other layout
    of the sweep (the config's values): the sweep's command line no longer sets those keys for all of them."""
    directory.mkdir(parents=True, exist_ok=True)  # the directory the user named; below it nothing through a link
    names = []
    keys = batch_keys(listed)
    for rank, c in listed:
        name = name_of(int(rank), c.layout, c.split, c.batches)
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
        # The package line first: Hydra reads it from the file's header (the stage counts sit beside `parallel`).
        header = "# @package _global_\n"
        shown = json.dumps(str(cfg.model.name))  # quoted as data: nothing in a value ends the comment
        header += f"# Layout {rank} of {PROG} for {shown} on {c.layout.nnodes}x{c.layout.devices_per_node}.\n"
        write_file(directory / "parallel" / f"{name}.yaml", header + OmegaConf.to_yaml(node), within=directory)
        names.append(name)
    return names


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


def why_faster(pick: Candidate, other: Candidate) -> str:
    """How `other` compares with the pick: as fast as far as the model can tell when its step lies inside the
    pick's band, else the phases where the pick saves the most seconds."""
    p, o = pick.time, other.time
    if o.total <= p.high:
        return f"as fast as rank 1 within the model's band (~{o.total:.0f} s against {p.low:.0f}-{p.high:.0f} s)"
    gains = sorted(((o.phases[k] - v, k) for k, v in p.phases.items()), reverse=True)
    named = ", ".join(f"{k} {o.phases[k]:.0f} -> {p.phases[k]:.0f} s" for d, k in gains[:3] if d > 0)
    return (
        f"slower than rank 1 beyond the model's band: ~{o.total:.0f} s ({o.low:.0f}-{o.high:.0f}) a step "
        f"against {p.low:.0f}-{p.high:.0f} s ({named or 'no phase faster'})"
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
) -> None:
    current_rank = next((rank for rank, c in rows if _is_own(c, own, own_split)), None)
    shown = rows + ([("current", current)] if current is not None and current_rank is None else [])
    hw = resolved.hardware
    say(
        f"{resolved.model.name} on {own.nnodes} x {own.devices_per_node} = {own.world} "
        f"{device.upper()}s (hardware {hw.get('name', '?')}, {hw.device_memory_gib:g} GiB each): "
        f"{found.training_accepted} training layouts (of {found.training_judged} judged) x "
        f"{found.rollout_accepted} rollout layouts accepted"
    )
    if shown:
        say(table(shown, own_split))
    say(
        f"tiers: tier 1 ('equal') holds the {found.tier_size} layouts whose predicted step lies within the band of "
        "the fastest: the model cannot tell them apart, so they are ordered by memory headroom (under --min-headroom "
        "never first), "
        "fewer groups crossing nodes, the config's own layout; tier 2 follows by predicted seconds "
        "(verl_qwen35/model/step_time.py; each training layout with its fastest fitting rollout layout)"
    )
    if rows:
        best = rows[0][1]
        say(f"rank 1: {best.time.phrase(steps)}; assumes {best.time.assumption()}; {best.time.calibration.describe()}")
        for warning in best.warnings:
            say(f"rank 1 warning: {warning}")
    if current is None:
        say("current: the preflight refuses the config's own layout (see python -m verl_qwen35 ... dry_run=true)")
    elif current_rank is not None:
        say(f"current: the config's own layout is rank {current_rank} (tier {dict(rows)[current_rank].tier})")
    elif rows:
        say(f"current: the config's own layout is {why_faster(rows[0][1], current)}")
    if steps is None:
        say("device-hours: set trainer.total_training_steps (or make data.train_files readable) to count the steps")


def _print_json(
    own: Layout,
    own_split: Split,
    base: list[str],
    rows: list[tuple[str, Candidate]],
    current: Candidate | None,
    steps: int | None,
) -> None:
    out = [record(int(rank), c, base, _is_own(c, own, own_split), steps, own_split) for rank, c in rows]
    if current is not None and not any(_is_own(c, own, own_split) for _, c in rows):
        out.append(record(None, current, base, True, steps, own_split))
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
    closest = ", ".join(
        f"{' '.join(overrides_of(c.layout, c.split, changed=c.batches))} needs {c.estimate.peak_gib:.0f} GiB"
        for c in found.closest[:3]
    )
    say(
        f"{PROG}: no accepted layout fits in memory on {own.nnodes} x {own.devices_per_node} "
        f"(hardware.device_memory_gib={resolved.hardware.device_memory_gib:g}); closest: {closest or 'none'}. "
        "Raise parallel.nnodes, or check hardware.* against your machines.",
        file=sys.stderr,
    )
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
    own_split = user_split(resolved)
    current, own_errors = judge(run, own, own_split)
    base = base_overrides(args.overrides)
    rows = [(str(i + 1), c) for i, c in enumerate(listed)]
    steps = run_steps(resolved)
    if args.format == "json":
        _print_json(own, own_split, base, rows, current, steps)
    else:
        _print_table(resolved, run.device, own, own_split, found, rows, current, steps)
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
        return 0
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


def main(argv: list[str] | None = None) -> int:
    args = _parse(argv)
    # the entrypoint's answers: one message and exit 2, `| head` ends quietly; SIGTERM stops the sweep as Ctrl-C
    with answered(PROG), stops_deferred():
        code = run(args)
        sys.stdout.flush()
    return code


if __name__ == "__main__":
    sys.exit(main())
