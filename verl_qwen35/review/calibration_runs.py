"""A run directory's measured phases, for `verl-qwen35 calibrate`: the config that ran and each phase's seconds.

What `report` reads (review/report.py): the launch record (records/launch.py) for the config, the logs it
names (records/metrics.py) for verl's `timing_s/<phase>` of every step. A run directory is data from someone we
do not trust: the record is read as plain YAML (bounded, safe_load), and a record holding an interpolation
(`${...}`, which a launch escapes in every value it writes) is refused, never resolved. Every refusal names the
file.
"""

import re
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from verl_qwen35.checks.sections import structure_problems
from verl_qwen35.errors import UserError
from verl_qwen35.model.step_time import PHASES
from verl_qwen35.records.launch import LAUNCH_FILE, read_launch_file
from verl_qwen35.records.metrics import Metrics, log_places, read_run

# `${` after an even number of backslashes (none included): OmegaConf would resolve it (`\${` is escaped text).
_UNESCAPED = re.compile(r"(?<!\\)(?:\\\\)*\$\{")


@dataclass(frozen=True)
class MeasuredRun:
    run_dir: Path
    config: DictConfig
    phases: dict[str, float]  # phase -> median seconds over the steps after each start's first
    steps: int  # the steps those medians rest on
    response_mean: int | None  # median of verl's response_length/mean, the response length the phases ran at
    # The lengths the phases ran at (medians of verl's prompt_length/mean, response_length/mean and
    # response_length/max): `prompt`, `response`, `longest`, those the run logged.
    lengths: dict[str, int] = field(default_factory=dict)
    # Each phase's step-to-step spread: its steps' 10th and 90th percentile (nearest rank) over their median.
    spread: dict[str, tuple[float, float]] = field(default_factory=dict)


def interpolations(tree: Any, where: str = "") -> list[str]:
    """The keys of a plain config tree (`OmegaConf.to_container(resolve=False)`) whose value would be resolved."""
    if isinstance(tree, dict):
        return [k for key, value in tree.items() for k in interpolations(value, f"{where}.{key}" if where else key)]
    if isinstance(tree, list):
        return [k for i, value in enumerate(tree) for k in interpolations(value, f"{where}[{i}]")]
    return [where] if isinstance(tree, str) and _UNESCAPED.search(tree) else []


def recorded_config(run_dir: Path) -> DictConfig:
    """The run's launch record as data, or a UserError naming the file and what is wrong with it."""
    path = run_dir / LAUNCH_FILE
    if not path.is_file():
        raise UserError(
            f"{path}: no launch record; calibrate needs runs launched by verl-qwen35 (their {LAUNCH_FILE} is the "
            "config that ran)"
        )
    cfg, _ = read_launch_file(path)
    if found := interpolations(OmegaConf.to_container(cfg, resolve=False)):
        raise UserError(
            f"{path}: {found[0]} holds an interpolation (`${{...}}`); a launch writes resolved values only, so the "
            "record was edited: it is not resolved, and not used"
        )
    if broken := structure_problems(cfg):
        raise UserError(f"{path}: the recorded config lacks {', '.join(p.keys[0] for p in broken)}")
    return cfg


# A step of verl's GRPO trainer lasts seconds to hours; a week is no measurement of one (a clock jump, a unit
# mistake, an edited file).
MAX_STEP_S = 7 * 24 * 3600.0
STEP = "timing_s/step"


def _not_a_measurement(name: str, value: float, step_s: float | None) -> str | None:
    """Why `value` (seconds of `name` in a step that took `step_s`) cannot have been measured, or None."""
    if value < 0:
        return "a negative duration"
    if name == STEP and value == 0:
        return "a step that took no time"
    if value > MAX_STEP_S:
        return f"longer than {MAX_STEP_S / 86400:g} days"
    if name != STEP and step_s is not None and value > step_s * 1.01:  # verl times each phase inside the step
        return f"longer than the step it is part of ({STEP}={step_s:g})"
    return None


