"""Time verl_qwen35's entrypoint against verl's own main_ppo, and its dry run and sweep.

Prints figures, asserts nothing: the targets in the issues are machine-dependent, so the
script reports whether they are met and leaves the judgement to the reader. Wall time is
what the targets are about; child CPU time is printed beside it because it moves far less
with load from other processes, so it tells a regression from a noisy machine.

    python scripts/benchmark.py                  # all sections, 7 paired rounds
    python scripts/benchmark.py --only cfg --rounds 11
    python scripts/benchmark.py --only planner
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import datetime
from importlib.metadata import version
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SEED = REPO / "tests" / "seed_fidelity" / "seed_overrides" / "122b_npu.txt"
PRESET = ["device=npu", "model=122b"]
# 2^5 = 32 layouts that all pass the whole preflight, memory estimate included, on the preset's
# 64 devices (`python -m verl_qwen35.layouts` lists them as accepted and fitting), so the time is
# that of 32 complete dry runs, not of early refusals.
SWEEP = ["parallel.tp=2,4", "parallel.ep=8,16", "parallel.gen_tp=8,16", "parallel.cp=1,2", "parallel.vpp=null,3"]
SECTIONS = ("cfg", "dryrun", "sweep", "planner")
# Targets from the issues (seconds, or a speed-up factor; the sweep's is in single dry runs).
CFG_WALL, CFG_RATIO, DRYRUN_WALL, SWEEP_WALL, SWEEP_RATIO = 1.5, 15.0, 0.5, 30.0, 10.0
# The layout planner's biggest shipped search: 397B on 16 x 16 Ascend dies.
PLANNER = ["model=397b", "device=npu", "--top", "10"]
PLANNER_WALL = 3.0
HEAVY = ("torch", "ray", "verl")


@dataclass
class Row:
    """One line of the closing table."""

    section: str
    figure: str
    value: str
    target: str = ""
    met: bool | None = None


@dataclass
class Timed:
    """One finished command: wall and CPU (user + sys) seconds, and its captured output."""

    wall: float
    cpu: float
    stdout: str
    stderr: str


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run(args: list[str], cwd: Path) -> Timed:
    """Time `python ARGS` with this interpreter; exit non-zero if the command itself fails.

    A failed command would time an error path, not the work, so the figures would lie.
    """
    cmd = [sys.executable, *args]
    cpu0, start = _children_cpu(), time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, check=False)
    wall, cpu = time.perf_counter() - start, _children_cpu() - cpu0
    if proc.returncode != 0:
        tail = "\n".join((proc.stderr or proc.stdout).splitlines()[-30:])
        sys.exit(f"benchmark: command failed (exit {proc.returncode}): {' '.join(cmd)}\n{tail}")
    return Timed(wall, cpu, proc.stdout, proc.stderr)


def seed_overrides() -> list[str]:
    """The seed launch's overrides for 122b/npu, minus keys the installed verl no longer has."""
    text = SEED.read_text().partition("#ENV")[0]
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.startswith("#")]
    if version("verl").split(".")[:2] == ["0", "9"]:
        # verl 0.9 removed megatron.grad_offload; main_ppo would refuse the override.
        lines = [ln for ln in lines if "grad_offload=" not in ln]
    return lines


def fmt(seconds: float) -> str:
    return f"{seconds:.3f} s"


def verdict(met: bool) -> str:
    return "met" if met else "NOT met"


def load() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def summary(section: str, label: str, runs: list[Timed]) -> tuple[float, list[Row], str]:
    """(median wall, table rows, printed line) of repeated runs of one command."""
    walls, cpus = [r.wall for r in runs], [r.cpu for r in runs]
    med = statistics.median(walls)
    rows = [
        Row(section, f"{label} min", fmt(min(walls))),
        Row(section, f"{label} median cpu", fmt(statistics.median(cpus))),
    ]
    line = f"  {label:<12} median {fmt(med)}  min {fmt(min(walls))}  median cpu {fmt(statistics.median(cpus))}"
    return med, rows, line


