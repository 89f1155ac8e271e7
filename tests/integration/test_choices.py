"""Group choices: verl's same-named `model` group cannot leak into ours, and bad choices name the fix."""

import subprocess
import sys

import pytest

from verl_qwen35.config import compose
from verl_qwen35.config.choices import ChoiceError, check_choices, implicit_overrides, options
from verl_qwen35.config.overrides import parse_overrides

# On every verl CI tests (-m each_verl): the installed verl's own config groups.
pytestmark = pytest.mark.each_verl


def test_our_options_exclude_verls_model_group():
    assert options("model") == ["122b", "35b", "36_35b", "397b"]
    assert options("device") == ["gpu", "npu"]


@pytest.mark.parametrize(
    ("overrides", "named"),
    [
        (["model=hf_model"], "122b, 35b, 36_35b, 397b"),
        (["model=480b"], "122b, 35b, 36_35b, 397b"),
        (["device=tpu"], "gpu, npu"),
        (["model=35b,hf_model"], "122b, 35b, 36_35b, 397b"),
        (["model@actor_rollout_ref.model=35b"], "model=<122b|35b|36_35b|397b>"),
        (["model@critic.model=122b"], "model=<122b|35b|36_35b|397b>"),
        (
            ["parallel=35b_tpu"],
            "122b_gpu, 122b_npu, 35b_a2, 35b_gpu, 35b_npu, 36_35b_gpu, 36_35b_npu, 397b_gpu, 397b_npu",
        ),
    ],
)
def test_collisions_and_unknown_choices_are_refused_with_the_valid_ones(overrides, named):
    with pytest.raises(ChoiceError, match="choose|pick") as err:
        check_choices(parse_overrides(overrides))
    assert named in str(err.value)


def test_verls_own_hf_model_choice_at_its_package_is_allowed():
    check_choices(parse_overrides(["model@actor_rollout_ref.model=hf_model"]))


def test_user_config_dir_adds_options(tmp_path):
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "mine.yaml").write_text("# @package _global_\n")
    (tmp_path / "parallel").mkdir()
    (tmp_path / "parallel" / "mine_gpu.yaml").write_text("tp: 1\n")
    check_choices(parse_overrides(["model=mine", "device=gpu"]), [tmp_path])
    with pytest.raises(ChoiceError, match="not a model"):
        check_choices(parse_overrides(["model=mine"]))
    with pytest.raises(ChoiceError, match="no layout preset for device=npu: add .*mine_npu.yaml"):
        check_choices(parse_overrides(["model=mine", "device=npu"]), [tmp_path])


def test_device_and_schema_are_filled_in_only_when_missing():
    filled = implicit_overrides(["model=122b"], announce=False)
    assert filled[0] == "device=gpu"  # torch_npu is not installed here
    assert filled[1].startswith("verl_schema=v0_")
    assert len(filled) == 2
    assert implicit_overrides(["device=npu", "verl_schema=v0_8"], announce=False) == []
    assert implicit_overrides(["-m", "device=npu,gpu"], announce=False) == [filled[1]]


def test_compose_refuses_like_the_entrypoint():
    with pytest.raises(ChoiceError):
        compose(["model=hf_model"])


def test_entrypoint_refuses_with_exit_2_and_says_detected_device(tmp_path):
    run = subprocess.run(
        [sys.executable, "-m", "verl_qwen35", "model=hf_model", "dry_run=true"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 2
    assert "model=hf_model is not a model of verl_qwen35" in run.stderr
    assert "device=gpu (torch_npu is not installed)" in run.stderr
    assert not (tmp_path / "outputs").exists()
