"""`doctor` and the dry run read one version truth (verl_qwen35/data/matrix/<device>.yaml): on a machine with
megatron-core 0.18 and MindSpeed core_r0.18.0 (verl main's MindSpeed-Bridge path, PR #7335) doctor accepts the
stack and both print the same rules line; `npu_stack=mindspeed_bridge` plans for that stack from anywhere."""

import json

import pytest

from tests.standin import add_dist, run_with


@pytest.fixture
def mcore_018(tmp_path):
    add_dist(tmp_path, "megatron-core", "0.18.0")
    add_dist(tmp_path, "mindspeed", "0.18.0", module="mindspeed")
    return tmp_path


def test_doctor_and_the_dry_run_agree_on_megatron_core_0_18_with_mindspeed(mcore_018):
    shown = json.loads(run_with(mcore_018, "-m", "verl_qwen35.cli.doctor", "device=npu", "--json").stdout)
    rows = {c["name"]: c for c in shown["components"]}
    assert rows["megatron-core"]["ok"] and rows["megatron-core"]["installed"] == "0.18.0"
    assert rows["MindSpeed (pairs with megatron-core)"]["ok"]
    assert "megatron-core 0.18 (installed; with MindSpeed, NPU)" in shown["rules"]
    done = run_with(mcore_018, "-m", "verl_qwen35", "model=35b", "device=npu", "dry_run=true")
    assert done.returncode == 0, done.stderr
    assert shown["rules"] in done.stdout.splitlines()  # the very line doctor printed


def test_the_mindspeed_bridge_switch_sets_the_scripts_keys_and_plans_for_its_megatron_core(cli):
    done = cli("model=35b", "device=npu", "npu_stack=mindspeed_bridge", "dry_run=true")
    assert done.code == 0, done.said
    assert "megatron-core 0.18 (plan.megatron_core; with MindSpeed, NPU)" in done.out
    assert "npu_stack=mindspeed_bridge" in done.out.splitlines()[0]
    job = cli("model=35b", "device=npu", "npu_stack=mindspeed_bridge", "--cfg", "job", "--resolve")
    assert "use_ascend_gdn: true" in job.out and "use_triton_gdn: false" in job.out


def test_the_mindspeed_bridge_switch_on_gpu_is_refused_naming_its_keys(cli):
    done = cli("model=35b", "device=gpu", "npu_stack=mindspeed_bridge", "dry_run=true")
    assert done.code == 2
    errors = [line for line in done.err.splitlines() if line.startswith("ERROR")]
    assert {e.split("]")[0] for e in errors} == {
        "ERROR   [megatron.override_transformer_config.use_triton_gdn",
        "ERROR   [megatron.override_transformer_config.use_ascend_gdn",
    }, errors
