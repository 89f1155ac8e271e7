"""Settings verl accepts at start-up but that crash later or waste the run (checks/startup.py), judged as
`dry_run=true` judges them without the data: a refusal names the key; a setting that may be intended passes
with a warning saying what happens; a good one passes. A few go through the command (exit 2 or 0, no
traceback); the table goes through `preflight` on one shared composition (tests/configs.py)."""

import pytest

from tests.configs import config
from tests.runs import preflight

A = "actor_rollout_ref.actor"
R = "actor_rollout_ref.rollout"
SAVE, LOAD = f"{A}.checkpoint.save_contents", f"{A}.checkpoint.load_contents"
DIST = {f"actor_rollout_ref.{side}.megatron.use_dist_checkpointing": True for side in ("actor", "ref")}
# (changes, "error" / "warning" / None, the key named)
CASES = [
    ({"trainer.total_epochs": 0}, "error", "trainer.total_epochs"),
    ({"trainer.val_only": True}, "error", "trainer.val_only"),
    ({"trainer.val_only": True, "trainer.val_before_train": True}, None, None),
    ({"trainer.critic_warmup": 100, "trainer.total_training_steps": 100}, "error", "trainer.critic_warmup"),
    ({"trainer.critic_warmup": 5}, "warning", "trainer.critic_warmup"),  # GRPO: no critic to warm up
    ({f"{R}.temperature": 0}, "error", f"{R}.temperature"),
    ({f"{R}.temperature": 0, f"{R}.n": 1, "algorithm.adv_estimator": "reinforce_plus_plus"}, None, None),
    ({f"{R}.do_sample": False}, "warning", f"{R}.do_sample"),
    ({f"{R}.agent.default_agent_loop": "react_agent"}, "error", f"{R}.agent.default_agent_loop"),
    ({f"{R}.agent.default_agent_loop": "tool_agent"}, None, None),
    ({f"{R}.agent.agent_loop_config_path": "/nonexistent/loops.yaml"}, "warning", f"{R}.agent.agent_loop_config_path"),
    ({f"{R}.free_cache_engine": False}, "warning", f"{R}.free_cache_engine"),
    ({SAVE: ["modle", "optimizer"], LOAD: ["modle", "optimizer"]}, "error", SAVE),
    ({LOAD: ["model", "optimiser"]}, "error", LOAD),
    ({SAVE: ["optimizer", "extra"], LOAD: ["optimizer", "extra"]}, "warning", SAVE),
    ({"actor_rollout_ref.model.path": None}, "error", "actor_rollout_ref.model.path"),
    ({**DIST, f"{A}.megatron.dist_checkpointing_path": None}, "error", f"{A}.megatron.dist_checkpointing_path"),
    ({"custom_reward_function.path": "/nonexistent/reward.py"}, "error", "custom_reward_function.name"),
    ({"reward.custom_reward_function.path": "/nonexistent/r.py"}, "warning", "reward.custom_reward_function.path"),
    ({"data.dataloader_num_workers": -1}, "error", "data.dataloader_num_workers"),
]


@pytest.mark.parametrize(("changes", "level", "key"), CASES, ids=[" ".join(c) for c, _, _ in CASES])
def test_startup_settings_refused_or_warned(changes, level, key):
    found = preflight(config(**changes), machine_missing="warning")
    found = [p for p in found if p.keys[0] not in ("data.train_files", "data.val_files")]  # not on this machine
    said = [str(p) for p in found]
    if level is None:
        assert not found, said
    else:
        assert {p.level for p in found} == {level} and key in found[0].keys, said  # one per side (actor, ref)


@pytest.mark.parametrize(
    ("overrides", "code", "line"),
    [
        (["trainer.total_epochs=0"], 2, "ERROR   [trainer.total_epochs]"),
        (["actor_rollout_ref.actor.checkpoint.save_contents=[modle]"], 2, f"ERROR   [{SAVE}]"),
        ([f"{R}.free_cache_engine=false"], 0, f"WARNING [{R}.free_cache_engine]"),
    ],
)
def test_the_command_refuses_or_warns_without_a_traceback(cli, overrides, code, line):
    said = cli("model=35b", "device=gpu", "dry_run=true", *overrides)
    assert said.code == code and line in said.said and "Traceback" not in said.said, said.said
