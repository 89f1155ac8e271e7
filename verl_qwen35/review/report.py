"""`verl-qwen35 report`: what a run (or each run of a sweep) logged, summed up, beside the plan's predictions.

A run directory is Hydra's output directory of a launch: its launch.yaml (records/launch.py) says where
the logs went (`env.set`) and is the config the predictions are made for. A sweep directory is Hydra's
multirun directory: multirun.yaml and one numbered directory per job.
"""

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import ConfigAttributeError, ConfigKeyError
from tabulate import tabulate

from verl_qwen35.checks.sections import structure_problems
from verl_qwen35.config.yaml_files import load_yaml
from verl_qwen35.errors import UserError
from verl_qwen35.model.step_time import Calibration
from verl_qwen35.records.launch import LAUNCH_FILE, read_launch_file
from verl_qwen35.records.metrics import LogPlaces, Metrics, log_places, read_run
from verl_qwen35.records.private_files import writable_by_others
from verl_qwen35.records.summary import swept_values
from verl_qwen35.records.verdict import VERDICT, read_record
from verl_qwen35.review.calibration_runs import interpolations
from verl_qwen35.review.predictions import FAR, Prediction, predictions
from verl_qwen35.review.quantities import QUANTITIES, Measured, measure_all
from verl_qwen35.review.trial_progress import TrialPhases, trial_of, trial_summary

MULTIRUN_FILE = "multirun.yaml"  # Hydra writes it into the sweep directory (hydra/core/utils.py)
LOGGER_ADVICE = (
    "launch with logger=[console,file] (conf/logger/*.yaml: verl's file logger writes <run dir>/metrics.jsonl; "
    "add tensorboard for event files in <run dir>/tensorboard/)"
)


@dataclass
class RunReport:
    """One run: what it logged, each quantity measured, the predictions, and the notes on the way."""

    run_dir: Path
    metrics: Metrics
    measured: dict[str, Measured]
    predictions: list[Prediction] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    name: str = ""  # the sweep row: the job's overrides that differ from the other jobs'
    trial: str = ""  # a trial run (conf/trial/): how far it got (review/trial_progress.py); "" for another run
    phases: TrialPhases | None = None  # a trial's phases from its log and metrics, what broke (trial_progress.py)

    def prediction(self, name: str) -> Prediction | None:
        return next((p for p in self.predictions if p.name == name), None)


def launch_record(run_dir: Path) -> tuple[DictConfig | None, list[str]]:
    """The run's launch record, read as relaunch reads it (records/launch.py), or the notes of why not.

    A record others can write is read with a note rather than refused: the report only does arithmetic on
    it, but its predictions may then not be those of the config that ran."""
    path = run_dir / LAUNCH_FILE
    if not path.is_file():
        return None, [f"no {LAUNCH_FILE} (a dry run's directory, or a run not launched by verl-qwen35): no predictions"]
    try:
        cfg, _ = read_launch_file(path)
    except UserError as err:
        return None, [f"no predictions: {err}"]
    notes = [f"{why}: its predictions may not be of the config that ran"] if (why := writable_by_others(path)) else []
    if found := interpolations(OmegaConf.to_container(cfg, resolve=False)):
        notes.append(f"no predictions: {path}: {found[0]} holds an interpolation (a launch writes none): not resolved")
        return None, notes
    if broken := structure_problems(cfg):
        notes.append(f"no predictions: {path} lacks {', '.join(p.keys[0] for p in broken)}")
        return None, notes
    return cfg, notes


def trial_line(run_dir: Path, cfg: DictConfig | None, metrics: Metrics) -> tuple[str, TrialPhases | None]:
    """How far a trial run got (its log and metrics, its sweep verdict's reason) and its phases; ("", None) for a
    run that was no trial."""
    trial = trial_of(cfg)
    if trial is None:
        return "", None
    verdict = read_record(run_dir / VERDICT) or {}
    errors = verdict.get("errors") if isinstance(verdict.get("errors"), list) else []
    reason = next((e["message"] for e in errors if isinstance(e, dict) and isinstance(e.get("message"), str)), "")
    return trial_summary(run_dir, cfg, metrics, trial, reason)


def _recorded_env(cfg: DictConfig | None) -> dict[str, str]:
    env = OmegaConf.select(cfg, "env.set", default=None) if cfg is not None else None
    return {str(k): str(v) for k, v in env.items()} if env else {}


