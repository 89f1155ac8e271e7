"""How far a trial run (conf/trial/) got, as its logged metrics show it: the first hour's smoke test, per job.

verl times each phase of a step with `marked_timer(name, timing_raw)` and logs every timer as `timing_s/<name>`
(verl/trainer/ppo/metric_utils.py compute_timing_metrics): `gen` (the rollout), `update_actor` (the update),
`update_weights` (the weight sync to the rollout engine), `save_checkpoint` (ray_trainer.py 1704-1713). A resumed
run's first logged step is the saved step + 1 (`_load_checkpoint` sets global_steps from the folder name). What
happens before the first step is logged (Ray up, the rollout engine up, the weights loaded) is not in the metrics:
a job that logged nothing says so, with its verdict's reason when the sweep recorded one.
"""

from collections.abc import Mapping
from typing import Any

from verl_qwen35.review.metrics import Metrics

# (metric, what a step that logged it reached), in the order verl runs them in a step.
PHASES = (
    ("timing_s/gen", "first rollout"),
    ("timing_s/update_actor", "first update"),
    ("timing_s/update_weights", "weight sync"),
    ("timing_s/save_checkpoint", "checkpoint saved"),
)
BEFORE = "Ray, the rollout engine and the weights loading come before the first logged step: the job's log says"


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


def progress_line(metrics: Metrics, trial: Mapping[str, Any], reason: str = "") -> str:
    """One line for a person: what the trial reached, or that it logged no step (and why, when known)."""
    kind = {"save": "resume drill, save", "resume": "resume drill, resume"}.get(str(trial.get("drill")), "trial")
    found = reached(metrics, trial)
    if not found:
        why = f"; the sweep recorded: {reason}" if reason else ""
        return f"{kind}: no step logged ({BEFORE} how far it got){why}"
    missing = [label for key, label in PHASES if label not in found and not _optional(key, trial)]
    gap = f"; not reached: {', '.join(missing)}" if missing else ""
    return f"{kind}: reached {', '.join(found)}{gap}"


def _optional(key: str, trial: Mapping[str, Any]) -> bool:
    """A phase this trial does not run: only the drill's save job writes a checkpoint."""
    return key == "timing_s/save_checkpoint" and trial.get("drill") != "save"
