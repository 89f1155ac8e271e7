"""Values with line breaks (issue 42; docs/security.md): a value holding one, from the command line, a sweep's
choices, a `--config-dir` file or an imported script, exits 2 naming its key before any file is written from
it (a run's `.hydra/`, the layout files `plan --sweep` writes, an imported preset). Real commands."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.commands import REPO
from verl_qwen35.imports import confine

KEY = "trainer.experiment_name"


def run(cwd: Path, *argv: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("HYDRA_FULL_ERROR", None)
    return subprocess.run(
        [sys.executable, "-m", "verl_qwen35", *argv], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )


def refused(done: subprocess.CompletedProcess, key: str, cwd: Path, *unwritten: str) -> None:
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr[-3000:]
    assert f"{key}: its value holds a line break" in done.stderr, done.stderr[-3000:]
    for name in ("outputs", "multirun", *unwritten):
        assert not (cwd / name).exists(), name


@pytest.mark.parametrize("brk", ["\n", "\r", "\u2028", "\x85"], ids=["LF", "CR", "LS", "NEL"])
def test_an_override_value_with_a_line_break_is_refused_before_the_run_directory(tmp_path, brk):
    refused(run(tmp_path, "dry_run=true", f"{KEY}='a{brk}b: 1'"), KEY, tmp_path)


def test_a_sweeps_choice_with_a_line_break_is_refused_before_any_job(tmp_path):
    refused(run(tmp_path, "-m", "dry_run=true", f"{KEY}=a,'b\nparallel: 9'"), KEY, tmp_path)


def test_a_line_break_in_a_list_item_or_a_dict_is_named_where_it_is(tmp_path):
    refused(run(tmp_path, "dry_run=true", "trainer.logger=[console,'file\nx']"), "trainer.logger[1]", tmp_path)


def test_a_preset_files_value_with_a_line_break_is_refused(tmp_path):
    (tmp_path / "conf" / "model").mkdir(parents=True)
    (tmp_path / "conf" / "model" / "mine.yaml").write_text(
        'defaults:\n  - 35b\n  - _self_\nname: "35b\\n# @package _global_"\n'
    )
    argv = ["--config-dir", str(tmp_path / "conf"), "model=mine", "parallel=35b_gpu", "dry_run=true"]
    refused(run(tmp_path, *argv), "model.name", tmp_path)


def test_plan_refuses_before_writing_a_layout_file(tmp_path):
    done = run(tmp_path, "plan", "model=35b", "device=gpu", "model.name='35b\nparallel: {tp: 64}'", "--sweep", "out")
    refused(done, "model.name", tmp_path, "out")


@pytest.mark.skipif(confine.abi() < confine.LEAST_ABI, reason="import runs scripts only confined")
@pytest.mark.parametrize(
    ("line", "key"),
    [
        (f"python3 -m verl.trainer.main_ppo {KEY}=$'a\\nb' model_engine=megatron", KEY),
        ("export NCCL_DEBUG=$'INFO\\nx'\npython3 -m verl.trainer.main_ppo model_engine=megatron", "env.set.NCCL_DEBUG"),
    ],
    ids=["override", "export"],
)
def test_an_imported_scripts_value_with_a_line_break_is_refused_before_the_preset(tmp_path, line, key):
    (tmp_path / "run.sh").write_text(line + "\n")
    refused(run(tmp_path, "import", str(tmp_path / "run.sh"), "--out", "out"), key, tmp_path, "out")
