"""`report` on a trial sweep: how far each trial got, from metrics logged through verl's own Tracking file logger
and launch records written as a launch writes them (trial=short, the resume drill's two jobs, one that broke)."""

import json
from pathlib import Path

import pytest

from tests.integration.test_report import launched, log_steps, step_metrics
from tests.unit.test_log_phases import LOG, raised_traceback

pytestmark = pytest.mark.each_verl


def job(sweep: Path, num: int, monkeypatch, option: str, steps: dict[int, dict[str, float]] | None) -> Path:
    """A sweep job's directory as a launched trial leaves it: Hydra's overrides, launch.yaml, the metrics."""
    run_dir = sweep / str(num)
    monkeypatch.delenv("VERL_FILE_LOGGER_PATH", raising=False)  # the shell's value would win over the job's own
    launched(run_dir, monkeypatch, f"trial={option}", f"trial.checkpoint_dir={sweep / 'drill'}")
    (run_dir / ".hydra").mkdir()
    (run_dir / ".hydra" / "overrides.yaml").write_text(f"- trial={option}_{num}\n")
    if steps:
        log_steps(run_dir, monkeypatch, steps)
    return run_dir


def timed(step: int, **extra: float) -> dict[str, float]:
    """A step's metrics as verl logs them, with the weight sync (and a save) timed as the trainer's timers do."""
    return {**step_metrics(step), "timing_s/update_weights": 7.0, **{f"timing_s/{k}": v for k, v in extra.items()}}


def test_a_trial_sweep_says_how_far_each_trial_got(cli, tmp_path, monkeypatch):
    sweep = tmp_path / "sweep"
    job(sweep, 0, monkeypatch, "short", {s: timed(s) for s in (1, 2, 3, 4)})
    job(sweep, 1, monkeypatch, "drill_save", {1: timed(1), 2: timed(2), 3: timed(3), 4: timed(4, save_checkpoint=61)})
    job(sweep, 2, monkeypatch, "drill_resume", {5: timed(5)})
    broken = job(sweep, 3, monkeypatch, "short", None)
    verdict = {"job": 3, "overrides": ["trial=short_3"], "valid": False, "status": "failed"}
    verdict["errors"] = [{"keys": [], "message": "RuntimeError: vLLM engine failed to start"}]
    (broken / "verdict.json").write_text(json.dumps(verdict))
    (sweep / "0" / "slurm-7.out").write_text("\n".join(LOG[:-1]) + "\n")  # its start-up, as verl and Ray print it
    (broken / "slurm-9.out").write_text("\n".join(LOG[:4]) + "\n" + raised_traceback())  # broke before its engine
    done = cli("report", str(sweep), "--no-plots")
    assert done.code == 0, done.err
    lines = {line.split(":")[0]: line for line in done.out.splitlines() if line.startswith("trial      ")}
    assert lines["trial      trial=short_0"].endswith(
        "trial: reached Ray up, weights loaded, rollout engine starting, rollout engine up, from scratch, ready to "
        "fit, first rollout, first update, weight sync, 4 of 4 step(s) logged"
    )
    # Each phase measured beside the plan: the start-up from the log's clock, the step from verl's timers.
    table = done.out.split("trial      trial=short_0")[1].split("trial      trial=drill_save_1")[0]
    rows = {line.split("  ")[0]: line for line in table.splitlines()}
    assert "slurm-7.out:3 10:03:35" in rows["weights loaded"] and "212 after Ray up" in rows["weights loaded"]
    assert "timing_s/gen, step 1" in rows["first rollout"] and "first " in rows["first rollout"]
    assert rows["first rollout"].rstrip().endswith(")")  # predicted, with its band
    assert "timing_s/step, step 1" in rows["whole step"]
    assert lines["trial      trial=drill_save_1"].endswith(
        "resume drill, save: reached first rollout, first update, weight sync, checkpoint saved, 4 of 4 step(s) logged"
    )
    assert lines["trial      trial=drill_resume_2"].endswith(
        "resume drill, resume: reached first rollout, first update, weight sync, resumed at step 5, 1 of 1 step(s) "
        "logged"
    )
    line = lines["trial      trial=short_3"]
    assert line.endswith(
        "trial: no step logged; its log shows Ray up, weights loaded, rollout engine starting; "
        "the sweep recorded: RuntimeError: vLLM engine failed to start"
    )
    broke = done.out.split("broke      after rollout engine starting:\n")[1].splitlines()[0]
    assert broke == "           slurm-9.out:8: RuntimeError: update_actor failed on rank 3"
    data = json.loads(cli("report", str(sweep), "--no-plots", "--json").out)
    assert data["runs"][3]["trial_phases"]["reached"] == "rollout engine starting"
    assert data["runs"][2]["trial_phases"]["log_files"] == []
    assert "log        no log file in the run directory (*.log, *.out) says how the start-up went" in done.out


def test_a_drill_save_that_did_not_save_says_so(cli, tmp_path, monkeypatch):
    run_dir = tmp_path / "run"
    launched(run_dir, monkeypatch, "trial=drill_save")
    log_steps(run_dir, monkeypatch, {1: timed(1), 2: timed(2)})
    done = cli("report", str(run_dir), "--no-plots")
    assert done.code == 0, done.err
    line = next(line for line in done.out.splitlines() if line.startswith("trial      "))
    assert line.endswith("2 of 4 step(s) logged; not reached: checkpoint saved")
    data = json.loads(cli("report", str(run_dir), "--no-plots", "--json").out)
    assert data["trial"] == line.removeprefix("trial      ")
