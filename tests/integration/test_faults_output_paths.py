"""Presets that choose where a run writes (issue 42; docs/security.md): a `--config-dir` preset may set verl's
output places (checkpoints, dumped generations, a profiler's or a logger's directory), and every place outside
the run directory is shown in the verdict, naming its key, and kept in the launch record (`writes_outside`)."""

import os
import subprocess
import sys
from pathlib import Path

import yaml
from omegaconf import OmegaConf

from tests.commands import REPO
from verl_qwen35.config import compose
from verl_qwen35.records.launch import HEADER
from verl_qwen35.run.launch_record import write_launch_file

PRESET = """# @package _global_
defaults:
  - 35b
  - _self_
trainer:
  rollout_data_dir: {out}/rollouts
  validation_data_dir: {out}/validation
  default_local_dir: {out}/ckpt
global_profiler:
  steps: [1]
  save_path: {out}/profile
ray_kwargs:
  timeline_json_file: {out}/timeline.json
"""
KEYS = [
    "trainer.rollout_data_dir",
    "trainer.validation_data_dir",
    "trainer.default_local_dir",
    "global_profiler.save_path",
    "ray_kwargs.timeline_json_file",
]


def preset(tmp_path: Path) -> Path:
    conf = tmp_path / "conf" / "model"
    conf.mkdir(parents=True)
    (conf / "theirs.yaml").write_text(PRESET.format(out=tmp_path / "elsewhere"))
    return tmp_path / "conf"


def test_every_place_a_preset_chooses_outside_the_run_directory_is_in_the_verdict(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("HYDRA_FULL_ERROR", None)
    argv = ["--config-dir", str(preset(tmp_path)), "model=theirs", "parallel=35b_gpu", "device=gpu", "dry_run=true"]
    done = subprocess.run(
        [sys.executable, "-m", "verl_qwen35", *argv], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-3000:]
    writes = [line for line in done.stdout.splitlines() if line.startswith("writes ")]
    for key in KEYS:
        assert any(f"({key}:" in line and str(tmp_path / "elsewhere") in line for line in writes), (key, writes)
    assert all(line.endswith("outside the run directory") for line in writes)


def test_a_place_inside_the_run_directory_is_not_listed_and_the_launch_record_keeps_the_others(tmp_path, monkeypatch):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    monkeypatch.chdir(tmp_path)
    cfg = compose(
        ["model=theirs", "parallel=35b_gpu", "device=gpu", f"trainer.rollout_data_dir={run_dir}/rollouts"],
        config_dirs=[preset(tmp_path)],
    )
    OmegaConf.resolve(cfg)
    record = yaml.safe_load(write_launch_file(cfg, run_dir).read_text())[HEADER]["writes_outside"]
    assert "trainer.rollout_data_dir" not in record
    assert record["trainer.default_local_dir"] == cfg.trainer.default_local_dir
    assert record["ray_kwargs.timeline_json_file"] == str(tmp_path / "elsewhere" / "timeline.json")
