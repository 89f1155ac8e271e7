"""Time verl_qwen35's commands in one venv and print them beside their targets.

A user waits for these commands before every launch, so each has a wall-time target (a median
over rounds, so one load spike does not decide it); verl's own `main_ppo --cfg job` is printed
beside as the baseline of what composing verl's config costs without this package. Targets
depend on the machine, so the script asserts nothing: it prints a table and exits 0. Only a
command that fails stops it (exit 1): its time would be that of an error path.

The timed code is this checkout (its directory goes first on PYTHONPATH), run by the
interpreter of `--python`, so the same script measures the config-only venv and the full one.
Every command runs in a temporary directory with HOME (and XDG_CACHE_HOME) inside it, so run
directories, caches and Ray's files never reach the repository, ~/.cache or ~/.ray (only Python's
bytecode cache does, which git ignores: timed runs read it, as from an installed package). The
presets' data files are then absent, which a dry run only warns about.

    python scripts/benchmark.py --python .venv-verl0.9/bin/python
    python scripts/benchmark.py --python /tmp/cfgvenv/bin/python --rounds 3 --only dryrun
    python scripts/benchmark.py --only sweep-memory            # one 1,000-job dry-run sweep, ~1 s a job
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SEED = REPO / "tests" / "seed_fidelity" / "seed_overrides" / "122b_npu.txt"
PRESET = ["device=npu", "model=122b"]
# 2^5 = 32 layouts that all pass the whole preflight on the preset's 64 devices, so the sweep
# times 32 complete dry runs, not early refusals.
SWEEP = ["parallel.tp=2,4", "parallel.ep=8,16", "parallel.gen_tp=8,16", "parallel.cp=1,2", "parallel.vpp=null,3"]
# The planner's biggest shipped search: 397B on 16 x 16 Ascend devices.
PLAN = ["model=397b", "device=npu", "--top", "10"]
SECTIONS = ("dryrun", "cfg", "sweep", "planner", "full", "sweep-memory", "picture")
# The largest shipped grid (16 x 16): a dry run that also draws plan.picture, against the same dry run without.
PICTURE = ["model=397b", "device=npu", "dry_run=true"]
DRYRUN_MAX, CFG_MAX, SWEEP_MAX_SINGLES, PLANNER_MAX, FULL_MAX = 1.0, 0.8, 20.0, 3.0, 30.0
# dry_run=full reads the data files (their rows set the run's steps): one batch of the preset, written here.
WRITE_DATA = """
import sys, pyarrow as pa, pyarrow.parquet as pq
rows = 128
table = pa.table({"prompt": [[{"role": "user", "content": "1+1?"}]] * rows, "data_source": ["geo3k"] * rows,
                  "reward_model": [{"style": "rule", "ground_truth": "2"}] * rows})
for path in sys.argv[1:]:
    pq.write_table(table, path)
"""
# Peak RSS of a 1,000-job dry-run sweep (one process runs every job): each job's configs must be let go
# when it ends (run/sweep.py SweepSummary.on_job_end). One value swept over 1,000 jobs that all pass.
MEMORY_JOBS, MEMORY_SMALL_JOBS, SWEEP_RSS_MAX_MIB = 1000, 10, 500

PROBE = """
import importlib.metadata as md, importlib.util as u, json, sys, verl_qwen35
print(json.dumps({"python": sys.version.split()[0], "verl": md.version("verl"),
                  "torch": u.find_spec("torch") is not None, "package": verl_qwen35.__file__}))
