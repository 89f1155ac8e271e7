"""`verl-qwen35 calibrate` over runs of one stack, logged through verl's own Tracking file logger with verl's own
metric functions: predictions made at the lengths the runs logged, a band earned from the runs' own spread and
error across layouts, and what the fit could not use said."""

import dataclasses
import re
import statistics

import pytest

from tests.integration.test_report import launched, log_steps, step_metrics
from verl_qwen35 import resolve
from verl_qwen35.config import compose
from verl_qwen35.model.calibration import shipped
from verl_qwen35.model.layout import Layout
from verl_qwen35.model.memory import estimate_layout, read_inputs
from verl_qwen35.model.step_time import CONSTANT, Rates, Recipe, StepTime, step_time
from verl_qwen35.planner.summary import predicted_step


def predicted_step_of(cfg):
    """The predicted step of the Run the builder makes of `cfg`."""
    return predicted_step(resolve(cfg))


LENGTHS = {"prompt": "prompt_length/mean", "response": "response_length/mean", "longest": "response_length/max"}
TIMED = ("gen", "old_log_prob", "update_actor", "update_weights")


def logged_lengths(steps: dict[int, dict[str, float]]) -> dict[str, int]:
    """The lengths verl logged, as calibrate reads them: the median over the steps after the first (warm-up)."""
    kept = [steps[s] for s in sorted(steps)[1:]]
    return {k: round(statistics.median(m[name] for m in kept)) for k, name in LENGTHS.items()}


def shipped_at(cfg, lengths: dict[str, int]) -> StepTime:
    """The shipped prediction of a config at these lengths."""
    m, s = read_inputs(cfg)
    lo = Layout.of(cfg)
    recipe = dataclasses.replace(
        Recipe.of(cfg),
        response_length=lengths["response"],
        prompt_length=lengths["prompt"],
        longest_response=lengths["longest"],
    )
    return step_time(m, lo, s, estimate_layout(m, lo, s), Rates.of(cfg.hardware), shipped(), recipe)


def slower(t: StepTime, factor: float) -> dict[str, float]:
    """Each phase of `t` on a cluster whose kernels run `factor` x slower than the shipped fit's (its `a` parts; the
    collectives at the link rates, its `b` parts, unchanged)."""
    return {p: factor * a / t.calibration.efficiency[CONSTANT[p]] + b for p, (a, b) in t.terms.items()}


def logged_run(
    run, monkeypatch, overrides: tuple[str, ...], factor: float, noise=(1.0,) * 5, sync: float | None = None
):
    """A run on a cluster `factor` x slower than the shipped fit (`slower`) at the lengths it logged, times `noise`
    step by step (`sync`: the update_weights seconds it logged instead)."""
    for name in ("VERL_FILE_LOGGER_PATH", "TENSORBOARD_DIR"):  # an earlier run's, which its record would keep
        monkeypatch.delenv(name, raising=False)
    cfg = launched(run, monkeypatch, "logger=[console,file]", *overrides)
    steps = {s: step_metrics(s) for s in range(1, len(noise) + 1)}
    lengths = logged_lengths(steps)
    phases = slower(shipped_at(cfg, lengths), factor)
    for s, jitter in zip(sorted(steps), noise, strict=True):
        for phase in TIMED:
            seconds = phases[phase] * jitter
            steps[s][f"timing_s/{phase}"] = sync if phase == "update_weights" and sync is not None else seconds
    log_steps(run, monkeypatch, steps)
    return cfg, lengths