def bench_cfg(rounds: int, warmup: int, tmp: Path) -> list[Row]:
    """Paired rounds (A, B, A, B, ...) so load spikes on the 2 noisy cores hit both commands alike."""
    ours = ["-m", "verl_qwen35", *PRESET, "--cfg", "job", "--resolve"]
    verl = ["-m", "verl.trainer.main_ppo", "--cfg", "job", *seed_overrides()]
    for _ in range(warmup):  # warm .pyc and page cache; not counted
        run(ours, tmp)
        run(verl, tmp)
    a: list[Timed] = []
    b: list[Timed] = []
    print(f"cfg: {rounds} paired rounds (verl_qwen35 --cfg job --resolve  vs  verl main_ppo --cfg job)")
    for i in range(rounds):
        a.append(run(ours, tmp))
        b.append(run(verl, tmp))
        print(
            f"  round {i + 1}: verl_qwen35 {fmt(a[-1].wall)}  main_ppo {fmt(b[-1].wall)}"
            f"  ratio {b[-1].wall / a[-1].wall:.1f}x"
        )
    med_a, rows_a, line_a = summary("cfg", "verl_qwen35", a)
    med_b, rows_b, line_b = summary("cfg", "main_ppo", b)
    ratio = med_b / med_a
    cpu_ratio = statistics.median(r.cpu for r in b) / statistics.median(r.cpu for r in a)
    print(line_a)
    print(line_b)
    print(f"  ratio of medians {ratio:.2f}x (cpu {cpu_ratio:.2f}x)")
    print(f"  target >= {CFG_RATIO:.0f}x: {verdict(ratio >= CFG_RATIO)}")
    print(f"  target < {CFG_WALL} s: {verdict(med_a < CFG_WALL)}")
    rows = [
        Row("cfg", "verl_qwen35 median", fmt(med_a), f"< {CFG_WALL} s", med_a < CFG_WALL),
        *rows_a,
        Row("cfg", "main_ppo median", fmt(med_b)),
        *rows_b,
        Row("cfg", "ratio of medians", f"{ratio:.2f}x", f">= {CFG_RATIO:.0f}x", ratio >= CFG_RATIO),
        Row("cfg", "ratio of median cpu", f"{cpu_ratio:.2f}x"),
    ]
    return rows


def heavy_imports(importtime_log: str) -> dict[str, list[str]]:
    """Modules under each HEAVY top-level name in a `-X importtime` log."""
    found: dict[str, list[str]] = {name: [] for name in HEAVY}
    for line in importtime_log.splitlines():
        if not line.startswith("import time:") or "|" not in line:
            continue
        module = line.rsplit("|", 1)[1].strip()
        top = module.split(".", 1)[0]
        if top in found:
            found[top].append(module)
    return found


def bench_dryrun(rounds: int, warmup: int, tmp: Path) -> tuple[list[Row], Timed]:
    """Dry run of a shipped preset, plus one `-X importtime` run to prove torch stays out."""
    cmd = ["-m", "verl_qwen35", *PRESET, "dry_run=true"]
    for _ in range(warmup):
        run(cmd, tmp)
    runs = [run(cmd, tmp) for _ in range(rounds)]
    med, rows_d, line = summary("dryrun", "dry run", runs)
    heavy = heavy_imports(run(["-X", "importtime", *cmd], tmp).stderr)
    print(f"dryrun: {rounds} runs of verl_qwen35 {' '.join(PRESET)} dry_run=true")
    print(line)
    print(f"  target < {DRYRUN_WALL} s: {verdict(med < DRYRUN_WALL)}")
    rows = [Row("dryrun", "dry run median", fmt(med), f"< {DRYRUN_WALL} s", med < DRYRUN_WALL), *rows_d]
    for name, modules in heavy.items():
        shown = "no" if not modules else f"yes ({len(modules)} modules, e.g. {modules[0]})"
        print(f"  {name} imported: {shown}")
        rows.append(Row("dryrun", f"{name} imported", "no" if not modules else "yes", "no", not modules))
    return rows, Timed(med, statistics.median(r.cpu for r in runs), "", "")


_LAUNCH = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})\]\[HYDRA\]\s+#\d+ :", re.MULTILINE)


def launch_times(stdout: str) -> list[datetime]:
    """When Hydra's basic launcher started each job (its `#k :` log lines, local time)."""
    return [datetime.strptime(s, "%Y-%m-%d %H:%M:%S,%f") for s in _LAUNCH.findall(stdout)]


def bench_sweep(rounds: int, tmp: Path, single: Timed) -> list[Row]:
    """The 32-job dry-run multirun, `rounds` times (at least 3); the medians are compared.

    The time before the first launch is reported apart: Hydra's sweeper composes every job
    once to validate the batch before the launcher runs them.
    """
    runs: list[tuple[Timed, int, float, float]] = []
    for i in range(max(3, rounds)):
        sweep_dir = tmp / f"sweep{i}"
        cmd = ["-m", "verl_qwen35", "-m", *PRESET, *SWEEP, "dry_run=true", f"hydra.sweep.dir={sweep_dir}"]
        began = datetime.now()
        done = run(cmd, tmp)
        jobs = sum(1 for p in sweep_dir.iterdir() if p.is_dir() and p.name.isdigit())
        stamps = launch_times(done.stdout)
        gaps = [(b - a).total_seconds() for a, b in zip(stamps, stamps[1:], strict=False)]
        gap = statistics.median(gaps) if gaps else float("nan")
        before = (stamps[0] - began).total_seconds() if stamps else float("nan")
        runs.append((done, jobs, before, gap))
    wall = statistics.median(r[0].wall for r in runs)
    cpu = statistics.median(r[0].cpu for r in runs)
    jobs = runs[0][1]
    per_job = wall / jobs if jobs else float("nan")
    before = statistics.median(r[2] for r in runs)
    gap = statistics.median(r[3] for r in runs)
    print(f"sweep: {len(runs)} runs of {jobs} dry-run jobs in one multirun ({' '.join(SWEEP)})")
    print(f"  median total {fmt(wall)} (cpu {fmt(cpu)}; min {fmt(min(r[0].wall for r in runs))})")
    print(f"  per job {fmt(per_job)} (wall / jobs)")
    print(f"  before first job {fmt(before)}  median job-to-job {fmt(gap)} (Hydra log)")
    print(f"  target < {SWEEP_WALL:.0f} s: {verdict(wall < SWEEP_WALL)}")
    singles, singles_cpu = wall / single.wall, cpu / single.cpu
    met = singles <= SWEEP_RATIO
    print(f"  = {singles:.1f} single dry runs (median {fmt(single.wall)}); target <= {SWEEP_RATIO:.0f}: {verdict(met)}")
    print(f"  = {singles_cpu:.1f} single dry runs in cpu time (median {fmt(single.cpu)})")
    return [
        Row("sweep", f"median total ({jobs} jobs)", fmt(wall), f"< {SWEEP_WALL:.0f} s", wall < SWEEP_WALL),
        Row("sweep", "total / single dry run", f"{singles:.1f}x", f"<= {SWEEP_RATIO:.0f}x", met),
        Row("sweep", "total cpu / single dry run cpu", f"{singles_cpu:.1f}x"),
        Row("sweep", "median total cpu", fmt(cpu)),
        Row("sweep", "per job (wall / jobs)", fmt(per_job)),
        Row("sweep", "before first job", fmt(before)),
        Row("sweep", "per job (median job-to-job)", fmt(gap)),
    ]


