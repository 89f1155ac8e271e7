"""`verl-qwen35 calibrate RUN_DIR`: a run launched and logged as verl logs it, fitted, written, then used by the dry
run and the report; a tampered record and a file that is not a calibration are refused with one message."""

import re
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from tests.integration.test_report import launched, log_steps, step_metrics
from verl_qwen35 import resolve
from verl_qwen35.config import compose
from verl_qwen35.planner.summary import predicted_step
from verl_qwen35.run.launch_record import write_launch_file


def test_a_calibration_from_a_run_changes_the_dry_runs_prediction_and_names_itself(cli, tmp_path, monkeypatch):
    run = tmp_path / "run"
    cfg = launched(run, monkeypatch, "logger=[console,file]")
    monkeypatch.chdir(tmp_path)
    shipped = predicted_step(resolve(cfg))
    # The run measured 3x the shipped prediction of every phase it logs (gen 60%, old_log_prob 10%, update 30%).
    log_steps(run, monkeypatch, {s: step_metrics(s, 3 * shipped.total) for s in range(1, 5)})
    done = cli("calibrate", str(run), "--out", "mine.yaml")
    assert done.code == 0, done.err
    assert "fitted: gen=" in done.out and re.search(r"/run\s+.*\s+update_actor\s+yes", done.out), done.out
    assert f"plan.calibration={tmp_path / 'mine.yaml'}" in done.out
    plan = cli("model=35b", "device=gpu", "dry_run=true", f"plan.calibration={tmp_path / 'mine.yaml'}")
    assert plan.code == 0, plan.err
    seconds = float(re.search(r"time\s+~([\d.]+) s a step", plan.out).group(1))
    assert seconds > 2 * shipped.total, (seconds, shipped.total)
    assert f"calibration {tmp_path / 'mine.yaml'} (1 measured rows)" in plan.out
    # Fitted per device kind: a calibration of GPU runs is refused for an NPU config, naming the key.
    npu = cli("plan", "model=35b", "device=npu", f"plan.calibration={tmp_path / 'mine.yaml'}", "--top", "1")
    assert npu.code == 2 and "plan.calibration=" in npu.err and "fitted on gpu runs" in npu.err, npu.err
    report = cli("report", str(run), "--no-plots", "--calibration", "mine.yaml")
    assert report.code == 0, report.err
    assert "step time (after)" in report.out and "(after): predicted with calibration mine.yaml" in report.out
    npu_run = tmp_path / "npu_run"  # a run on the other device kind: its report shows no "after" from GPU runs
    npu_run.mkdir()
    monkeypatch.chdir(npu_run)
    npu_cfg = compose(["model=35b", "device=npu", "logger=[console,file]"])
    OmegaConf.resolve(npu_cfg)
    write_launch_file(npu_cfg, npu_run)
    log_steps(npu_run, monkeypatch, {s: step_metrics(s, shipped.total) for s in range(1, 5)})
    monkeypatch.chdir(tmp_path)
    other = cli("report", str(npu_run), "--no-plots", "--calibration", "mine.yaml")
    assert other.code == 0, other.err
    assert "step time (after)" not in other.out and "fitted on gpu runs and this run ran on npu" in other.out
    again = cli("calibrate", str(run), "--out", "mine.yaml")  # an earlier calibration file is replaced
    assert again.code == 0, again.err
    record = run / "launch.yaml"  # tampered: an interpolation is never resolved, the file is named
    record.write_text(re.sub(r"(?m)^(\s+experiment_name:).*$", r"\1 ${oc.env:HOME}", record.read_text(), count=1))
    tampered = cli("calibrate", str(run), "--out", "mine.yaml")
    assert tampered.code == 2 and re.search(rf"{record}: \S+experiment_name holds an interpolation", tampered.err)
    assert "Traceback" not in tampered.err and str(Path.home()) not in tampered.err + tampered.out


@pytest.mark.parametrize("case", ["not a calibration", "link", "no record"])
def test_wrong_inputs_are_refused_naming_the_file(cli, tmp_path, case):
    run = tmp_path / "run"
    run.mkdir()
    out = tmp_path / "calibration.yaml"
    named = run / "launch.yaml" if case == "no record" else out
    if case == "not a calibration":
        out.write_text("precious: data\n")
    elif case == "link":
        (tmp_path / "elsewhere.yaml").write_text("x: 1\n")
        out.symlink_to(tmp_path / "elsewhere.yaml")
    done = cli("calibrate", str(run), "--out", str(out))
    assert done.code == 2 and str(named) in done.err and "Traceback" not in done.err, done.err
    if case == "link":
        assert out.is_symlink() and (tmp_path / "elsewhere.yaml").read_text() == "x: 1\n"
    else:
        assert not out.exists() or out.read_text() == "precious: data\n"


def test_a_calibration_file_that_cannot_be_read_is_named_by_plan(cli):
    done = cli("plan", "model=35b", "device=gpu", "plan.calibration=nope.yaml", "--top", "1")
    assert done.code == 2 and "plan.calibration=nope.yaml: cannot read it" in done.err and "Traceback" not in done.err
