"""The fast start-up option rules against verl's own code, run on CPU: the rollout correction's IS threshold
(validators/trainer_init.correction_problems runs verl's compute_rollout_correction_and_add_to_batch), the
reward manager's source (validators/startup.reward_problems runs verl's migration and resolve_reward_manager_cls),
the dataloader's batch size (torchdata's StatefulDataLoader, which verl's trainer builds) and the keep count
(verl's checkpoint manager pruning three saved folders)."""

import warnings
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.configs import config
from verl_qwen35.checks.algorithm import correction_threshold_problems
from verl_qwen35.checks.trainer_setup import (
    critic_batch_problems,
    critic_model_problems,
    gen_batch_problems,
    reward_source_problems,
)
from verl_qwen35.checks.waste import keep_count_problems, no_update_problems
from verl_qwen35.validators.critic_model import critic_judged_here
from verl_qwen35.validators.startup import reward_problems
from verl_qwen35.validators.trainer_init import correction_problems

pytestmark = pytest.mark.each_verl

CORRECTION = {"algorithm.rollout_correction.rollout_is": "token", "actor_rollout_ref.rollout.calculate_log_probs": True}
THRESHOLDS = [2.0, 0.0, -1.0, 1e12, "", " ", "zzz", "0.5_2", "2_0.5", "1_2_3", "1_000", True, "2", 3, "0_2", "1e3"]


def refused(found) -> bool:
    return any(p.level == "error" for p in found)


@pytest.mark.parametrize("threshold", THRESHOLDS, ids=repr)
def test_is_threshold_refused_exactly_where_verls_correction_raises(threshold):
    cfg = config(**CORRECTION, **{"algorithm.rollout_correction.rollout_is_threshold": threshold})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        real = refused(correction_problems(cfg))
    assert refused(correction_threshold_problems(cfg)) == real, threshold


def test_a_nan_threshold_is_refused_though_verl_parses_it():
    """verl's parse lets nan through (`upper <= 0` is false for nan); every IS weight it clips turns nan."""
    cfg = config(**CORRECTION, **{"algorithm.rollout_correction.rollout_is_threshold": "nan"})
    (found,) = correction_threshold_problems(cfg)
    assert "nan" in found.message


@pytest.mark.parametrize("source", ["register", "zzz", ""])
def test_reward_source_refused_exactly_where_verl_raises(source):
    cfg = config(**{"reward.reward_manager.source": source})
    fast, real = reward_source_problems(cfg), reward_problems(cfg)
    assert refused(fast) == refused(real), (fast, real)
    if refused(real):
        assert fast[0].keys == real[0].keys == ("reward.reward_manager.source",)


@pytest.mark.parametrize("size", [-4, 0, 8])
def test_gen_batch_size_refused_exactly_where_the_dataloader_raises(size):
    from torchdata.stateful_dataloader import StatefulDataLoader

    cfg = config(**{"data.gen_batch_size": size, "data.train_batch_size": 8})
    try:
        StatefulDataLoader(list(range(16)), batch_size=size or cfg.data.train_batch_size)  # verl: `gen or train`
        real = False
    except ValueError:
        real = True
    assert refused(gen_batch_problems(cfg)) == real


@pytest.mark.parametrize("keep", [0, -1, 1, 2])
def test_keep_count_warned_exactly_where_verl_keeps_every_checkpoint(keep, tmp_path: Path):
    """verl's BaseCheckpointManager.register_checkpoint, called as its save does after each of three saves."""
    from verl.utils.checkpoint.checkpoint_manager import BaseCheckpointManager

    saved = [tmp_path / f"global_step_{i}" for i in (1, 2, 3)]
    manager = SimpleNamespace(previous_saved_paths=[])
    manager.remove_previous_save_local_path = lambda paths: BaseCheckpointManager.remove_previous_save_local_path(
        manager, paths
    )
    for folder in saved:
        folder.mkdir()
        BaseCheckpointManager.register_checkpoint(manager, str(folder), keep)
    keeps_all = all(folder.exists() for folder in saved)
    cfg = config(**{"trainer.max_actor_ckpt_to_keep": keep, "trainer.save_freq": 5})
    assert bool(keep_count_problems(cfg)) == keeps_all, keep