def test_a_calibrated_prediction_is_made_at_the_lengths_the_run_logged_and_says_so(cli, tmp_path, monkeypatch):
    """The run's prompts (32 tokens) and responses (~80 of 128) are far below the config's maxima (1024 + 2048): a
    prediction with its calibration, at the lengths it logged, gives back the run's own step; at the maxima it would
    be several times off. plan.response_length still wins where the user sets it. A measured sync below what its
    gathers take fits nothing, and the output says so."""
    run = tmp_path / "run"
    cfg, lengths = logged_run(run, monkeypatch, (), factor=2.0, sync=1e-4)
    assert lengths["prompt"] < cfg.data.max_prompt_length and lengths["response"] < cfg.data.max_response_length
    monkeypatch.chdir(tmp_path)
    done = cli("calibrate", str(run), "--out", "mine.yaml")
    assert done.code == 0, done.err
    said = ", ".join(f"{k} {v}" for k, v in lengths.items())
    assert f"lengths logged (tokens): {said}" in done.out and f"({said} tokens: the median" in done.out, done.out
    assert re.search(r"update_weights measured 0\.00 s is at or below the model's fixed part [\d.]+ s", done.out)
    assert "band gen x" in done.out and "one run measures it" in done.out, done.out
    at_lengths = shipped_at(cfg, lengths)
    expected = sum(slower(at_lengths, 2.0).values()) - slower(at_lengths, 2.0)["update_weights"]
    expected += at_lengths.phases["update_weights"]
    calibrated = compose(["model=35b", "device=gpu", f"plan.calibration={tmp_path / 'mine.yaml'}"])
    predicted = predicted_step_of(calibrated)
    assert predicted.total == pytest.approx(expected, rel=0.05), (predicted.total, expected)
    assert predicted.response_length == lengths["response"] and predicted.prompt_length == lengths["prompt"]
    assert f"as the runs of calibration {tmp_path / 'mine.yaml'} logged them" in predicted.assumption()
    at_maxima = predicted_step_of(compose(["model=35b", "device=gpu"]))
    assert at_maxima.total > 3 * at_lengths.total  # what predicting at the maxima would have been off by
    chosen = predicted_step_of(
        compose(["model=35b", "device=gpu", f"plan.calibration={tmp_path / 'mine.yaml'}", "plan.response_length=100"])
    )
    assert chosen.response_length == 100 and "(plan.response_length)" in chosen.assumption()
    plan = cli("model=35b", "device=gpu", "dry_run=true", f"plan.calibration={tmp_path / 'mine.yaml'}")
    assert plan.code == 0 and f"prompts of {lengths['prompt']} and responses of {lengths['response']}" in plan.out


LAYOUTS = (("parallel.ep=8",), ("parallel.ep=4",), ("parallel.tp=1",))
NOISE = {0: (1.0, 0.97, 1.02, 1.0, 0.99), 1: (1.0, 1.01, 0.98, 1.03, 1.0), 2: (1.0, 1.0, 1.02, 0.98, 1.01)}


def test_runs_of_several_layouts_earn_a_band_of_their_own_from_their_spread_and_error_across_layouts(
    cli, tmp_path, monkeypatch
):
    """Three layouts of one stack on a cluster 1.5x slower than the shipped fit, with a few percent of step-to-step
    noise: the fit learns the cluster (another layout predicted within 15%) and each phase's band is the runs' own
    (a few percent, holding the truth), not the published one (tens of percent)."""
    runs = []
    for i, overrides in enumerate(LAYOUTS):
        run = tmp_path / f"run{i}"
        logged_run(run, monkeypatch, overrides, factor=1.5, noise=NOISE[i])
        runs.append(str(run))
    monkeypatch.chdir(tmp_path)
    done = cli("calibrate", *runs, "--out", "cluster.yaml")
    assert done.code == 0, done.err
    own = re.findall(
        r"band (\w+) x([\d.]+)-x([\d.]+) \(\+-\d+%\): 3 runs' leave-one-out error across layouts", done.out
    )
    assert {p for p, _, _ in own} == set(TIMED), done.out
    for phase, low, high in own:
        assert 0.9 < float(low) <= 1.0 <= float(high) < 1.1, (phase, low, high)
        published = shipped().band[phase]
        assert float(high) - float(low) < (published[1] - published[0]) / 3
    other = ["model=35b", "device=gpu", "parallel.ep=2"]
    cfg = compose(other)
    calibrated = predicted_step_of(compose([*other, f"plan.calibration={tmp_path / 'cluster.yaml'}"]))
    truth = sum(slower(shipped_at(cfg, calibrated_lengths(calibrated)), 1.5).values())
    assert calibrated.total == pytest.approx(truth, rel=0.15)
    assert calibrated.low <= truth <= calibrated.high and (calibrated.high - calibrated.low) / calibrated.total < 0.2


def calibrated_lengths(t: StepTime) -> dict[str, int]:
    return {"prompt": t.prompt_length, "response": t.response_length, "longest": t.longest_response}
