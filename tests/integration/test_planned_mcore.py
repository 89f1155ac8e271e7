"""The version-dependent rules follow the megatron-core they assume, and `plan.megatron_core` chooses it: stock
megatron-core's Gated DeltaNet takes cp > 1 and packed sequences from 0.18 (verl main pins core_v0.18.0), not
on 0.16/0.17 (../shared/reference/README.md). The verdict's rules line names the release it followed."""

import pytest

# Qwen3.5-35B on 8 GPUs with context parallelism 2 and packed sequences.
CP_AND_PACKED = (
    "model=35b",
    "device=gpu",
    "parallel.cp=2",
    "megatron.use_remove_padding=true",
    "actor_rollout_ref.model.use_remove_padding=true",
)


@pytest.mark.parametrize(
    ("release", "refused"),
    [("0.16", ("parallel.cp", "megatron.use_remove_padding")), ("0.18", ())],
)
def test_the_same_config_is_refused_under_016s_rules_and_accepted_under_018s(cli, release, refused):
    done = cli(*CP_AND_PACKED, f"plan.megatron_core={release}", "dry_run=true")
    errors = [line for line in done.said.splitlines() if line.startswith("ERROR")]
    assert [key for key in refused if not any(f"[{key}" in line for line in errors)] == [], done.said
    assert len(errors) == len(refused), errors
    assert done.code == (2 if refused else 0), done.said
    assert f"megatron-core {release} (plan.megatron_core; stock, GPU)" in done.said  # the rules line


@pytest.mark.parametrize(
    ("value", "mode", "said"),
    [
        ("latest", "true", "give a megatron-core release as MAJOR.MINOR"),
        ("0.99", "false", "a launch runs the installed megatron-core"),  # a launch follows what is installed
    ],
)
def test_a_planned_release_that_cannot_be_followed_is_refused_naming_the_key(cli, value, mode, said):
    done = cli("model=35b", "device=gpu", f"plan.megatron_core={value}", f"dry_run={mode}")
    assert done.code == 2, done.said
    assert any(line.startswith("ERROR   [plan.megatron_core]") and said in line for line in done.err.splitlines()), (
        done.said
    )
