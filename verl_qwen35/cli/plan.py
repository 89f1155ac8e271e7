"""`verl-qwen35 plan <overrides> [--top N] [--format json] [--sweep DIR]`: which layout for my cluster.

Composes the config once (the same overrides as `python -m verl_qwen35`: model, device,
`parallel.nnodes`, `parallel.devices_per_node`, `hardware.*`, recipe keys), then lists the best
training + rollout layouts the preflight accepts and the memory estimate says fit, ranked by the
cost model of `verl_qwen35.planner.search`. Each row's override line, added to yours, is what
`python -m verl_qwen35 ... dry_run=true` accepts: every listed layout went through that preflight.

`--sweep DIR` writes the listed layouts as `DIR/parallel/<name>.yaml` and runs one Hydra multirun
over them (`python -m verl_qwen35 -m --config-dir DIR ... parallel=<name>,<name>,...`), a dry run
unless your overrides say `dry_run=...`. Exit 0 when a layout fits, 2 when none does or on a
usage error.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf
from tabulate import tabulate

from verl_qwen35.checks import device_of
from verl_qwen35.checks.layout import positive_problems
from verl_qwen35.cli.answers import answered
from verl_qwen35.config import compose
from verl_qwen35.config.errors import resolve_naming_key
from verl_qwen35.errors import UserError
from verl_qwen35.model.layout import Layout
from verl_qwen35.model.memory import InputError, read_inputs
from verl_qwen35.planner.search import ROLLOUT, TRAINING, Candidate, Search, judge, search, verified

PROG = "verl-qwen35 plan"
LAYOUT_KEYS = {f"parallel.{name}" for name in (*TRAINING, *ROLLOUT)}
# The search enumerates divisor combinations of the world size: 1024 x 8 takes ~13 s on a 2-core
# machine, and its cost grows faster than the world. Larger clusters are refused with a message.
MAX_DEVICES = 8192


class UsageError(UserError):
    """A mistake in the command line: one message, exit 2 (errors.answered prints it)."""


def overrides_of(lo: Layout) -> list[str]:
    values = {name: getattr(lo, name) for name in (*TRAINING, *ROLLOUT)}
    return [f"parallel.{name}={'null' if value is None else value}" for name, value in values.items()]


def _key(override: str) -> str:
    return override.split("=", 1)[0].lstrip("+~")


def base_overrides(overrides: list[str]) -> list[str]:
    """The user's overrides without the layout numbers the planner chooses."""
    return [o for o in overrides if _key(o) not in LAYOUT_KEYS]


def name_of(rank: int, lo: Layout) -> str:
    """A `parallel` option name that says the layout: r01_tp2_pp4_ep16_gtp16 (+ cp, etp, vpp, rollout dp/ep)."""
    parts = [f"r{rank:02d}", f"tp{lo.tp}", f"pp{lo.pp}"]
    parts += [f"cp{lo.cp}"] if lo.cp > 1 else []
    parts += [f"ep{lo.ep}"] + ([f"etp{lo.etp}"] if lo.etp > 1 else []) + ([f"vpp{lo.vpp}"] if lo.vpp else [])
    parts += [f"gtp{lo.gen_tp}"] + ([f"gdp{lo.gen_dp}"] if lo.gen_dp > 1 else [])
    parts += [f"gep{lo.gen_ep}"] if lo.gen_ep > 1 else []
    return "_".join(parts)


def record(rank: int | None, c: Candidate, base: list[str], current: bool) -> dict[str, Any]:
    """One JSON object: layout numbers, the overrides that give it, the estimate, whether it fits."""
    return {
        "rank": rank,
        "current": current,
        "layout": c.numbers(),
        "overrides": [*base, *overrides_of(c.layout)],
        "fits": c.fits,
        "warnings": list(c.warnings),
        "cost": {
            "cross_node_gib_per_step": round(c.cost.cross_node_gib, 3),
            "communication_gib_per_step": round(c.cost.total_comm_gib, 3),
            "pipeline_bubble": round(c.cost.bubble, 4),
            "memory_headroom": round(c.cost.headroom, 4),
        },
        "estimate": c.estimate.as_dict(),
    }


