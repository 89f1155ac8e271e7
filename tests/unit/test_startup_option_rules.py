"""Values verl reads at start-up that it refuses only after Ray and the workers started, or accepts and ignores
(checks/trainer_setup.py, checks/verl_types.py READ_AS, checks/verl_dataclasses.py READ_BY_NAME, checks/waste.py
keep counts and profile steps, checks/algorithm.py IS thresholds): what a user sees through `preflight`.
The twins against verl's own code are tests/integration/test_startup_option_twins.py."""

import pytest

from tests.configs import config
from tests.runs import preflight

R = "actor_rollout_ref.rollout"
NSYS = "global_profiler.global_tool_config.nsys"
SAMPLER = "trainer.v1.sampler"
PROFILED = {"global_profiler.tool": "nsys", "global_profiler.steps": [1]}
CORRECTION = {"algorithm.rollout_correction.rollout_is": "token", f"{R}.calculate_log_probs": True}
CRITIC = {"critic.enable": True, "critic.model.path": "/models/critic"}
# (changes, "error" / "warning" / None, the key named)
CASES = [
    ({"actor_rollout_ref.actor.strategy": "fsdp"}, "error", "actor_rollout_ref.actor.strategy"),
    ({"actor_rollout_ref.ref.strategy": "fsdp2"}, "error", "actor_rollout_ref.ref.strategy"),
    ({"critic.strategy": "fsdp"}, None, "critic.strategy"),  # no critic in a GRPO run: never built
    ({f"{SAMPLER}.custom_sampler.path": "/x/s.py"}, "error", f"{SAMPLER}.custom_sampler.path"),
    ({f"{SAMPLER}.custom_sampler.name": "MySampler"}, "error", f"{SAMPLER}.custom_sampler.name"),
    ({f"{SAMPLER}.sampler_kwargs": {"alpha": 1}}, "warning", f"{SAMPLER}.sampler_kwargs"),
    ({f"{R}.checkpoint_manager_class": "my.Manager"}, "warning", f"{R}.checkpoint_manager_class"),
    ({f"{R}.checkpoint_manager_class": "Manager", "trainer.use_v1": False}, "error", f"{R}.checkpoint_manager_class"),
    ({f"{R}.checkpoint_manager_class": "my.Manager", "trainer.use_v1": False}, None, f"{R}.checkpoint_manager_class"),
    ({"trainer.default_hdfs_dir": "hdfs://x/ckpt", "trainer.use_v1": False}, "error", "trainer.default_hdfs_dir"),
    (
        {"trainer.default_hdfs_dir": "hdfs://x/ckpt", "trainer.use_v1": False, "trainer.resume_mode": "disable"},
        None,
        "trainer.default_hdfs_dir",
    ),
    ({"trainer.default_hdfs_dir": "hdfs://x/ckpt"}, None, "trainer.default_hdfs_dir"),  # v1 never loads from it
    ({"trainer.default_hdfs_dir": 7}, "error", "trainer.default_hdfs_dir"),
    ({"trainer.rollout_data_dir": -1}, "error", "trainer.rollout_data_dir"),
    ({"trainer.rollout_data_dir": "/tmp/rollouts"}, None, "trainer.rollout_data_dir"),
    ({"data.seed": "abc"}, "error", "data.seed"),
    ({"data.gen_batch_size": -4}, "error", "data.gen_batch_size"),
    ({"data.gen_batch_size": 0}, None, "data.gen_batch_size"),  # falls back to train_batch_size
    ({"trainer.max_actor_ckpt_to_keep": 2.5}, "error", "trainer.max_actor_ckpt_to_keep"),
    ({"trainer.max_actor_ckpt_to_keep": 0}, "warning", "trainer.max_actor_ckpt_to_keep"),
    ({"trainer.max_actor_ckpt_to_keep": 2}, None, "trainer.max_actor_ckpt_to_keep"),
    ({**PROFILED, f"{NSYS}.worker_nsight_options": None}, "error", f"{NSYS}.worker_nsight_options"),
    ({**PROFILED, f"{NSYS}.controller_nsight_options": None}, "error", f"{NSYS}.controller_nsight_options"),
    ({f"{NSYS}.worker_nsight_options": None}, None, f"{NSYS}.worker_nsight_options"),  # nothing profiled
    ({**PROFILED, "global_profiler.steps": [0, 2]}, "warning", "global_profiler.steps"),
    ({**PROFILED, "global_profiler.steps": []}, "warning", "global_profiler.steps"),
    ({"global_profiler.tool": "nsight"}, "warning", "global_profiler.tool"),
    ({"global_profiler.tool": "torch"}, None, "global_profiler.tool"),
    ({"reward.reward_manager.source": "pip"}, "error", "reward.reward_manager.source"),
    ({"reward_model.reward_loop_source": "pip"}, "error", "reward_model.reward_loop_source"),
    ({"reward_model.reward_loop_class_name": "MyManager"}, "warning", "reward_model.reward_loop_class_name"),
    (
        {
            "reward_model.reward_loop_source": "importlib",
            "reward_model.reward_loop_module_path": "/x/m.py",
            "reward_model.reward_loop_class_name": "MyManager",
        },
        "error",
        "reward_model.reward_loop_class_name",
    ),
    ({"reward.custom_reward_function.nmae": "score"}, "error", "reward.custom_reward_function.nmae"),
    ({"algorithm.rollout_correction.rollout_is_treshold": 3.0}, "error", "algorithm.rollout_correction"),
    ({**CORRECTION, "algorithm.rollout_correction.rollout_is_threshold": 0.0}, "error", "algorithm.rollout_correction"),
    ({**CORRECTION, "algorithm.rollout_correction.rollout_is_threshold": "2_0.5"}, "error", "algorithm.rollout_co"),
    ({**CORRECTION, "algorithm.rollout_correction.rollout_is_threshold": "0.5_2"}, None, "algorithm.rollout_corr"),
    ({"actor_rollout_ref.model.lora.merge": "yes"}, "error", "actor_rollout_ref.model.lora.merge"),
    ({f"{R}.load_format": "dumy"}, "warning", f"{R}.load_format"),
    ({f"{R}.load_format": "safetensors"}, None, f"{R}.load_format"),
    ({"actor_rollout_ref.actor.ppo_epochs": 0}, "error", "actor_rollout_ref.actor.ppo_epochs"),
    ({"actor_rollout_ref.actor.optim.lr": 0}, "warning", "actor_rollout_ref.actor.optim.lr"),
    # the data set is not on this machine (the run's length unknown): a ratio >= 1 still asserts in megatron-core
    ({"actor_rollout_ref.actor.optim.lr_warmup_steps_ratio": 1.5}, "error", "actor_rollout_ref.actor.optim.lr_warm"),
    ({"actor_rollout_ref.actor.optim.lr_warmup_steps_ratio": 0.5}, None, "actor_rollout_ref.actor.optim.lr_warm"),
    # a critic left at verl's example model (verl/trainer/config/model/hf_model.yaml): its build stops at start-up
    ({"critic.enable": True}, "error", "critic.model.path"),
    ({"algorithm.adv_estimator": "gae"}, "error", "critic.model.path"),
    ({**CRITIC, "critic.ppo_micro_batch_size_per_gpu": 1}, None, "critic.model.path"),
    ({"critic.enable": False, "algorithm.adv_estimator": "gae"}, None, "critic.model.path"),  # no critic built
    # the critic's batch sizes, as verl's CriticConfig takes them (verl/workers/config/critic.py)
    (CRITIC, "error", "critic.ppo_micro_batch_size_per_gpu"),
    ({**CRITIC, "critic.use_dynamic_bsz": True}, None, "critic.ppo_micro_batch_size_per_gpu"),
    ({**CRITIC, "critic.ppo_micro_batch_size": 5}, "error", "critic.ppo_mini_batch_size"),
    (
        {**CRITIC, "critic.ppo_micro_batch_size": 4, "critic.ppo_micro_batch_size_per_gpu": 1},
        "error",
        "critic.ppo_micro",
    ),
    (
        {**CRITIC, "critic.ppo_micro_batch_size_per_gpu": 1, "critic.ppo_mini_batch_size": 64},
        "error",
        "critic.ppo_mini",
    ),
]


