"""How far a trial run (conf/trial/) got, as its logged metrics and its log show it: the first hour's smoke test,
per job.

verl times each phase of a step with `marked_timer(name, timing_raw)` and logs every timer as `timing_s/<name>`
(verl/trainer/ppo/metric_utils.py compute_timing_metrics): `gen` (the rollout), `update_actor` (the update),
`update_weights` (the weight sync to the rollout engine), `save_checkpoint` (ray_trainer.py 1704-1713). A resumed
run's first logged step is the saved step + 1 (`_load_checkpoint` sets global_steps from the folder name). What
happens before the first step is logged (Ray up, the weights loaded, the rollout engine up) is not in the metrics:
the job's log files say it (review/log_phases.py, the markers in data/log_markers.yaml), and what broke. Each
phase's measured time sits beside the plan's prediction: the step's phases from verl's timers against the step-time
model's (planner/whole_run.py predicted_step), the start-up's from the log's timestamps (the model times no
start-up).
"""

import statistics
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from omegaconf import DictConfig
from omegaconf.errors import ConfigAttributeError, ConfigKeyError
from tabulate import tabulate

from verl_qwen35.builder.build import build_run
from verl_qwen35.model.memory import InputError
from verl_qwen35.model.step_time import PHASES as MODEL_PHASES
from verl_qwen35.model.step_time import StepTime
from verl_qwen35.planner.whole_run import predicted_step
from verl_qwen35.records.metrics import Metrics
from verl_qwen35.review.log_phases import Hit, LogReading, read_logs, table

# (metric, what a step that logged it reached), in the order verl runs them in a step (data/log_markers.yaml).
PHASES = tuple((p.metric, p.name) for p in table()[0] if p.metric)
BEFORE = "Ray, the weights and the rollout engine come before the first logged step: the job's log says"
NO_LOG = "no log file in the run directory (*.log, *.out) says"
# verl's step timers beside the model's phases, in the order a step runs them (model/step_time.py PHASES).
STEP_TIMERS = (*MODEL_PHASES, "save_checkpoint", "step")
TIMER_LABELS = {"old_log_prob": "old log-prob", "ref": "ref log-prob", "step": "whole step"}


def trial_of(cfg: Any) -> Mapping[str, Any] | None:
    """The launch record's `trial` node when the run was a trial (`trial.name` not `none`), else None."""
    trial = cfg.get("trial") if cfg is not None and hasattr(cfg, "get") else None
    if not hasattr(trial, "get") or trial.get("name", "none") == "none":
        return None
    return trial


def reached(metrics: Metrics, trial: Mapping[str, Any]) -> list[str]:
    """The milestones this trial's metrics show, in verl's order, and the steps it logged of those it was to run."""
    steps = metrics.training_steps
    if not steps:
        return []
    logged = {key for data in metrics.steps.values() for key in data}
    out = [label for key, label in PHASES if key in logged]
    planned = int(trial.get("steps", 0) or 0)
    if trial.get("drill") == "resume":
        out.append(f"resumed at step {steps[0]}" if steps[0] > 1 else "started from step 1: nothing resumed")
        planned += 1
    first = 1 if trial.get("drill") != "resume" else planned
    out.append(f"{len([s for s in steps if s >= first])} of {planned - first + 1} step(s) logged")
    return out


def progress_line(
    metrics: Metrics, trial: Mapping[str, Any], reason: str = "", reading: LogReading | None = None
) -> str:
    """One line for a person: what the trial reached (its log's start-up phases, then its metrics'), or that it
    logged no step (how far its log shows it got, and the sweep's reason, when known)."""
    kind = {"save": "resume drill, save", "resume": "resume drill, resume"}.get(str(trial.get("drill")), "trial")
    started = [p.name for p in table()[0] if not p.metric and reading and p.name in reading.phases]
    found = reached(metrics, trial)
    if not found:
        why = f"; the sweep recorded: {reason}" if reason else ""
        if started:
            return f"{kind}: no step logged; its log shows {', '.join(started)}{why}"
        log = NO_LOG if not (reading and reading.files) else f"{', '.join(reading.files)} names no phase"
        return f"{kind}: no step logged ({BEFORE} how far it got; {log}){why}"
    missing = [label for key, label in PHASES if label not in found and not _optional(key, trial)]
    gap = f"; not reached: {', '.join(missing)}" if missing else ""
    return f"{kind}: reached {', '.join(started + found)}{gap}"


def _optional(key: str, trial: Mapping[str, Any]) -> bool:
    """A phase this trial does not run: only the drill's save job writes a checkpoint."""
    return key == "timing_s/save_checkpoint" and trial.get("drill") != "save"


def _drill_needs(optional: str | None, trial: Mapping[str, Any]) -> bool:
    """Whether this trial must reach a phase the table marks optional (`drill_save`, `drill_resume`, `all`)."""
    return optional is None or optional == f"drill_{trial.get('drill')}"


