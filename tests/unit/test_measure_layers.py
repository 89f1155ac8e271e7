"""scripts/measure_layers.py: transformers' Qwen3.5 MoE decoder layers timed on one device, written as calibration rows.

No GPU here: the script runs on CPU at tiny widths (a second or two) and the rows it writes are checked for
shape; the real sizes are checked on the config it would build.
"""

import runpy
from pathlib import Path

import pytest
import torch
import transformers
import yaml

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = runpy.run_path(str(ROOT / "scripts" / "measure_layers.py"))
MEASUREMENTS = ROOT / "verl_qwen35" / "data" / "calibration" / "measurements.yaml"


def test_a_tiny_cpu_run_writes_one_well_formed_row_per_layer_kind(tmp_path, capsys):
    out = tmp_path / "layers.yaml"
    argv = ["--tiny", "--device", "cpu", "--tokens", "16", "--layers", "1", "--repeats", "1", "--warmup", "0"]
    assert SCRIPT["main"]([*argv, "--out", str(out)]) == 0
    assert f"written: {out}" in capsys.readouterr().out
    data = yaml.safe_load(out.read_text())
    assert (data["machine"]["torch"], data["machine"]["transformers"]) == (
        str(torch.__version__),
        transformers.__version__,
    )
    rows = data["measurements"]
    assert [r["layer"] for r in rows] == ["linear_attention", "full_attention"]
    shared = set.intersection(*(set(r) for r in yaml.safe_load(MEASUREMENTS.read_text())["measurements"]))
    for row in rows:
        assert shared <= set(row), f"the keys every row of {MEASUREMENTS.name} has"
        assert row["forward_seconds"] > 0 and row["backward_seconds"] > 0
        assert row["measured_seconds"] == pytest.approx(row["forward_seconds"] + row["backward_seconds"], abs=2e-6)
        assert (row["tiny"], row["fit"], row["peak_memory_gib"]) == (True, [], None)  # no device memory on CPU
        assert row["id"].startswith("layers-35b-") and row["id"].endswith("-16-tiny")
        assert row["hardware"]["name"] in row["source"] and row["run"]["sequence_length"] == 16
    assert row["kernels"]["attention"] == "sdpa" and row["kernels"]["experts"] == "eager"


def test_the_real_sizes_come_from_our_model_facts_and_a_rerun_replaces_its_rows(tmp_path):
    facts = SCRIPT["model_facts"]("122b")
    config = SCRIPT["text_config"](facts, 2, "full_attention", "sdpa", "grouped_mm")
    assert (config.hidden_size, config.num_experts, config.linear_num_value_heads) == (3072, 256, 64)
    assert config.layer_types == ["full_attention"] * 2
    out = tmp_path / "layers.yaml"
    SCRIPT["write"](out, {"name": "GPU"}, [{"id": "a", "v": 1}, {"id": "b", "v": 1}])
    SCRIPT["write"](out, {"name": "GPU"}, [{"id": "b", "v": 2}])
    assert yaml.safe_load(out.read_text())["measurements"] == [{"id": "a", "v": 1}, {"id": "b", "v": 2}]
    with pytest.raises(SystemExit) as refused:
        SCRIPT["model_facts"]("999b")
    assert refused.value.code == 2