def findings(changes):
    return [
        p
        for p in preflight(config(**changes), machine_missing="warning")
        if p.keys[0] not in ("data.train_files", "data.val_files")
    ]


@pytest.mark.parametrize(("changes", "level", "key"), CASES, ids=[" ".join(map(str, c.items())) for c, _, _ in CASES])
def test_startup_options_refused_warned_or_accepted(changes, level, key):
    found = findings(changes)
    said = [str(p) for p in found]
    ours = [p for p in found if any(k.startswith(key) for k in p.keys)]
    if level is None:
        assert not ours, said
    else:
        assert any(p.level == level for p in ours), said
        assert all("verl" in p.message or "megatron-core" in p.message for p in ours), said  # each cites its code


def test_a_misspelt_key_verl_never_reads_gets_the_near_name():
    (found,) = [p for p in findings({"reward.custom_reward_function.nmae": "score"}) if p.level == "error"]
    assert "did you mean reward.custom_reward_function.name" in found.message


def test_the_legacy_class_name_error_says_which_key_verl_reads():
    changes = {
        "reward_model.reward_loop_source": "importlib",
        "reward_model.reward_loop_module_path": "/x/m.py",
        "reward_model.reward_loop_class_name": "MyManager",
    }
    (found,) = [p for p in findings(changes) if "reward_model.reward_loop_class_name" in p.keys]
    assert "reward.reward_manager.name=MyManager" in found.message