def no_metrics(run_dir: Path, places: LogPlaces, cfg: DictConfig | None) -> UserError:
    """Which logger to turn on, and what this run had."""
    logged = OmegaConf.select(cfg, "trainer.logger", default=None) if cfg is not None else None
    had = f"; this run logged to trainer.logger={list(logged)}" if logged is not None else ""
    status = ""
    if (verdict := read_record(run_dir / VERDICT)) and verdict.get("mode") in ("dry", "full"):
        status = " (a dry run: nothing was launched)"
    elif verdict and verdict.get("status") in ("refused", "failed", "interrupted"):
        status = f" (the run was {verdict['status']}: nothing ran)"
    return UserError(
        f"{run_dir}: no metrics{status}: neither {places.metrics} nor tensorboard events in {places.tensorboard}"
        f"{had}; {LOGGER_ADVICE}"
    )


def run_report(run_dir: Path, calibration: Calibration | None = None) -> RunReport:
    """Read a run directory; one UserError when it logged nothing or a log file is not readable. `calibration`:
    the step times are predicted under it too (after) beside the record's own (before)."""
    cfg, notes = launch_record(run_dir)
    places = log_places(run_dir, _recorded_env(cfg))
    metrics = read_run(places)
    if not metrics.steps and trial_of(cfg) is not None:  # a trial that never logged a step: how far it got is news
        line, phases = trial_line(run_dir, cfg, metrics)
        return RunReport(run_dir, metrics, measure_all(metrics), notes=notes, trial=line, phases=phases)
    if not metrics.steps and metrics.sources:  # files, but no complete record in them
        raise UserError(
            f"{run_dir}: no step logged completely yet ({'; '.join(metrics.notes) or ', '.join(metrics.sources)}): "
            "the run is still at its first step; run the report again when it has logged one"
        )
    if not metrics.steps:
        raise no_metrics(run_dir, places, cfg)
    if not metrics.training_steps or all(s in metrics.warm_up for s in metrics.training_steps):
        notes.append("only warm-up steps so far: the medians include them")
    measured = measure_all(metrics)
    found: list[Prediction] = []
    if cfg is not None:
        try:
            found, more = predictions(cfg, measured, calibration)
        except (ConfigAttributeError, ConfigKeyError) as err:
            found, more = [], [f"no predictions: the recorded config lacks {err.full_key}"]
        notes += more
    line, phases = trial_line(run_dir, cfg, metrics)
    return RunReport(run_dir, metrics, measured, found, notes, trial=line, phases=phases)


def job_dirs(sweep_dir: Path) -> list[Path]:
    """The sweep's job directories (Hydra's `hydra.sweep.subdir`, the job number by default), in job order."""
    jobs = [p for p in sweep_dir.iterdir() if p.is_dir() and re.fullmatch(r"\d+", p.name)]
    return sorted(jobs, key=lambda p: int(p.name))


def is_sweep(path: Path) -> bool:
    return (path / MULTIRUN_FILE).is_file() or any((d / ".hydra").is_dir() for d in job_dirs(path))


def _overrides(job: Path) -> list[str]:
    """The job's overrides as Hydra wrote them (.hydra/overrides.yaml); none when that file is unusable."""
    try:
        found = load_yaml(job / ".hydra" / "overrides.yaml")
    except UserError:
        return []
    return [str(o) for o in found] if isinstance(found, list) else []


def sweep_reports(sweep_dir: Path, calibration: Calibration | None = None) -> list[RunReport]:
    """A report per job; a job that logged nothing is a row of "-" with the reason."""
    jobs = job_dirs(sweep_dir)
    names = swept_values([_overrides(job) for job in jobs])
    reports = []
    for job, values in zip(jobs, names, strict=True):
        name = " ".join(f"{k}={v}" for k, v in values.items()) or f"job {job.name}"
        try:
            report = run_report(job, calibration)
        except UserError as err:
            report = RunReport(job, Metrics(), measure_all(Metrics()), notes=[str(err)])
        report.name = name
        reports.append(report)
    if not any(r.metrics.steps or r.trial for r in reports):
        raise UserError(f"{sweep_dir}: no job of this sweep logged metrics ({len(jobs)} job(s)); {LOGGER_ADVICE}")
    return reports


# -- text and JSON ---------------------------------------------------------------------------------------


def number(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.0f}" if 1e4 <= abs(value) < 1e9 else f"{value:.4g}"  # a diverged run's 1e30 stays short


def _steps_line(metrics: Metrics) -> str:
    steps = metrics.training_steps
    warm = sorted(metrics.warm_up)
    return (
        f"steps      {steps[0]}..{steps[-1]}, {len(steps)} step(s); warm-up, left out of the medians: step "
        + ", ".join(map(str, warm))
        + " (the first step of each start)"
        if warm
        else f"steps      {steps[0]}..{steps[-1]}, {len(steps)} step(s)"
    )