"""


class Runner:
    """Runs `PYTHON ARGS` in the temporary directory and returns wall seconds."""

    def __init__(self, python: str, tmp: Path, rounds: int):
        self.python, self.cwd, self.rounds = python, tmp, rounds
        home = tmp / "home"
        home.mkdir()
        path = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)
        self.env = {**os.environ, "HOME": str(home), "XDG_CACHE_HOME": str(home / ".cache"), "PYTHONPATH": path}
        # The warm-up run caches bytecode, as an installed package has it (pip compiles at install): an image's
        # PYTHONDONTWRITEBYTECODE=1 would have this checkout and a --no-compile venv compiled on every run.
        self.env.pop("PYTHONDONTWRITEBYTECODE", None)

    def call(self, args: list[str]) -> subprocess.CompletedProcess[str]:
        cmd = [self.python, *args]
        return subprocess.run(cmd, cwd=self.cwd, env=self.env, capture_output=True, text=True, check=False)

    def time(self, args: list[str]) -> float:
        start = time.perf_counter()
        proc = self.call(args)
        wall = time.perf_counter() - start
        if proc.returncode != 0:
            tail = "\n".join((proc.stderr or proc.stdout).splitlines()[-30:])
            sys.exit(f"benchmark: exit {proc.returncode}: {self.python} {' '.join(args)}\n{tail}")
        return wall

    def peak_rss_mib(self, args: list[str]) -> float:
        """Peak resident memory of the process `PYTHON ARGS` (its own rusage, from os.wait4), in MiB."""
        with tempfile.TemporaryFile("w+") as log:
            proc = subprocess.Popen([self.python, *args], cwd=self.cwd, env=self.env, stdout=log, stderr=log, text=True)
            _, status, usage = os.wait4(proc.pid, 0)
            proc.returncode = os.waitstatus_to_exitcode(status)
            if proc.returncode != 0:
                log.seek(0)
                tail = "\n".join(log.read().splitlines()[-30:])
                sys.exit(f"benchmark: exit {proc.returncode}: {self.python} {' '.join(args)}\n{tail}")
        return usage.ru_maxrss / 1024  # KiB on Linux

    def median(self, label: str, args: list[str]) -> float:
        """One uncounted warm-up run (.pyc, page cache), then the median of `rounds` runs."""
        self.time(args)
        walls = [self.time(args) for _ in range(self.rounds)]
        print(f"{label}: " + " ".join(f"{w:.3f}" for w in walls) + " s")
        return statistics.median(walls)


def seed_overrides(verl_version: str) -> list[str]:
    """The overrides verl's own launch script passes for 122b/npu, minus keys this verl lacks."""
    lines = SEED.read_text().partition("#ENV")[0].splitlines()
    lines = [ln for ln in lines if ln.strip() and not ln.startswith("#")]
    if verl_version.startswith("0.9."):  # verl 0.9 removed megatron.grad_offload
        lines = [ln for ln in lines if "grad_offload=" not in ln]
    return lines


def sweep_memory(runner: Runner) -> tuple[str, str, str, str, str]:
    """Peak RSS of a 1,000-job dry-run sweep, and what each job adds (against a 10-job sweep): one run each."""
    peaks = {}
    for jobs in (MEMORY_SMALL_JOBS, MEMORY_JOBS):
        out = runner.cwd / f"memory_sweep_{jobs}"
        sweep = ["-m", "verl_qwen35", "-m", *PRESET, f"trainer.total_epochs=range(1,{jobs + 1})", "dry_run=true"]
        peaks[jobs] = runner.peak_rss_mib([*sweep, f"hydra.sweep.dir={out}"])
        print(f"sweep memory ({jobs} jobs): peak RSS {peaks[jobs]:.0f} MiB")
    per_job = (peaks[MEMORY_JOBS] - peaks[MEMORY_SMALL_JOBS]) / (MEMORY_JOBS - MEMORY_SMALL_JOBS) * 1024
    met = verdict(peaks[MEMORY_JOBS] < SWEEP_RSS_MAX_MIB)
    peak = f"{peaks[MEMORY_JOBS]:.0f} MiB"
    return (f"{MEMORY_JOBS}-job sweep peak RSS", peak, f"< {SWEEP_RSS_MAX_MIB} MiB", met, f"{per_job:.0f} KiB/job")


def seconds(value: float) -> str:
    return f"{value:.3f} s"


