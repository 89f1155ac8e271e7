"""Which rollout layouts a measured run used: the planner marks a layout whose rollout no published run timed.

The step-time model's `gen` phase is fitted on the published rows (verl_qwen35/data/calibration/measurements.yaml)
of each device kind; a rollout of another kind (vLLM data-parallel attention, expert parallelism) is the model's
extrapolation from them, and a person choosing between layouts should see which numbers rest on a measurement.
A rollout's kind here: plain TP engines, TP x DP engines, or TP x DP with EP over the replica (verl's
`rollout.data_parallel_size`, `expert_parallel_size`).
"""

import functools
from collections.abc import Mapping
from typing import Any

from verl_qwen35.model.calibration import load_measurements, row_hardware
from verl_qwen35.model.layout import Layout

SOURCE = "verl_qwen35/data/calibration/measurements.yaml"
# Rows whose rollout was timed: a GRPO step (its `gen`, or the whole `step` it is part of) or a serving benchmark.
TIMED = {"grpo": ("gen", "step"), "serve": ("gen",)}


def kind_of(gen_dp: int, gen_ep: int) -> tuple[bool, bool]:
    """(data-parallel engines, expert parallelism): the rollout's kind."""
    return gen_dp > 1, gen_ep > 1


def describe(kind: tuple[bool, bool]) -> str:
    dp, ep = kind
    return "TP x DP engines with EP" if ep else "TP x DP engines" if dp else "TP engines only"


def _row_kind(row: Mapping[str, Any]) -> tuple[bool, bool] | None:
    phases = TIMED.get(row.get("kind", ""))
    if not phases or not any(p in row.get("phases", {}) for p in phases):
        return None
    run = row["run"]
    return kind_of(int(run.get("gen_dp", 1)), int(run.get("gen_ep", 1)))


@functools.cache
def measured_kinds(device: str) -> frozenset[tuple[bool, bool]]:
    """The rollout kinds the published rows of this device kind timed."""
    kinds = set()
    for row in load_measurements():
        if row_hardware(row).get("device") == device and (kind := _row_kind(row)) is not None:
            kinds.add(kind)
    return frozenset(kinds)


def rollout_measured(lo: Layout, device: str) -> bool:
    return kind_of(lo.gen_dp, lo.gen_ep) in measured_kinds(device)


def unmeasured_note(lo: Layout, device: str) -> str:
    """Why a row's rollout is marked: what it is, what the measured rows of this device kind used."""
    seen = ", ".join(sorted(describe(k) for k in measured_kinds(device))) or "none"
    return (
        f"no measured run on {device} used a rollout of {describe(kind_of(lo.gen_dp, lo.gen_ep))} (the published "
        f"rows in {SOURCE} timed: {seen}); its gen seconds are the model's extrapolation: a trial run measures them"
    )
