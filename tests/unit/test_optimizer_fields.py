"""`override_optimizer_config` keys are megatron-core OptimizerConfig fields, from the shipped field list."""

import dataclasses

from verl_qwen35.checks.megatron_keys import optimizer_field_spec
from verl_qwen35.checks.optimizer import optimizer_problems
from verl_qwen35.config import compose

OVERRIDE = "actor_rollout_ref.actor.optim.override_optimizer_config"


def test_shipped_optimizer_fields_equal_the_installed_dataclass():
    from megatron.core.optimizer.optimizer_config import OptimizerConfig

    assert set(optimizer_field_spec()) == {f.name for f in dataclasses.fields(OptimizerConfig)}


def test_a_misspelt_override_is_refused_with_the_field_it_resembles():
    found = optimizer_problems(compose(["model=35b", "device=gpu", f"+{OVERRIDE}.optimizer_cpu_ofload=true"]))
    assert [p.keys for p in found] == [(f"{OVERRIDE}.optimizer_cpu_ofload",)]
    assert "did you mean optimizer_cpu_offload?" in found[0].message


def test_an_override_of_the_wrong_type_is_refused():
    found = optimizer_problems(compose(["model=35b", "device=gpu", f"++{OVERRIDE}.optimizer_cpu_offload=[1]"]))
    assert [p.keys for p in found] == [(f"{OVERRIDE}.optimizer_cpu_offload",)]
