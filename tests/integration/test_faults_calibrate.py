"""`calibrate` refuses timings that cannot be measurements (issue 42; docs/security.md): a negative, NaN or infinite
duration, a step of zero seconds, a phase longer than its step, a step of years; exit 2 naming the file and line,
nothing written. Its file is written by the one writer (a link planted as --out is replaced, never followed)."""

import json
import math

import pytest

from tests.integration.test_report import launched, step_metrics


def write_steps(run, steps: dict[int, dict]) -> None:
    lines = [json.dumps({"step": s, "data": d}, allow_nan=True) for s, d in steps.items()]
    (run / "metrics.jsonl").write_text("\n".join(lines) + "\n")


@pytest.mark.parametrize(
    ("key", "value", "why"),
    [
        ("timing_s/gen", -5.0, "a negative duration"),
        ("timing_s/update_actor", math.nan, "not a finite number"),
        ("timing_s/step", math.inf, "not a finite number"),
        ("timing_s/step", 0.0, "a step that took no time"),
        ("timing_s/gen", 10_000.0, "longer than the step"),
        ("timing_s/step", 1e12, "longer than 7 days"),
    ],
    ids=["negative", "nan", "inf", "zero-step", "phase-longer-than-step", "absurd"],
)
def test_a_timing_that_cannot_be_a_measurement_is_refused_naming_the_file_and_line(
    cli, tmp_path, monkeypatch, key, value, why
):
    run = tmp_path / "run"
    launched(run, monkeypatch, "logger=[console,file]")
    monkeypatch.chdir(tmp_path)
    steps = {s: step_metrics(s, 400.0) for s in range(1, 6)}
    steps[3][key] = value
    write_steps(run, steps)
    done = cli("calibrate", str(run), "--out", "mine.yaml")
    assert done.code == 2 and "Traceback" not in done.err, done.err
    assert f"{run / 'metrics.jsonl'} line 3: {key}=" in done.err and why in done.err, done.err
    assert not (tmp_path / "mine.yaml").exists()


def test_the_calibration_file_replaces_a_link_planted_in_its_place_never_writing_through_it(cli, tmp_path, monkeypatch):
    run = tmp_path / "run"
    launched(run, monkeypatch, "logger=[console,file]")
    monkeypatch.chdir(tmp_path)
    write_steps(run, {s: step_metrics(s, 400.0) for s in range(1, 5)})
    first = cli("calibrate", str(run), "--out", "mine.yaml")
    assert first.code == 0, first.err
    target = tmp_path / "theirs.yaml"
    saved = (tmp_path / "mine.yaml").read_text()
    target.write_text(saved)
    (tmp_path / "mine.yaml").unlink()
    (tmp_path / "mine.yaml").symlink_to(target)
    again = cli("calibrate", str(run), "--out", "mine.yaml")
    assert again.code == 2 and "symbolic link" in again.err  # check_target: a link is refused, not followed
    assert target.read_text() == saved and (tmp_path / "mine.yaml").is_symlink()