def table(rows: list[tuple[str, Candidate]]) -> str:
    head = ("rank", "tp", "pp", "cp", "ep", "etp", "vpp", "gen tp/dp/ep", "train GiB", "rollout GiB", "x-node GiB")
    head += ("bubble", "headroom", "override line")
    body = []
    for rank, c in rows:
        lo, e, k = c.layout, c.estimate, c.cost
        body.append(
            (
                rank,
                *(str(getattr(lo, n)) if getattr(lo, n) is not None else "-" for n in TRAINING),
                f"{lo.gen_tp}/{lo.gen_dp}/{lo.gen_ep}",
                f"{e.train_gib:.1f}",
                f"{e.rollout_gib:.1f}",
                f"{k.cross_node_gib:.1f}",
                f"{100 * k.bubble:.1f}%",
                f"{100 * k.headroom:.0f}%",
                " ".join(overrides_of(lo)),
            )
        )
    return tabulate(body, headers=head, tablefmt="plain", disable_numparse=True)


def sweep_command(directory: Path, base: list[str], names: list[str]) -> list[str]:
    kept = [o for o in base if _key(o) != "parallel"]
    dry = [] if any(_key(o) == "dry_run" for o in kept) else ["dry_run=true"]
    return [
        sys.executable,
        "-m",
        "verl_qwen35",
        "-m",
        "--config-dir",
        str(directory.resolve()),
        *kept,
        f"parallel={','.join(names)}",
        *dry,
    ]


def write_sweep(directory: Path, listed: list[tuple[str, Candidate]], cfg: DictConfig) -> list[str]:
    """DIR/parallel/<name>.yaml per listed layout: `parallel` options a multirun sweeps by name."""
    (directory / "parallel").mkdir(parents=True, exist_ok=True)
    names = []
    for rank, c in listed:
        name = name_of(int(rank), c.layout)
        node = {"nnodes": c.layout.nnodes, "devices_per_node": c.layout.devices_per_node, **c.numbers()}
        header = f"# Layout {rank} of {PROG} for {cfg.model.name} on {c.layout.nnodes}x{c.layout.devices_per_node}.\n"
        (directory / "parallel" / f"{name}.yaml").write_text(header + OmegaConf.to_yaml(node))
        names.append(name)
    return names


def _writable_dir(directory: Path) -> None:
    """--sweep DIR must be a directory this user can create or write into; checked before any search."""
    existing = next(p for p in (directory.absolute(), *directory.absolute().parents) if p.exists())
    if existing == directory.absolute() and not existing.is_dir():
        raise UsageError(f"--sweep {directory}: is a file, not a directory; give a new or existing directory")
    if not existing.is_dir() or not os.access(existing, os.W_OK | os.X_OK):
        raise UsageError(f"--sweep {directory}: {existing} is not a writable directory; choose another DIR")


def _parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.splitlines()[0])
    parser.add_argument("overrides", nargs="*", help="the same overrides as python -m verl_qwen35")
    parser.add_argument("--top", type=int, default=10, help="how many layouts to list (0: every one that fits)")
    parser.add_argument("--format", choices=("table", "json"), default="table")
    parser.add_argument("--json", dest="format", action="store_const", const="json", help="the same as --format json")
    parser.add_argument("--sweep", type=Path, metavar="DIR", help="write the listed layouts to DIR and sweep them")
    parser.add_argument(
        "--config-dir", "-cd", type=Path, help="a directory of your own config groups, as for the entrypoint"
    )
    args = parser.parse_intermixed_args(argv)
    if args.top < 0:
        parser.error("--top must be >= 0")
    return args


def _compose(overrides: list[str], config_dirs: list[Path]) -> tuple[DictConfig, DictConfig, Layout]:
    """(composed, resolved copy, its own layout), or a UsageError naming what to fix."""
    cfg = compose(
        overrides, config_dirs=config_dirs
    )  # Hydra's and OmegaConf's errors: errors.answered names the override or key
    resolved = cfg.copy()
    resolve_naming_key(resolved)
    own = Layout.of(resolved)
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
    except InputError as err:
        raise UsageError(f"{err}; nothing searched") from None
    return cfg, resolved, own


def _print_table(
    resolved: DictConfig, own: Layout, found: Search, rows: list[tuple[str, Candidate]], current: Candidate | None
) -> None:
    current_rank = next((rank for rank, c in rows if c.layout == own), None)
    shown = rows + ([("current", current)] if current is not None and current_rank is None else [])
    print(
        f"{resolved.model.name} on {own.nnodes} x {own.devices_per_node} = {own.world} "
        f"{device_of(resolved).upper()}s ({resolved.hardware.device_memory_gib:g} GiB each): "
        f"{found.training_accepted} training layouts (of {found.training_judged} judged) x "
        f"{found.rollout_accepted} rollout layouts accepted"
    )
    if shown:
        print(table(shown))
    print(
        "ranked: fits, no warnings, less traffic across nodes, less traffic, smaller pipeline bubble, "
        "more memory headroom (verl_qwen35/planner/search.py)"
    )
    if current is None:
        print("current: the preflight refuses the config's own layout (see python -m verl_qwen35 ... dry_run=true)")
    elif current_rank is not None:
        print(f"current: the config's own layout is rank {current_rank}")


