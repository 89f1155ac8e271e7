"""`verl-qwen35 plan <overrides> [--top N] [--format json] [--sweep DIR]`: which layout for my cluster.

Parses the command line and prints; what the plan decides is planner/plan.py's, the files a sweep writes
run/layout_sweep.py's. Composes the config once (the same overrides as `python -m verl_qwen35`: model, device,
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
import shlex
import sys
import time
from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from verl_qwen35.checks.memory import memory_problems
from verl_qwen35.checks.problem import Problem
from verl_qwen35.cli.answers import answered
from verl_qwen35.model.layout import Layout
from verl_qwen35.model.pipeline import Split
from verl_qwen35.model.run import Run
from verl_qwen35.planner.measured import rollout_measured, unmeasured_note
from verl_qwen35.planner.plan import (
    PROG,
    UsageError,
    base_overrides,
    chosen_trials,
    in_tier_one,
    is_own,
    key_of,
    overrides_of,
    planned_run,
    ranked,
    run_steps,
    split_of,
)
from verl_qwen35.planner.search import (
    MIN_HEADROOM,
    TRAINING,
    Candidate,
    Search,
    crossing_groups,
    headroom_step,
    judge,
)
from verl_qwen35.planner.trials import Cost, cost
from verl_qwen35.planner.whole_run import checkpoint
from verl_qwen35.run.child import run_attached
from verl_qwen35.run.layout_sweep import (
    TRIAL_GROUP,
    applied,
    batch_keys,
    copy_tree,
    sweep_command,
    sweep_overrides,
    writable_dir,
    write_sweep,
    write_trials,
)
from verl_qwen35.run.stops import stops_deferred
from verl_qwen35.terminal import SafeParser, say

PICTURE = "--picture"
SWEEP_STOP_S = 30.0  # a stopped sweep writes its summary before its group is killed


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
            *(o for o in base if key_of(o) not in changed),
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


def rank_one_time(c: Candidate, steps: int | None) -> str:
    """Rank 1's step and band in the table's own figures (whole seconds), with the run's device-hours when the step
    count is known: the line under the table never shows other numbers than its row."""
    t = c.time
    out = f"~{t.total:.0f} s a step ({t.low:.0f}-{t.high:.0f} s)"
    if steps:
        hours = [t.device_hours(steps, s) for s in (t.total, t.low, t.high)]
        out += f", ~{hours[0]:.0f} device-hours ({hours[1]:.0f}-{hours[2]:.0f}) for {steps} steps"
    return out


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
    current_rank = next((rank for rank, c in rows if is_own(c, own, own_split)), None)
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
    out = [record(int(rank), c, base, is_own(c, own, own_split), steps, own_split, device) for rank, c in rows]
    if current is not None and not any(is_own(c, own, own_split) for _, c in rows):
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


def run(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    if args.sweep is not None:
        writable_dir(args.sweep)
    if args.picture is not None:  # before the search: a file that cannot be written is said at once
        from verl_qwen35.review.picture import require_matplotlib, target

        target(args.picture, PICTURE)
        require_matplotlib(PICTURE)
    config_dirs = [args.config_dir] if args.config_dir else []
    run, own = planned_run(args.overrides, config_dirs)
    resolved = run.config
    found, listed, refusal = ranked(run, args.top, args.min_headroom)
    if refusal and not listed:
        for problem in refusal:
            say(problem, file=sys.stderr)
        raise UsageError("the preflight refuses the best layouts for the reasons above; fix those overrides first")
    own_split = split_of(run)
    current, own_errors = judge(run, own, own_split)
    base = base_overrides(args.overrides)
    rows = [(str(i + 1), c) for i, c in enumerate(listed)]
    steps = run_steps(run)
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
            [o for o in args.overrides if key_of(o) != "dry_run"],
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
    named, chosen = chosen_trials(run, found, current, args.trial, args.min_headroom)
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
    if chosen < args.trial:
        say(f"note: {chosen} layouts, not {args.trial}: tier 1 has no more that differ in PP, EP, TP or rollout")
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