def bench_planner(rounds: int, tmp: Path) -> list[Row]:
    """The layout planner on 397B / 16 x 16 NPUs: the whole command, and its own search time."""
    cmd = ["-m", "verl_qwen35.cli.plan", *PLANNER]
    run(cmd, tmp)  # warm
    runs = [run(cmd, tmp) for _ in range(max(3, rounds // 2))]
    med, rows, line = summary("planner", "planner", runs)
    inner = [float(m.group(1)) for r in runs if (m := re.search(r"^took (\d+\.\d+) s", r.stdout, re.MULTILINE))]
    print(f"planner: {len(runs)} runs of python -m verl_qwen35.cli.plan {' '.join(PLANNER)}")
    print(line)
    if inner:
        print(f"  after start-up (compose, search, verify): median {fmt(statistics.median(inner))}")
    print(f"  target < {PLANNER_WALL} s: {verdict(med < PLANNER_WALL)}")
    return [Row("planner", "397B 16x16 median", fmt(med), f"< {PLANNER_WALL} s", med < PLANNER_WALL), *rows]


def table(rows: list[Row]) -> str:
    head = ("section", "figure", "value", "target", "met")
    body = [(r.section, r.figure, r.value, r.target, "" if r.met is None else verdict(r.met)) for r in rows]
    widths = [max(len(line[i]) for line in (head, *body)) for i in range(len(head))]
    return "\n".join(
        "  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip() for line in (head, *body)
    )


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7, help="paired rounds for cfg, runs for dryrun")
    parser.add_argument("--warmup", type=int, default=1, help="uncounted runs first (pyc, page cache)")
    parser.add_argument(
        "--only", default=",".join(SECTIONS), help=f"comma-separated sections out of {','.join(SECTIONS)}"
    )
    args = parser.parse_args(argv)
    args.only = [s.strip() for s in args.only.split(",") if s.strip()]
    unknown = set(args.only) - set(SECTIONS)
    if unknown or not args.only:
        parser.error(f"--only takes sections out of {','.join(SECTIONS)}, got {','.join(sorted(unknown))}")
    if args.rounds < 1 or args.warmup < 0:
        parser.error("--rounds must be >= 1 and --warmup >= 0")
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    print(f"python {sys.version.split()[0]} ({sys.executable}), verl {version('verl')}, {os.cpu_count()} cpus")
    print(f"start: {load()}")
    rows: list[Row] = []
    # Hydra writes outputs/ (and the sweep dir) under cwd: keep them out of the repo.
    with tempfile.TemporaryDirectory(prefix="verl_qwen35_bench_") as name:
        tmp = Path(name)
        if "cfg" in args.only:
            rows += bench_cfg(args.rounds, args.warmup, tmp)
        single = None
        if "dryrun" in args.only:
            dry_rows, single = bench_dryrun(args.rounds, args.warmup, tmp)
            rows += dry_rows
        if "sweep" in args.only:
            if single is None:  # the sweep's target is in single dry runs
                cmd = ["-m", "verl_qwen35", *PRESET, "dry_run=true"]
                alone = [run(cmd, tmp) for _ in range(3)]
                walls, cpus = [r.wall for r in alone], [r.cpu for r in alone]
                single = Timed(statistics.median(walls), statistics.median(cpus), "", "")
            rows += bench_sweep(args.rounds, tmp, single)
        if "planner" in args.only:
            rows += bench_planner(args.rounds, tmp)
    print(f"end: {load()}")
    print()
    print(table(rows))


if __name__ == "__main__":
    main()
