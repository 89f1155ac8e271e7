"""`verl-qwen35 doctor` shows verl's pinned stacks (0.8.0, 0.9.1, main) beside what is installed here."""

import json
from importlib.metadata import version

import pytest

from verl_qwen35.checks.versions import rules_line
from verl_qwen35.cli import doctor

# On every verl CI tests (-m each_verl): the installed stack against verl's pinned ones.
pytestmark = pytest.mark.each_verl


def test_the_gpu_doctor_names_verl_mains_stack_beside_0_9_1_and_0_8_0(capsys):
    doctor.main(["device=gpu"])
    out = capsys.readouterr().out
    header, *rows = out.partition("stacks verl pins")[2].splitlines()[1:]
    assert header.split()[2:9] == ["verl", "0.8.0", "verl", "0.9.1", "verl", "main", "(1dda039b)"]
    pins = {row.split()[0]: row.split()[1:] for row in rows if row.strip()}
    # installed, then 0.8.0, 0.9.1, main (verl 1dda039b pyproject.toml, uv.lock, docker/Dockerfile.stable.vllm)
    assert pins["megatron-core"][:4] == [version("megatron-core"), "any", "any", "core_v0.18.0"]
    assert pins["torch"][1:4] == ["2.9.1", "2.11.0", "2.11.0"] and pins["vllm"][3] == "0.24.0"
    assert pins["transformers"][3] == "5.5.3" and pins["sglang"][3] == "0.5.12"
    assert pins["python"][3] == "3.12" and pins["ray"][3] == "2.55.1"


def test_the_npu_doctor_accepts_both_ascend_images_and_says_what_the_plan_assumes(capsys):
    doctor.main(["device=npu", "--json"])
    shown = json.loads(capsys.readouterr().out)
    older, qwen35, newer, bridge = shown["stacks"]
    assert qwen35["pins"]["cann"] == "8.5.1" and bridge["pins"]["megatron-core"] == "core_v0.18.0"
    assert (older["pins"]["python"], newer["pins"]["python"]) == ("3.11", "3.12")
    assert newer["pins"]["vllm-ascend"] == "0.23.0" and newer["pins"]["torch"] == "2.10.0"
    python = next(c for c in shown["components"] if c["name"] == "Python")
    assert python["ok"]  # 3.11 here; 3.12 (the 9.1.0 image) too: `>=3.11,<3.13`
    assert shown["rules"] == rules_line("npu")  # the line a dry run prints with its verdict


@pytest.mark.parametrize("stacks", ["stacks: 3\n", "stacks:\n  - pins: {torch: 1}\n"])
def test_a_matrix_with_a_bad_stacks_list_is_refused_naming_it(tmp_path, capsys, stacks):
    matrix = tmp_path / "mine.yaml"
    matrix.write_text("components:\n  - {name: Python, kind: python, require: '>=3', source: me}\n" + stacks)
    assert doctor.main(["device=gpu", "--matrix", str(matrix)]) == 2
    err = capsys.readouterr().err
    assert "`stacks:`" in err and str(matrix) in err and len(err.strip().splitlines()) == 1