def _print_json(own: Layout, base: list[str], rows: list[tuple[str, Candidate]], current: Candidate | None) -> None:
    out = [record(int(rank), c, base, c.layout == own) for rank, c in rows]
    if current is not None and not any(c.layout == own for _, c in rows):
        out.append(record(None, current, base, True))
    print(json.dumps(out, indent=2))


def _nothing_fits(resolved: DictConfig, own: Layout, found: Search) -> int:
    if not found.training_accepted or not found.rollout_accepted:
        print(
            f"{PROG}: the preflight accepts no {'training' if not found.training_accepted else 'rollout'} layout of "
            f"{resolved.model.name} on {own.nnodes} x {own.devices_per_node} = {own.world} devices "
            f"({found.training_judged} training, {found.rollout_judged} rollout layouts judged); use a "
            "parallel.devices_per_node and parallel.nnodes whose product the model's heads and experts divide "
            "(e.g. 8 or 16 devices per node), and data.train_batch_size divisible by the data parallelism",
            file=sys.stderr,
        )
        return 2
    closest = ", ".join(
        f"{' '.join(overrides_of(c.layout))} needs {c.estimate.peak_gib:.0f} GiB" for c in found.closest[:3]
    )
    print(
        f"{PROG}: no accepted layout fits in memory on {own.nnodes} x {own.devices_per_node} "
        f"(hardware.device_memory_gib={resolved.hardware.device_memory_gib:g}); closest: {closest or 'none'}. "
        "Raise parallel.nnodes, or check hardware.* against your machines.",
        file=sys.stderr,
    )
    return 2


def run(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    if args.sweep is not None:
        _writable_dir(args.sweep)
    config_dirs = [args.config_dir] if args.config_dir else []
    cfg, resolved, own = _compose(args.overrides, config_dirs)
    found = search(resolved, device_of(resolved), top=args.top + 5 if args.top else 0)
    listed, refusal = verified(cfg, found, args.top)
    if refusal and not listed:
        for problem in refusal:
            print(problem, file=sys.stderr)
        raise UsageError("the preflight refuses the best layouts for the reasons above; fix those overrides first")
    current, _ = judge(cfg, own)
    base = base_overrides(args.overrides)
    rows = [(str(i + 1), c) for i, c in enumerate(listed)]
    if args.format == "json":
        _print_json(own, base, rows, current)
    else:
        _print_table(resolved, own, found, rows, current)
        print(f"took {time.perf_counter() - started:.2f} s after start-up (compose, search, verify)")
        if refusal:
            print(f"note: layouts the search accepted but the whole preflight refused were left out: {refusal[0]}")
    if not listed:
        return _nothing_fits(resolved, own, found)
    if args.sweep is None:
        if args.format == "table":
            own_dir = [f"--config-dir {args.config_dir}"] if args.config_dir else []
            line = " ".join([PROG, *own_dir, *args.overrides, f"--top {len(listed)}", "--sweep DIR"])
            print(f"sweep:   {line}  (writes DIR/parallel/*.yaml, runs them as one multirun)")
        return 0
    try:
        for own_dir in config_dirs:  # one --config-dir for the multirun: the user's groups join the layouts
            shutil.copytree(own_dir, args.sweep, dirs_exist_ok=True)
        names = write_sweep(args.sweep, rows, cfg)
    except OSError as err:
        raise UsageError(f"--sweep {args.sweep}: cannot write the layouts ({err.strerror}: {err.filename})") from None
    command = sweep_command(args.sweep, base, names)
    print("sweep:   " + " ".join(command[1:]), file=sys.stderr, flush=True)
    return subprocess.run(command, check=False).returncode


def main(argv: list[str] | None = None) -> int:
    args = _parse(argv)
    with answered(PROG):  # the entrypoint's answers: one message and exit 2, `| head` ends quietly
        code = run(args)
        sys.stdout.flush()
    return code


if __name__ == "__main__":
    sys.exit(main())