@pytest.mark.parametrize("epochs", [-1, 0, 1, 2])
def test_ppo_epochs_refused_exactly_where_verls_iterator_yields_no_mini_batch(epochs):
    """verl's make_iterator, as train_mini_batch calls it with the actor's ppo_epochs."""
    import torch
    from tensordict import TensorDict
    from verl.utils import tensordict_utils as tu

    batches = list(tu.make_iterator(TensorDict({"x": torch.zeros(8, 1)}, batch_size=[8]), 4, epochs=epochs))
    cfg = config(**{"actor_rollout_ref.actor.ppo_epochs": epochs})
    assert refused(no_update_problems(cfg)) == (not batches), epochs


@pytest.mark.parametrize("path", ["example", "actor", "elsewhere"])
def test_critic_model_refused_exactly_where_verls_critic_build_stops(path, tmp_path: Path):
    """verl's own critic build (`omega_conf_to_dataclass(config.critic)`, as validate_config makes it,
    verl/utils/config.py:189) on this CPU: verl's example default path stops it, and so the fast rule refuses it;
    a path this machine lacks is read through the preset's config.json (a warning where it is not the actor's)."""
    from verl.utils.config import omega_conf_to_dataclass

    changes = {"critic.enable": True, "critic.ppo_micro_batch_size_per_gpu": 1}
    if path == "actor":
        changes["critic.model.path"] = "${actor_rollout_ref.model.path}"
    elif path == "elsewhere":
        changes["critic.model.path"] = str(tmp_path / "not_here")
    cfg = config(**changes)
    fast = critic_model_problems(cfg)
    if path == "example":
        with pytest.raises(Exception, match="deepseek-llm-7b-chat"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            omega_conf_to_dataclass(cfg.critic)
        assert refused(fast) and fast[0].keys == ("critic.model.path",)
        return
    assert not fast
    with critic_judged_here(cfg) as (judged, found), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        built = omega_conf_to_dataclass(judged.critic)
    assert built.model.hf_config.model_type.startswith("qwen3_5_moe")
    assert [p.keys for p in found] == ([] if path == "actor" else [("critic.model.path",)])


CRITIC_BATCHES = [
    {},
    {"critic.ppo_micro_batch_size_per_gpu": None},
    {"critic.ppo_micro_batch_size_per_gpu": None, "critic.use_dynamic_bsz": True},
    {"critic.ppo_micro_batch_size_per_gpu": None, "critic.ppo_micro_batch_size": 5},
    {"critic.ppo_micro_batch_size_per_gpu": None, "critic.ppo_micro_batch_size": 8},
    {"critic.ppo_micro_batch_size": 4},
    {"critic.ppo_mini_batch_size": 64},
]


def test_critic_batch_sizes_refused_exactly_where_verls_critic_config_raises():
    """verl's CriticConfig (__post_init__ and validate, as validate_config runs them: verl/utils/config.py:189-190)
    against the fast rule, case by case, on the critic of the actor's model."""
    from verl.utils.config import omega_conf_to_dataclass

    base = {"critic.enable": True, "critic.model.path": "${actor_rollout_ref.model.path}"}
    for changes in CRITIC_BATCHES:
        cfg = config(**{**base, "critic.ppo_micro_batch_size_per_gpu": 1, **changes})
        try:
            with critic_judged_here(cfg) as (judged, _), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                omega_conf_to_dataclass(judged.critic).validate(8, judged.data.train_batch_size)
        except Exception:  # noqa: BLE001 - verl raises ValueError, wrapped by Hydra's instantiate
            verl_refuses = True
        else:
            verl_refuses = False
        assert refused(critic_batch_problems(cfg)) == verl_refuses, changes
