"""`verl-qwen35 plan --trial K`: the first tier's K most informative layouts, and what trial runs of them cost.

Tier 1 holds the layouts the step-time model cannot tell apart. Measuring a few of them on the user's cluster is
what narrows the band (`calibrate` over the trials), and a measurement teaches most where the layouts differ most:
pipeline depth (the bubble), expert and tensor parallelism (the all-to-alls and GEMM sizes) and the rollout
(vLLM TP, data-parallel engines, expert parallelism). So the K are chosen by maximal spread over those dimensions:
the tier's first layout, then each time the one farthest (in the log2 sizes, each dimension scaled to its range in
the tier) from the nearest already chosen; ties go to the earlier in the tier's order.
"""

import math
from collections.abc import Sequence
from dataclasses import dataclass

from verl_qwen35.planner.search import Candidate


def coordinates(c: Candidate) -> tuple[float, ...]:
    """PP, EP, TP, rollout TP, rollout DP (log2) and rollout EP on or off."""
    lo = c.layout
    sizes = (lo.pp, lo.ep, lo.tp, lo.gen_tp, lo.gen_dp)
    return (*(math.log2(max(1, s)) for s in sizes), float(lo.gen_ep > 1))


def spread(candidates: Sequence[Candidate], k: int) -> list[Candidate]:
    """The first candidate, then greedily the farthest from those chosen (L1 over the scaled coordinates)."""
    if k <= 0 or not candidates:
        return []
    points = [coordinates(c) for c in candidates]
    ranges = [max(p[d] for p in points) - min(p[d] for p in points) for d in range(len(points[0]))]

    def distance(a: tuple[float, ...], b: tuple[float, ...]) -> float:
        return sum(abs(x - y) / r for x, y, r in zip(a, b, ranges, strict=True) if r > 0)

    chosen = [0]
    nearest = [distance(points[0], p) for p in points]
    while len(chosen) < min(k, len(candidates)):
        best = max((i for i in range(len(points)) if i not in chosen), key=lambda i: (nearest[i], -i))
        if nearest[best] == 0:
            break  # the rest repeat a chosen layout's coordinates (another VPP or stage split): nothing new to learn
        chosen.append(best)
        nearest = [min(n, distance(points[best], p)) for n, p in zip(nearest, points, strict=True)]
    return [candidates[i] for i in chosen]


@dataclass(frozen=True)
class Job:
    """One trial job: its option name, the steps it runs, its predicted seconds (point, low, high)."""

    name: str
    steps: int
    seconds: tuple[float, float, float]
    note: str = ""


@dataclass(frozen=True)
class Cost:
    """What a trial sweep costs, jobs run one after another (a `-m` sweep) on `world` devices."""

    jobs: list[Job]
    world: int

    @property
    def wall_hours(self) -> tuple[float, float, float]:
        return tuple(sum(j.seconds[i] for j in self.jobs) / 3600 for i in range(3))  # type: ignore[return-value]

    @property
    def device_hours(self) -> tuple[float, float, float]:
        return tuple(h * self.world for h in self.wall_hours)  # type: ignore[return-value]


def drill_names(name: str) -> tuple[str, str]:
    """The resume drill's two jobs of the last trial: its option names."""
    return f"{name}_save", f"{name}_resume"


def job_seconds(c: Candidate, steps: int, extra: float = 0.0) -> tuple[float, float, float]:
    t = c.time
    return (steps * t.total + extra, steps * t.low + extra, steps * t.high + extra)


def cost(named: Sequence[tuple[str, Candidate]], steps: int, write_seconds: float, drill: bool) -> Cost:
    """Each trial `steps` steps of its predicted time; with the drill, the last trial also writes one checkpoint
    (`write_seconds`) and a second job loads it (counted at the same rate) and runs one more step."""
    jobs = []
    for i, (name, c) in enumerate(named):
        last = drill and i == len(named) - 1
        save = write_seconds if last else 0.0
        if not last:
            jobs.append(Job(name, steps, job_seconds(c, steps)))
            continue
        save, resume = drill_names(name)
        jobs.append(Job(save, steps, job_seconds(c, steps, write_seconds), "saves a checkpoint at its last step"))
        jobs.append(Job(resume, 1, job_seconds(c, 1, write_seconds), "loads it, runs one more step"))
    world = named[0][1].layout.world if named else 0
    return Cost(jobs, world)
