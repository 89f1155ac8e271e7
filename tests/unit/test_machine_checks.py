"""Data files and a local model directory: real tiny files, warning in a dry run, error at launch."""

import copy
import json
import re
import shlex
import subprocess
import sys
from functools import cache
from pathlib import Path

import pandas as pd
import pytest
from omegaconf import open_dict

from tests.tiny_data import write_geo3k_stub
from verl_qwen35.checks.files import ARCH_FIELDS, data_problems, model_path_problems
from verl_qwen35.config import compose

ROW = {
    "data_source": "hiyouga/geometry3k",
    "prompt": [{"role": "user", "content": "x?"}],
    "reward_model": {"style": "rule", "ground_truth": "1"},
    "images": [b""],
}


ROWS = 128  # one training batch of the largest preset: fewer rows make verl's train dataloader empty


def write_parquet(path, drop=()):
    pd.DataFrame([{k: v for k, v in ROW.items() if k not in drop}] * ROWS).to_parquet(path)
    return path


def cfg_with(tmp_path, train, val, model="35b"):
    return compose([f"model={model}", "device=gpu", f"data.train_files={train}", f"data.val_files={val}"])


def test_tiny_parquet_with_verls_columns_passes(tmp_path):
    train, val = write_parquet(tmp_path / "train.parquet"), write_parquet(tmp_path / "test.parquet")
    assert data_problems(cfg_with(tmp_path, train, val), missing="error") == []


@pytest.mark.parametrize("column", ["prompt", "data_source", "reward_model"])
def test_missing_column_is_an_error_naming_it(tmp_path, column):
    """verl's RLHFDataset reads the prompt key, and its reward loop data_source and reward_model."""
    train = write_parquet(tmp_path / "train.parquet", drop=(column,))
    val = write_parquet(tmp_path / "test.parquet")
    (problem,) = data_problems(cfg_with(tmp_path, train, val), missing="error")
    assert problem.level == "error" and problem.keys == ("data.train_files", "data.prompt_key")
    assert f"{train} lacks column(s) ['{column}'] that verl's RL dataset reads" in problem.message


def test_a_file_that_is_not_parquet_is_an_error(tmp_path):
    bad = tmp_path / "train.parquet"
    bad.write_text("not parquet")
    (problem,) = data_problems(cfg_with(tmp_path, bad, write_parquet(tmp_path / "t.parquet")), missing="error")
    assert problem.keys == ("data.train_files",) and f"{bad} is not a readable parquet file" in problem.message


@pytest.mark.parametrize("level", ["warning", "error"])
def test_a_missing_file_of_the_users_own_has_the_level_of_the_mode_and_names_the_key(tmp_path, level):
    found = data_problems(cfg_with(tmp_path, tmp_path / "no.parquet", tmp_path / "nope.parquet"), missing=level)
    assert [p.level for p in found] == [level, level]
    assert found[0].message.startswith(f"{tmp_path}/no.parquet does not exist; correct the path data.train_files gives")
    assert "verl-qwen35 data" not in found[0].message  # the geo3k download is no answer for the user's own data
    # Only a warning says it is one because of where it runs (the same file may exist on the cluster).
    marked = found[0].message.endswith("[machine check: an error at launch and with dry_run=full]")
    assert marked == (level == "warning")


def write_model_dir(path, **text_config):
    path.mkdir()
    (path / "config.json").write_text(json.dumps({"model_type": "qwen3_5_moe", "text_config": text_config}))
    return path


def test_local_weights_matching_the_preset_pass(tmp_path):
    weights = write_model_dir(
        tmp_path / "w", hidden_size=2048, num_hidden_layers=40, num_experts=256, linear_num_value_heads=32
    )
    cfg = compose(["model=35b", "device=gpu", f"actor_rollout_ref.model.path={weights}"])
    assert model_path_problems(cfg, missing="error") == []


def test_35b_preset_pointed_at_122b_weights_is_refused(tmp_path):
    weights = write_model_dir(
        tmp_path / "w", hidden_size=3072, num_hidden_layers=48, num_experts=256, linear_num_value_heads=64
    )
    cfg = compose(["model=35b", "device=gpu", f"actor_rollout_ref.model.path={weights}"])
    (problem,) = model_path_problems(cfg, missing="error")
    assert problem.keys == ("actor_rollout_ref.model.path", "model")
    assert "num_hidden_layers=48 (preset Qwen3.5-35B-A3B: 40)" in problem.message


def test_hub_id_is_fine_and_a_missing_local_path_follows_the_mode(tmp_path):
    assert model_path_problems(compose(["model=122b"]), missing="error") == []
    cfg = compose(["model=122b", f"actor_rollout_ref.model.path={tmp_path}/absent"])
    assert [p.level for p in model_path_problems(cfg, missing="warning")] == ["warning"]