@dataclass
class TrialPhases:
    """Every phase of one trial: where its log or its metrics show it, its measured time, the prediction; the
    phase it reached and, when it broke, the lines that say what broke."""

    reading: LogReading
    rows: list[dict[str, Any]] = field(default_factory=list)
    reached: str | None = None
    missing: list[str] = field(default_factory=list)  # phases before `reached` no line or metric shows

    def lines(self) -> list[str]:
        headers = ["phase", "seen at", "measured (s)", "predicted (s)"]
        body = [[r["phase"], r["seen"], r["measured"], r["predicted"]] for r in self.rows]
        out = [tabulate(body, headers=headers, tablefmt="simple", disable_numparse=True)]
        if not self.reading.files:
            out.append(f"log        {NO_LOG} how the start-up went (the phases before the first step)")
        elif self.missing:
            out.append(
                f"not seen   {', '.join(self.missing)}: no line of data/log_markers.yaml in the log, though a later "
                "phase shows (a log level, trainer or version that prints none)"
            )
        if broke := self.reading.broke():
            out.append(f"broke      after {self.reached or 'no phase the log names'}:")
            out += [f"           {h.where()}: {h.shown}" for h in broke]
        out += [f"log        {n}" for n in self.reading.notes]
        return out

    def as_dict(self) -> dict[str, Any]:
        return {
            "reached": self.reached,
            "phases": self.rows,
            "not_seen": self.missing,
            "broke": [{"what": h.what, "file": h.file, "line": h.line, "text": h.shown} for h in self.reading.broke()],
            "log_files": self.reading.files,
            "log_notes": self.reading.notes,
        }


def _seen(hit: Hit) -> str:
    return f"{hit.where()}" + (f" {hit.time:%H:%M:%S}" if hit.time else "")


def _band(t: StepTime | None, timer: str) -> str:
    if t is None or timer not in t.phases and timer != "step":
        return "-"
    if timer == "step":
        return f"{t.total:.0f} ({t.low:.0f}-{t.high:.0f})"
    value, (lo, hi) = t.phases[timer], t.band(timer)
    return f"{value:.1f} ({value * lo:.1f}-{value * hi:.1f})" if value > 0 else "-"


def _step_row(metrics: Metrics, timer: str, label: str, t: StepTime | None) -> dict[str, Any] | None:
    series = metrics.series(f"timing_s/{timer}")
    predicted = _band(t, timer)
    if not series and predicted == "-":
        return None
    after = [v for s, v in series if s not in metrics.warm_up]
    measured = "-"
    if series:
        measured = f"first {series[0][1]:.1f}" + (f", median {statistics.median(after):.1f}" if after else "")
    seen = f"timing_s/{timer}, step {series[0][0]}" if series else "not logged"
    return {"phase": label, "seen": seen, "measured": measured, "predicted": predicted}


def trial_phases(metrics: Metrics, trial: Mapping[str, Any], reading: LogReading, t: StepTime | None) -> TrialPhases:
    """The phases table of one trial: start-up from its log (time since the previous timed line), the step's
    from verl's timers (first step, median after warm-up) beside `t`, the plan's prediction (None: not made)."""
    out = TrialPhases(reading)
    logged = {key for data in metrics.steps.values() for key in data}
    names = {p.metric.removeprefix("timing_s/"): p.name for p in table()[0] if p.metric}
    previous: Hit | None = None
    shown: list[tuple[str, bool, str | None]] = []  # (phase, evidence, optional)
    for phase in table()[0]:
        hit = reading.phases.get(phase.name)
        if phase.metric:
            shown.append((phase.name, phase.metric in logged or hit is not None, phase.optional))
            continue
        shown.append((phase.name, hit is not None, phase.optional))
        if hit is None:
            continue
        since = "-"
        if hit.time and previous and previous.time:
            since = f"{(hit.time - previous.time).total_seconds():.0f} after {previous.what}"
        previous = hit if hit.time else previous
        out.rows.append({"phase": phase.name, "seen": _seen(hit), "measured": since, "predicted": "-"})
    for timer in STEP_TIMERS:
        row = _step_row(metrics, timer, names.get(timer) or TIMER_LABELS.get(timer, timer), t)
        if row:
            out.rows.append(row)
    seen = [name for name, evidence, _ in shown if evidence]
    out.reached = seen[-1] if seen else None
    last = next((i for i, (name, *_) in enumerate(shown) if name == out.reached), -1)
    out.missing = [n for n, evidence, opt in shown[:last] if not evidence and _drill_needs(opt, trial)]
    return out


def trial_summary(
    run_dir: Path, cfg: DictConfig, metrics: Metrics, trial: Mapping[str, Any], reason: str = ""
) -> tuple[str, TrialPhases]:
    """A trial's progress line and its phases: its log files read, its step predicted from its launch record."""
    reading = read_logs(run_dir)
    try:
        predicted = predicted_step(build_run(cfg, mode="dry")[0])  # the record's own values, as the plan reads them
    except (InputError, ConfigAttributeError, ConfigKeyError):
        predicted = None  # the report's prediction notes say why
    return progress_line(metrics, trial, reason, reading), trial_phases(metrics, trial, reading, predicted)
