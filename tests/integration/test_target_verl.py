"""A dry run judges for the cluster's verl when asked (`plan.verl`), says in its first line which verl and which
machine it judged for, and a `verl_schema` the installed verl's files do not fit is one error naming it."""

import pytest

from verl_qwen35.installed import installed_verl_schema, installed_verl_version

pytestmark = pytest.mark.each_verl


def test_a_schema_the_installed_verl_does_not_fit_is_one_error_about_verl_schema_not_a_key_never_set(cli):
    other = "v0_9" if installed_verl_schema() != "v0_9" else "v0_8"  # the one without / with grad_offload
    done = cli("model=35b", "device=gpu", f"verl_schema={other}", "dry_run=true")
    assert done.code == 2, done.said
    errors = [line for line in done.err.splitlines() if line.startswith("ERROR")]
    assert len(errors) == 1 and errors[0].startswith(f"ERROR   [verl_schema] ={other} composes"), errors
    assert f"files need verl_schema={installed_verl_schema()}" in errors[0] and "plan.verl=0.8.0" in errors[0]


def test_the_first_line_names_the_verl_and_the_machine_judged_for_and_how_to_change_each(cli):
    done = cli("model=122b", "device=gpu", "dry_run=true")
    assert done.code == 0, done.said
    first = done.out.splitlines()[0]
    assert first.startswith(f"judged     for verl {installed_verl_version()} (installed, verl_schema=")
    assert "plan.verl=X.Y.Z judges for the cluster's" in first
    # verl's 122B GPU script ran on H20s: the plan says so where a user reads first, and how to plan for theirs
    assert " on H20 96GB x 32 (hardware=tested_on/122b_gpu: the machine the upstream script ran on;" in first
    assert "hardware=b200|h100|h20|h200" in first


def test_planning_for_verl_0_8_follows_its_rules_on_the_installed_files(cli):
    """verl 0.8.0's auto_set_device rewrites trainer.device only on Ascend; on a GPU machine trainer.device=npu
    stays and the workers ask for NPUs: refused under 0.8.0's rules (verl/utils/device.py)."""
    done = cli("model=35b", "device=gpu", "trainer.device=npu", "plan.verl=0.8.0", "dry_run=true")
    assert done.code == 2, done.said
    assert any(line.startswith("ERROR   [trainer.device]") and "verl 0.8.0" in line for line in done.err.splitlines())
    assert "rules      verl 0.8.0 (plan.verl)" in done.said
    said = done.said
    if installed_verl_version() != "0.8.0":  # judged on these files: the verdict says so, naming the key
        assert f"composed from the installed verl {installed_verl_version()}'s files" in said


@pytest.mark.parametrize(
    ("value", "mode", "said"),
    [
        ("latest", "true", "give a verl release as MAJOR.MINOR.PATCH"),
        ("0.7.1", "true", "verl 0.7.1 is older than 0.8.0"),
        ("0.99.0", "false", "a launch runs the installed verl"),
    ],
)
def test_a_planned_verl_that_cannot_be_followed_is_refused_naming_the_key(cli, value, mode, said):
    done = cli("model=35b", "device=gpu", f"plan.verl={value}", f"dry_run={mode}")
    assert done.code == 2, done.said
    assert any(line.startswith("ERROR   [plan.verl]") and said in line for line in done.err.splitlines()), done.err


def test_a_planned_verl_newer_than_known_is_judged_with_the_newest_rules_and_says_so(cli):
    done = cli("model=35b", "device=gpu", "plan.verl=0.10.0", "dry_run=true")
    assert done.code == 0, done.said
    assert "WARNING [plan.verl] =0.10.0: verl 0.10.0 is newer than 0.9.x" in done.err
    assert done.out.splitlines()[0].startswith("judged     for verl 0.10.0 (plan.verl, newer than 0.9.x")


def test_a_stack_named_by_its_id_plans_for_its_verl_and_megatron_core(cli):
    """plan.stack=ascend_9.0.0_a3: the Ascend 9.0.0 image's verl 0.8.0 and megatron-core core_r0.16.0, read from
    the NPU version matrix; the first line names the stack."""
    done = cli("model=35b", "device=npu", "plan.stack=ascend_9.0.0_a3", "dry_run=true")
    assert done.code == 0, done.said
    first = done.out.splitlines()[0]
    assert first.startswith(
        "judged     for stack ascend_9.0.0_a3 (Ascend 9.0.0 A3 (verl 0.8.0), plan.stack): verl 0.8.0"
    )
    assert "megatron-core 0.16 (plan.megatron_core" in first
    assert "rules      verl 0.8.0 (plan.verl), megatron-core 0.16 (plan.megatron_core; with MindSpeed, NPU)" in done.out


def test_an_unknown_stack_is_refused_naming_the_stacks_there_are(cli):
    done = cli("model=35b", "device=npu", "plan.stack=ascend_7", "dry_run=true")
    assert done.code == 2
    (line,) = [line for line in done.err.splitlines() if line.startswith("ERROR   [plan.stack]")]
    assert "'ascend_9.0.0_a3'" in line and "'gpu_verl_main'" in line
