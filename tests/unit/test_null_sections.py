"""A section the checks, the memory model or verl read inside, set to null, is refused naming it: never a
traceback (`actor_rollout_ref.actor.optim=null` once gave an AttributeError in model/memory.py)."""

import pytest

from tests.runs import preflight
from verl_qwen35.config import compose

NULLED = [
    "actor_rollout_ref.actor.optim",
    "actor_rollout_ref.actor.megatron",
    "actor_rollout_ref.ref",
    "actor_rollout_ref.ref.megatron",
]


@pytest.mark.parametrize("key", NULLED)
def test_a_null_section_is_refused_naming_it(key):
    problems = preflight(compose(["model=35b", "device=gpu", f"{key}=null"]), machine_missing="warning")
    assert [p.keys for p in problems if p.level == "error"] == [(key,)]


def test_trainer_v1_null_is_refused_where_verl_has_it():
    if "v1" not in compose(["model=35b", "device=gpu"]).trainer:
        pytest.skip("this verl (0.8) has no trainer.v1")
    cfg = compose(["model=35b", "device=gpu", "trainer.v1=null"])
    assert ("trainer.v1",) in [p.keys for p in preflight(cfg, machine_missing="warning")]


def test_a_null_override_optimizer_config_is_read_as_empty():
    key = "actor_rollout_ref.actor.optim.override_optimizer_config"
    problems = preflight(compose(["model=35b", "device=gpu", f"{key}=null"]), machine_missing="warning")
    assert all(key not in p.keys for p in problems)  # judged as no override (verl: `or {}`)
