"""The fast preflight (dry_run=true: the shipped field list and names) and the full path (dry_run=full:
the same rules with the field list and registries read live from the installed verl and megatron-core)
agree on kinds and names: both refuse naming the same key, or both accept."""

import warnings

import pytest

from tests.runs import preflight
from verl_qwen35.checks.verl_settings import deprecation_notes
from verl_qwen35.config import compose
from verl_qwen35.validators.verl_fields import real_type_problems
from verl_qwen35.validators.verl_names import real_name_problems

# On every verl CI tests (-m each_verl): the installed verl's live field list and registries.
pytestmark = pytest.mark.each_verl

A = "actor_rollout_ref.actor"
KL = f"{A}.use_kl_loss=true"
TABLE = [
    # (overrides, the key both refuse, or None when both accept)
    (["trainer.total_epochs=ten"], "trainer.total_epochs"),
    (["trainer.total_epochs=15"], None),
    ([f"{A}.optim.lr=1e-6x"], f"{A}.optim.lr"),
    ([f"{A}.optim.lr=1"], None),
    ([f"{A}.optim.lr_warmup_steps=abc"], f"{A}.optim.lr_warmup_steps"),
    ([f"{A}.optim.lr_warmup_steps=null"], None),
    ([f"{A}.loss_scale_factor=1.5"], f"{A}.loss_scale_factor"),
    (["trainer.val_before_train=maybe"], "trainer.val_before_train"),
    (["trainer.val_before_train=false"], None),
    ([f"{A}.clip_ratio=true"], f"{A}.clip_ratio"),
    (["actor_rollout_ref.rollout.temperature=hot"], "actor_rollout_ref.rollout.temperature"),
    (["algorithm.adv_estimator=grpoo"], "algorithm.adv_estimator"),
    (["algorithm.adv_estimator=grpo_passk"], None),
    ([f"{A}.policy_loss.loss_mode=ppo"], f"{A}.policy_loss.loss_mode"),
    ([f"{A}.policy_loss.loss_mode=gspo"], None),
    ([f"{A}.loss_agg_mode=seq-mean"], f"{A}.loss_agg_mode"),
    ([f"{A}.loss_agg_mode=seq-mean-token-sum-norm"], None),
    ([KL, f"{A}.kl_loss_type=full"], f"{A}.kl_loss_type"),
    ([KL, f"{A}.kl_loss_type=low_var_kl+"], None),
    ([f"{A}.use_kl_loss=false", f"{A}.kl_loss_type=full"], None),  # verl never calls kl_penalty then
    (["algorithm.use_kl_in_reward=true", "algorithm.kl_penalty=k4"], "algorithm.kl_penalty"),
    (["algorithm.rollout_correction.rollout_is=seq"], "algorithm.rollout_correction.rollout_is"),
    (["algorithm.rollout_correction.rollout_is=sequence"], None),
    (['algorithm.rollout_correction.rollout_rs="token_k1,seq_k3"'], "algorithm.rollout_correction.rollout_rs"),
    (["algorithm.rollout_correction.rollout_rs=seq_mean_k3"], None),
    (
        ["algorithm.rollout_correction.bypass_mode=true", "algorithm.rollout_correction.loss_type=ppo"],
        "algorithm.rollout_correction.loss_type",
    ),
    (["reward.reward_manager.name=naiv"], "reward.reward_manager.name"),
    (["reward.reward_manager.name=dapo"], None),
    (["reward_model.reward_manager=primee"], "reward_model.reward_manager"),
    (["trainer.logger=[console,wandbb]"], "trainer.logger"),
    (["trainer.logger=[console,swanlab]"], None),
    (["actor_rollout_ref.rollout.name=hf"], "actor_rollout_ref.rollout.name"),
    (["actor_rollout_ref.rollout.name=sglang"], None),
    ([f"{A}.optim.optimizer=AdamW"], f"{A}.optim.optimizer"),
    ([f"{A}.optim.lr_decay_style=inverse_square_root"], f"{A}.optim.lr_decay_style"),
    ([f"{A}.optim.lr_decay_style=inverse-square-root"], None),
    # WSD also needs its decay steps (checks/schedule.py), given here so only the style is judged.
    (
        [f"{A}.optim.lr_decay_style=WSD", f"{A}.optim.lr_wsd_decay_steps=2", f"{A}.optim.lr_wsd_decay_style=constant"],
        f"{A}.optim.lr_wsd_decay_style",
    ),
    (
        [
            f"{A}.optim.lr_decay_style=WSD",
            f"{A}.optim.lr_wsd_decay_steps=2",
            f"{A}.optim.lr_wsd_decay_style=minus_sqrt",
        ],
        None,
    ),
    ([f"{A}.optim.weight_decay_incr_style=exponential"], f"{A}.optim.weight_decay_incr_style"),
]


@pytest.fixture(scope="module")
def live():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # megatron-core: Transformer Engine and Apex are not installed
        yield


@pytest.mark.parametrize(("overrides", "key"), TABLE, ids=[" ".join(o) for o, _ in TABLE])
def test_fast_and_full_agree(live, overrides, key):
    cfg = compose(["model=35b", "device=gpu", *overrides])
    fast = sorted({k for p in preflight(cfg, machine_missing="warning") if p.level == "error" for k in p.keys})
    full = sorted({k for p in real_type_problems(cfg) + real_name_problems(cfg) for k in p.keys})
    assert fast == full == ([key] if key else [])


def test_the_deprecation_note_follows_the_installed_verls_own_warning():
    """verl 0.9 warns at start-up that vanilla_mbridge=True (the GPU presets', as verl's GPU scripts) is
    deprecated; 0.8.0 does not. The verdict's note is there exactly when the installed verl's config warns."""
    from verl.workers.config.engine import McoreEngineConfig

    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        McoreEngineConfig(vanilla_mbridge=True)
    verl_warns = any(issubclass(w.category, FutureWarning) and "vanilla_mbridge" in str(w.message) for w in seen)
    gpu = compose(["model=35b", "device=gpu"])
    notes = deprecation_notes(gpu)
    assert ["megatron.vanilla_mbridge=false" in n for n in notes] == ([True] if verl_warns else [])
    assert not [p for p in preflight(gpu) if "megatron.vanilla_mbridge" in p.keys], "a note, not a problem"
    assert not deprecation_notes(compose(["model=35b", "device=npu"]))