@pytest.mark.parametrize("path", ["~/absent-weights", "./absent-weights", "/absent-weights"])
def test_a_missing_local_path_of_one_slash_is_not_taken_for_a_hub_id(path):
    """`org/name` is a hub id; `~/x`, `./x` and `/x` name local directories, and these do not exist."""
    cfg = compose(["model=35b", f"actor_rollout_ref.model.path='{path}'"])  # quoted: Hydra's grammar has no bare ~
    (problem,) = model_path_problems(cfg, missing="error")
    assert problem.message.startswith(f"{path} is neither a local directory nor a hub id like Qwen/")


@cache
def _35b():
    return compose(["model=35b", "device=gpu"])


def _pointed_at(weights):
    cfg = copy.deepcopy(_35b())
    cfg.actor_rollout_ref.model.path = str(weights)
    return cfg


def test_a_local_directory_without_config_json_is_refused_in_every_mode(tmp_path):
    (tmp_path / "w").mkdir()
    (problem,) = model_path_problems(_pointed_at(tmp_path / "w"), missing="warning")
    assert (problem.level, problem.keys) == ("error", ("actor_rollout_ref.model.path",))
    assert problem.message == f"{tmp_path / 'w'} has no config.json; is it a Hugging Face model directory?"


# HF config.json (text_config) field -> model fact; stated here so that a field dropped from files.py fails.
HF_FACTS = {
    "num_hidden_layers": "num_layers",
    "hidden_size": "hidden_size",
    "num_attention_heads": "num_attention_heads",
    "num_key_value_heads": "num_key_value_heads",
    "num_experts": "num_experts",
    "num_experts_per_tok": "num_experts_per_tok",
    "moe_intermediate_size": "moe_intermediate_size",
    "linear_num_key_heads": "linear_num_key_heads",
    "linear_num_value_heads": "linear_num_value_heads",
}


def test_the_compared_fields_here_are_files_pys():
    assert HF_FACTS == ARCH_FIELDS


@pytest.mark.parametrize("field", list(HF_FACTS))
def test_each_architecture_field_of_config_json_is_compared_with_the_preset(tmp_path, field):
    facts = {name: _35b().model[fact] for name, fact in HF_FACTS.items()}
    weights = write_model_dir(tmp_path / "w", **{**facts, field: facts[field] + 1})
    (problem,) = model_path_problems(_pointed_at(weights), missing="warning")  # the files exist: an error anyway
    assert problem.level == "error" and problem.keys == ("actor_rollout_ref.model.path", "model")
    assert f"does not match model preset Qwen3.5-35B-A3B: {field}={facts[field] + 1} (preset " in problem.message
    assert model_path_problems(_pointed_at(write_model_dir(tmp_path / "same", **facts)), missing="error") == []


def run_entry(tmp_path, *args):
    return subprocess.run([sys.executable, "-m", "verl_qwen35", *args], cwd=tmp_path, capture_output=True, text=True)


def test_dry_run_of_a_shipped_preset_exits_0_with_marked_warnings(tmp_path):
    run = run_entry(tmp_path, "device=npu", "model=122b", "dry_run=true", f"data.train_files={tmp_path}/x.parquet")
    assert run.returncode == 0, run.stderr
    assert "WARNING [data.train_files]" in run.stderr
    plan = (
        "64 devices",
        "DP 8, expert-DP 1, layers per pipeline stage 12",
        "4 replica(s)",
        "768 sequences",
        "16 variables to the driver",  # with USE_OPTIMIZED_MODEL=0 (verl main's 122B NPU branch); logger=wandb: 2
    )
    for line in plan:
        assert line in run.stdout


def test_an_unknown_dry_run_mode_is_refused(tmp_path):
    run = run_entry(tmp_path, "device=gpu", "dry_run=maybe")
    assert run.returncode == 2 and "dry_run='maybe': use dry_run=false (launch), true or full" in run.stderr


def test_without_pyarrow_an_existing_data_file_is_a_warning_not_a_refusal(tmp_path, monkeypatch):
    """A config-only install has no pyarrow (verl's runtime brings it): the columns go unchecked, with a
    warning; `sys.modules[name] = None` is how Python marks a package as not importable (find_spec: None)."""
    train, val = write_parquet(tmp_path / "train.parquet"), write_parquet(tmp_path / "test.parquet")
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    found = data_problems(cfg_with(tmp_path, train, val), missing="error")
    assert [(p.level, p.keys) for p in found] == [("warning", ("data.train_files",)), ("warning", ("data.val_files",))]
    assert found[0].message == f"pyarrow is not installed here: the columns of {train} are not checked"


def test_an_unreadable_parquet_is_an_error_even_where_missing_files_are_warnings(tmp_path):
    """A file that is there but broken is broken on every machine: not a machine check."""
    bad = tmp_path / "train.parquet"
    bad.write_text("not parquet")
    (problem,) = data_problems(cfg_with(tmp_path, bad, write_parquet(tmp_path / "t.parquet")), missing="warning")
    assert problem.level == "error"