def check_timings(metrics: Metrics, steps: list[int]) -> None:
    """Refuse, naming the file and line, a timing that cannot be a measurement: not a finite number, negative, a
    step of zero seconds or of more than a week, a phase longer than its step (verl/trainer/ppo/ray_trainer.py
    times each phase inside `marked_timer("step")`)."""
    names = [STEP, *(f"timing_s/{phase}" for phase in PHASES)]
    for step in steps:
        where = metrics.origin.get(step, f"step {step}")
        for name in names:
            if name in metrics.not_finite.get(step, {}):
                raise UserError(
                    f"{where}: {name}={metrics.not_finite[step][name]} is not a finite number of seconds, so not a "
                    "measurement; remove that run (or the line) and calibrate again"
                )
        data = metrics.steps.get(step, {})
        for name in names:
            if name in data and (why := _not_a_measurement(name, data[name], data.get(STEP))):
                raise UserError(
                    f"{where}: {name}={data[name]:g} is {why}, so not a measurement; remove that run (or the line) "
                    "and calibrate again"
                )


# verl's data metrics (verl/trainer/ppo/metric_utils.py compute_data_metrics) the lengths come from.
LENGTH_METRICS = {"prompt": "prompt_length/mean", "response": "response_length/mean", "longest": "response_length/max"}


def spread(values: list[float]) -> tuple[float, float]:
    """The 10th and 90th percentile (nearest rank, outward: the lowest and highest tenth rounded down left out) of
    `values` over their median."""
    ordered, middle = sorted(values), statistics.median(values)
    cut = len(ordered) // 10
    return (ordered[cut] / middle, ordered[-1 - cut] / middle) if middle > 0 else (1.0, 1.0)


def _medians(metrics: Metrics) -> tuple[dict[str, float], int, dict[str, int], dict[str, tuple[float, float]]]:
    """Each phase's median seconds and step spread, the logged lengths' medians, over the steps after each start's
    first (all steps when there are no others), and how many steps that is."""
    kept = [s for s in metrics.training_steps if s not in metrics.warm_up] or metrics.training_steps
    check_timings(metrics, sorted(set(metrics.steps) | set(metrics.not_finite)))
    values = {}
    for name in [f"timing_s/{phase}" for phase in PHASES] + list(LENGTH_METRICS.values()):
        found = [metrics.steps[s][name] for s in kept if name in metrics.steps[s]]
        if found:
            values[name] = found
    phases = {p: statistics.median(values[f"timing_s/{p}"]) for p in PHASES if f"timing_s/{p}" in values}
    spreads = {p: spread(values[f"timing_s/{p}"]) for p in phases}
    lengths = {k: round(statistics.median(values[name])) for k, name in LENGTH_METRICS.items() if name in values}
    return phases, len(kept), {k: v for k, v in lengths.items() if v > 0}, spreads


def measured_run(run_dir: Path) -> MeasuredRun:
    """The config and the median seconds of each verl phase the run logged; a UserError naming the file otherwise."""
    cfg = recorded_config(run_dir)
    env = OmegaConf.select(cfg, "env.set", default=None)
    places = log_places(run_dir, {str(k): str(v) for k, v in env.items()} if env else {})
    metrics = read_run(places)
    if not metrics.steps:
        raise UserError(
            f"{places.metrics}: no metrics logged (nor tensorboard events in {places.tensorboard}); calibrate reads "
            "verl's timing_s/<phase> of a run launched with logger=[console,file]"
        )
    phases, steps, lengths, spreads = _medians(metrics)
    if not phases:
        raise UserError(
            f"{places.metrics}: no timing_s/{{{','.join(PHASES)}}} metric in {', '.join(metrics.sources)}; "
            "calibrate needs verl's per-phase timings"
        )
    return MeasuredRun(run_dir, cfg, phases, steps, lengths.get("response"), lengths, spreads)