def verdict(ok: bool) -> str:
    return "yes" if ok else "NO"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", default=sys.executable, help="interpreter (venv) to time; default: this one")
    parser.add_argument("--rounds", type=int, default=7, help="timed runs of each command (default 7)")
    parser.add_argument("--only", action="append", choices=SECTIONS, help="run this section only (repeatable)")
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error("--rounds must be >= 1")
    only = args.only or SECTIONS

    # (figure, median, target, met, ratio)
    rows: list[tuple[str, str, str, str, str]] = []
    with tempfile.TemporaryDirectory(prefix="verl_qwen35_bench_") as name:
        runner = Runner(args.python, Path(name), args.rounds)
        probe = runner.call(["-c", PROBE])
        if probe.returncode != 0:
            sys.exit(f"benchmark: {args.python} cannot import verl_qwen35 and verl:\n{probe.stderr}")
        info = json.loads(probe.stdout)
        print(f"python {info['python']} ({args.python}), verl {info['verl']}, torch {'yes' if info['torch'] else 'no'}")
        print(f"verl_qwen35 from {info['package']}; {os.cpu_count()} cpus, load {os.getloadavg()[0]:.2f}")

        dry = None
        if "dryrun" in only or "sweep" in only:  # the sweep's target is in single dry runs
            dry = runner.median("dry run", ["-m", "verl_qwen35", *PRESET, "dry_run=true"])
            rows.append(("dry run", seconds(dry), f"<= {DRYRUN_MAX} s", verdict(dry <= DRYRUN_MAX), ""))

        if "cfg" in only:
            cfg = runner.median("--cfg job --resolve", ["-m", "verl_qwen35", *PRESET, "--cfg", "job", "--resolve"])
            rows.append(("--cfg job --resolve", seconds(cfg), f"<= {CFG_MAX} s", verdict(cfg <= CFG_MAX), ""))
            if info["torch"]:
                ppo = ["-m", "verl.trainer.main_ppo", "--cfg", "job", *seed_overrides(info["verl"])]
                base = runner.median("verl main_ppo --cfg job", ppo)
                rows.append(("verl main_ppo --cfg job", seconds(base), "baseline", "", f"{base / cfg:.1f}x ours"))
            else:
                print("verl main_ppo --cfg job: skipped, it imports torch and this venv has none")
                rows.append(("verl main_ppo --cfg job", "skipped", "baseline", "", "imports torch"))

        if "sweep" in only:
            out = runner.cwd / "multirun"
            sweep = ["-m", "verl_qwen35", "-m", *PRESET, *SWEEP, "dry_run=true", f"hydra.sweep.dir={out}"]
            total = runner.median("sweep", sweep)
            jobs, singles = sum(1 for p in out.iterdir() if p.name.isdigit()), total / dry
            target, met = f"<= {SWEEP_MAX_SINGLES:.0f} dry runs", verdict(singles <= SWEEP_MAX_SINGLES)
            rows.append((f"{jobs}-job sweep", seconds(total), target, met, f"{singles:.1f} dry runs"))

        if "planner" in only:
            plan = ["-m", "verl_qwen35", "plan", *PLAN]
            wall = runner.median("planner (" + " ".join(plan[1:]) + ")", plan)
            rows.append(("planner 397B 16x16", seconds(wall), f"< {PLANNER_MAX} s", verdict(wall < PLANNER_MAX), ""))

        if "full" in only:
            if info["torch"]:
                data = [runner.cwd / "train.parquet", runner.cwd / "test.parquet"]
                runner.call(["-c", WRITE_DATA, *map(str, data)])
                files = [f"data.train_files={data[0]}", f"data.val_files={data[1]}"]
                wall = runner.median("dry_run=full", ["-m", "verl_qwen35", *PRESET, "dry_run=full", *files])
                rows.append(("dry_run=full", seconds(wall), f"< {FULL_MAX:.0f} s", verdict(wall < FULL_MAX), ""))
            else:
                print("dry_run=full: skipped, it needs torch, megatron-core and verl")
                rows.append(("dry_run=full", "skipped", f"< {FULL_MAX:.0f} s", "", "no torch"))
        if "sweep-memory" in only:
            rows.append(sweep_memory(runner))
        if "picture" in only:
            plain = runner.median("dry run 397B 16x16", ["-m", "verl_qwen35", *PICTURE])
            png = f"plan.picture={runner.cwd / 'layout.png'}"
            drawn = runner.median("dry run 397B 16x16 + plan.picture", ["-m", "verl_qwen35", *PICTURE, png])
            rows.append(("plan.picture 16x16 PNG", seconds(drawn), "no target", "", f"+{drawn - plain:.2f} s drawing"))

    head = ("figure", "median", "target", "met", "ratio")
    widths = [max(len(row[i]) for row in (head, *rows)) for i in range(len(head))]
    print()
    for row in (head, *rows):
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())


if __name__ == "__main__":
    main()
