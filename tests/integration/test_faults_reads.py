"""Reads that block or recurse (issue 42, item 2; docs/security.md): every file a user names is read by the one
reader (config/yaml_files.py: a regular file only, opened without blocking, refused over its size before it is
read) and every parse is bounded in depth, an override's value too. Real commands in subprocesses, each with a
deadline: a FIFO that blocked would hit it, a recursion would print its traceback."""

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.commands import REPO

DEEP = 10_000


def run(cwd: Path, *argv: str) -> tuple[subprocess.CompletedProcess, float]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("HYDRA_FULL_ERROR", None)
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "verl_qwen35", *argv], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )
    return done, time.monotonic() - started


def refused(done: subprocess.CompletedProcess, *named: str) -> None:
    said = done.stdout + done.stderr
    assert done.returncode == 2 and "Traceback" not in said, said[-3000:]
    assert len(said) < 20_000, f"{len(said):,} characters of output"
    for text in named:
        assert text in said, said[-3000:]


@pytest.mark.parametrize(
    ("argv", "where"),
    [
        (lambda d: ["--config-dir", str(d / "conf"), "device=gpu", "model=fifo", "dry_run=true"], "conf/model/fifo"),
        (lambda d: ["import", str(d / "script.sh")], "script.sh"),
        (lambda d: ["calibrate", str(d / "run")], "launch.yaml"),
        (lambda d: ["relaunch", str(d / "run")], "launch.yaml"),
    ],
    ids=["config-dir-preset", "import-script", "calibrate-record", "relaunch-record"],
)
def test_a_fifo_given_as_a_file_is_refused_at_once(tmp_path, argv, where):
    (tmp_path / "conf" / "model").mkdir(parents=True)
    os.mkfifo(tmp_path / "conf" / "model" / "fifo.yaml")
    os.mkfifo(tmp_path / "script.sh")
    (tmp_path / "run").mkdir()
    os.mkfifo(tmp_path / "run" / "launch.yaml")
    done, took = run(tmp_path, *argv(tmp_path))
    refused(done, where)
    assert took < 60


def test_a_fifo_as_plan_calibration_is_noted_not_waited_on(tmp_path):
    os.mkfifo(tmp_path / "cal.yaml")
    done, took = run(tmp_path, "device=gpu", "model=35b", "dry_run=true", f"plan.calibration={tmp_path}/cal.yaml")
    assert "not a regular file" in done.stdout + done.stderr and took < 60


def _deep_yaml(path: Path) -> Path:
    path.write_text("model_name: " + "[" * DEEP + "]" * DEEP + "\n")
    return path


@pytest.mark.parametrize(
    ("make", "argv"),
    [
        (lambda d: _deep_yaml(d / "a.yaml"), lambda d: ["diff", str(d / "a.yaml"), str(d / "a.yaml")]),
        (
            lambda d: (d / "a.json").write_text('{"a": ' + "[" * DEEP + "]" * DEEP + "}"),
            lambda d: ["diff", str(d / "a.json"), str(d / "a.json")],
        ),
        (
            lambda d: (d / "conf" / "model").mkdir(parents=True) or _deep_yaml(d / "conf" / "model" / "deep.yaml"),
            lambda d: ["--config-dir", str(d / "conf"), "device=gpu", "model=35b", "dry_run=true"],
        ),
        (lambda d: None, lambda d: ["device=gpu", "model=35b", "dry_run=true", "+x=" + "[" * DEEP + "]" * DEEP]),
        (
            lambda d: None,
            lambda d: ["-m", "device=gpu", "model=35b", "dry_run=true", "+x=" + "{a:" * 300 + "1" + "}" * 300],
        ),
        (lambda d: None, lambda d: ["diff", "device=gpu", "device=npu +x=" + "[" * DEEP + "]" * DEEP]),
    ],
    ids=["diff-yaml", "diff-json", "config-dir-preset", "override", "sweep-override-300", "diff-override"],
)
def test_nesting_deeper_than_any_config_is_refused_naming_it(tmp_path, make, argv):
    make(tmp_path)
    done, _ = run(tmp_path, *argv(tmp_path))
    refused(done, "deeper than")


def test_a_200_mb_file_is_refused_by_its_size_without_being_read(tmp_path):
    big = tmp_path / "big.yaml"
    with big.open("wb") as handle:  # written for real: a sparse file would cost nothing to read either
        block = b"key: value\n" * 100_000
        for _ in range(200 * 1024 * 1024 // len(block) + 1):
            handle.write(block)
    (tmp_path / "small.yaml").write_text("a: 1\n")
    # The command's own peak memory, measured by a parent of its own (this test process has had other children).
    measure = "import resource, subprocess, sys; subprocess.run(sys.argv[1:]); "
    measure += "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr)"
    command = ["-c", measure, sys.executable, "-m", "verl_qwen35", "diff", str(big), str(tmp_path / "small.yaml")]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, *command], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    *said, peak = done.stderr.rstrip().splitlines()
    assert "Traceback" not in done.stderr and str(big) in "\n".join(said) and "larger than" in "\n".join(said)
    assert int(peak) < 180 * 1024, f"the command held {int(peak) / 1024:.0f} MiB: it read the file"