def quantity_table(report: RunReport) -> str:
    rows = []
    for q in QUANTITIES:
        m = report.measured[q.name]
        label = f"{q.label} ({q.unit})" if q.unit else q.label
        values = [number(v) for v in (m.first, m.last, m.median, m.low, m.high)]
        rows.append([label, m.key or "-", *values, m.source or "not logged"])
    headers = ["quantity", "verl metric", "first", "last", "median*", "min", "max", "logged by (in verl/)"]
    return tabulate(rows, headers=headers, tablefmt="simple", disable_numparse=True)


def prediction_table(found: list[Prediction]) -> str:
    rows = [
        [
            f"{p.name} ({p.unit})",
            number(p.predicted),
            number(p.measured),
            "-" if p.ratio is None else f"{p.ratio:.2f}" + (" FAR" if p.far else ""),
            p.statistic,
            p.key or "-",
            p.note,
        ]
        for p in found
    ]
    headers = ["prediction", "predicted", "measured", "ratio", "measured as", "verl metric", "note"]
    return tabulate(rows, headers=headers, tablefmt="simple", disable_numparse=True)


def far_line(found: list[Prediction]) -> str:
    far = [p.name for p in found if p.far]
    band = f"{FAR[0]:.2f}..{FAR[1]:.2f}"
    if not far:
        return f"every ratio within {band} of the prediction (docs/report.md)" if found else ""
    return f"far from the prediction: {', '.join(far)}: measured / predicted outside {band} (docs/report.md)"


def run_text(report: RunReport, plots: list[Path]) -> str:
    lines = [f"run        {report.run_dir}", f"logs       {', '.join(report.metrics.sources)}"]
    lines.append(_steps_line(report.metrics))
    lines += [f"trial      {report.trial}"] if report.trial else []
    lines += ["", *report.phases.lines(), ""] if report.phases else []
    lines += [f"note       {n}" for n in report.metrics.notes + report.notes]
    lines += ["", quantity_table(report), "* median over the steps after each start's first (warm-up)", ""]
    if report.predictions:
        lines += ["plan       predicted from launch.yaml as the dry-run plan predicts it", ""]
        lines += [prediction_table(report.predictions), far_line(report.predictions), ""]
    lines += [f"plot       {p}" for p in plots]
    return "\n".join(lines).rstrip()


def run_json(report: RunReport) -> dict[str, Any]:
    steps = report.metrics.training_steps
    return {
        "run_dir": str(report.run_dir),
        "name": report.name or None,
        "logs": report.metrics.sources,
        "steps": {
            "first": steps[0] if steps else None,
            "last": steps[-1] if steps else None,
            "count": len(steps),
            "warm_up": sorted(report.metrics.warm_up),
        },
        "quantities": {name: m.as_dict() for name, m in report.measured.items()},
        "predictions": [p.as_dict() for p in report.predictions],
        "far_band": list(FAR),
        "trial": report.trial or None,
        "trial_phases": report.phases.as_dict() if report.phases else None,
        "notes": report.metrics.notes + report.notes,
    }


SWEEP_COLUMNS = ("reward", "response_length", "kl", "entropy", "tokens_per_second", "step_time", "memory_allocated")


def sweep_table(reports: list[RunReport]) -> str:
    rows = []
    for r in reports:
        steps = r.metrics.training_steps
        cells = [number(r.measured[q].headline) for q in SWEEP_COLUMNS]
        step = r.prediction("step time")
        ratio = "-" if step is None or step.ratio is None else f"{step.ratio:.2f}" + (" FAR" if step.far else "")
        rows.append([r.name, f"{steps[0]}..{steps[-1]}" if steps else "-", *cells, ratio])
    by = {q.name: q for q in QUANTITIES}
    headers = ["run", "steps", *(f"{by[q].label} ({by[q].headline})" for q in SWEEP_COLUMNS), "step time / plan"]
    return tabulate(rows, headers=headers, tablefmt="simple", disable_numparse=True)


def sweep_text(sweep_dir: Path, reports: list[RunReport], plots: list[Path]) -> str:
    lines = [f"sweep      {sweep_dir}: {len(reports)} job(s)", "", sweep_table(reports), ""]
    for r in reports:
        lines += [f"trial      {r.name}: {r.trial}"] if r.trial else []
        lines += [*r.phases.lines(), ""] if r.phases else []
    for r in reports:
        lines += [f"note       {r.run_dir.name}: {n}" for n in r.metrics.notes + r.notes]
    lines += [f"plot       {p}" for p in plots]
    return "\n".join(lines).rstrip()


def sweep_json(sweep_dir: Path, reports: list[RunReport]) -> dict[str, Any]:
    return {"sweep_dir": str(sweep_dir), "runs": [run_json(r) for r in reports]}


def dumps(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2)