def test_the_prompt_column_is_the_one_data_prompt_key_names(tmp_path):
    """verl's RLHFDataset reads data.prompt_key (default `prompt`): a renamed key needs that column."""
    train, val = write_parquet(tmp_path / "train.parquet"), write_parquet(tmp_path / "test.parquet")
    cfg = cfg_with(tmp_path, train, val)
    cfg.data.prompt_key = "question"
    found = data_problems(cfg, missing="error")
    assert [p.message.split(" that ")[0] for p in found] == [
        f"{path} lacks column(s) ['question']" for path in (train, val)
    ]
    with open_dict(cfg):
        del cfg.data["prompt_key"]  # absent: verl's default, `prompt`, which the files have
    assert data_problems(cfg, missing="error") == []


def _plan_line(out: str, start: str) -> str:
    return next(line for line in out.splitlines() if line.startswith(start))


def test_the_plans_memory_parts_add_up_to_its_totals_and_a_zero_part_says_why(cli, combo):
    """Each device phase's total is the sum of the parts the plan prints (reserve and HCCL buffers included),
    and a part of 0.0 GiB says why (offloaded, no reference model, not the last stage)."""
    model, device = combo
    done = cli(f"model={model}", f"device={device}", "dry_run=true")
    assert done.code == 0, done.err
    for start in ("memory     train ", "           rollout "):
        line = _plan_line(done.out, start)
        total = float(re.search(r"(?:train|rollout) ([\d.]+) GiB of ", line).group(1))
        summed = line.split(" = ", 1)[1].split("; ")[0] if "train" in start else line.split(" = ", 1)[1]
        parts = summed.removesuffix(" GiB").split(" + ")
        values = [float(re.match(r"[A-Za-z -]+? (-?[\d.]+)", part).group(1)) for part in parts]
        assert abs(sum(values) - total) <= 0.05 * (len(values) + 1), line
        for part, value in zip(parts, values, strict=True):
            assert value != 0 or part.endswith(")"), f"{part!r}: a zero part without its reason in {line}"
        if device == "npu":
            assert "+ HCCL buffers " in line and "+ reserve " in line


@pytest.mark.parametrize("device", ["npu", "gpu"])
def test_the_plans_rollout_line_says_replicas_dp_tp_and_ep_as_verl_builds_them(cli, device):
    """397B: verl starts world // (tp*dp*pp) vLLM servers (workers/rollout/llm_server.py): one replica of
    DP 16 engines over every device, its experts split over all of them (EP = TP x DP)."""
    done = cli("model=397b", f"device={device}", "dry_run=true")
    assert done.code == 0, done.err
    cfg = compose(["model=397b", f"device={device}"])
    rollout = cfg.actor_rollout_ref.rollout
    tp, dp, pp, ep = (
        rollout.tensor_model_parallel_size,
        rollout.data_parallel_size,
        rollout.pipeline_model_parallel_size,
        rollout.expert_parallel_size,
    )
    world = cfg.trainer.n_gpus_per_node * cfg.trainer.nnodes  # the actor's worker group, which verl splits
    line = _plan_line(done.out, "rollout    ")
    assert (world // (tp * dp * pp), dp, ep, world) == (1, 16, world, 16 * tp)
    assert f"vllm: 1 replica(s) of {world} devices (16 nodes), each one server of DP 16 engine(s) of TP {tp};" in line
    assert f"EP {world}: routed experts split over the replica's {world} devices" in line


def _advised_out(said: str, key: str) -> Path:
    line = next(x for x in said.splitlines() if x.startswith(f"WARNING [{key}]"))
    return Path(shlex.split(line.split("prepare it with: ", 1)[1].split(",")[0].split(" [machine")[0])[3])


def test_following_the_missing_data_advice_leads_to_a_run_without_the_warning(cli, tmp_path, monkeypatch):
    """The presets' own data files (conf/config.yaml: under $HOME/data/geo3k) get the download: the advised
    `verl-qwen35 data --out DIR` writes exactly there; its download is replaced by writing the same two files."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    overrides = ("model=35b", "device=gpu", "dry_run=true")
    before = cli(*overrides)
    assert before.code == 0, before.said
    out = _advised_out(before.said, "data.train_files")
    assert out == _advised_out(before.said, "data.val_files") == tmp_path / "home" / "data" / "geo3k"
    write_geo3k_stub(out)  # what `verl-qwen35 data --out DIR` leaves: DIR/train.parquet, DIR/test.parquet
    after = cli(*overrides)
    assert after.code == 0 and "[data." not in after.said, after.said


def test_a_missing_file_of_the_users_own_gets_no_geo3k_download(cli, tmp_path):
    """A relative path is read from the directory the run starts in: the message says which."""
    done = cli("model=35b", "device=gpu", "dry_run=true", "data.train_files=my data/train.parquet")
    line = next(x for x in done.err.splitlines() if x.startswith("WARNING [data.train_files]"))
    assert line.startswith(
        f"WARNING [data.train_files] my data/train.parquet does not exist; correct the path data.train_files gives "
        f"(read from {tmp_path})"
    )
    assert "verl-qwen35 data" not in line
