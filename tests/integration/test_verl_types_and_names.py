"""Kinds and names of verl's keys in the fast preflight (dry_run=true): refused naming the key, exit 2;
verl's own launch scripts (../shared/reference) and every preset pass, on verl 0.9 and 0.8."""

import os
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir

from verl_qwen35.checks.verl_names import name_problems
from verl_qwen35.checks.verl_types import installed_verl_minor, type_problems
from verl_qwen35.config import compose as compose_ours
from verl_qwen35.installed import verl_config_dir

# On every verl CI tests (-m each_verl): the installed verl's kinds and names.
pytestmark = pytest.mark.each_verl

REFERENCE = Path(os.environ.get("VERL_QWEN35_REFERENCE", Path(__file__).parents[3] / "shared" / "reference"))
if not REFERENCE.is_dir():
    REFERENCE = Path("/work/shared/reference")
SHIPPED_SEEDS = Path(__file__).parents[1] / "seed_fidelity" / "seed_overrides"
ON_0_9 = installed_verl_minor() >= (0, 9)

REFUSED = [
    # (override, the key the one error names, a fragment of its message)
    ("trainer.total_epochs=ten", "trainer.total_epochs", "an integer"),
    ("actor_rollout_ref.actor.optim.lr=1e-6x", "actor_rollout_ref.actor.optim.lr", "a number"),
    (
        "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=abc",
        "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu",
        "abc",
    ),
    # Optional[int] fields of verl's dataclasses whose YAML default is null
    (
        "actor_rollout_ref.actor.optim.lr_warmup_steps=abc",
        "actor_rollout_ref.actor.optim.lr_warmup_steps",
        "an integer or null",
    ),
    (
        "actor_rollout_ref.actor.loss_scale_factor=1.5",
        "actor_rollout_ref.actor.loss_scale_factor",
        "an integer or null",
    ),
    ("trainer.val_before_train=maybe", "trainer.val_before_train", "true or false"),
    ("actor_rollout_ref.actor.use_kl_loss=[1]", "actor_rollout_ref.actor.use_kl_loss", "true or false"),
    ("actor_rollout_ref.actor.clip_ratio=true", "actor_rollout_ref.actor.clip_ratio", "a number"),
    # names
    ("algorithm.adv_estimator=grpoo", "algorithm.adv_estimator", "did you mean 'grpo'"),
    ("actor_rollout_ref.actor.policy_loss.loss_mode=gspo2", "actor_rollout_ref.actor.policy_loss.loss_mode", "gspo"),
    ("actor_rollout_ref.actor.loss_agg_mode=seq-mean", "actor_rollout_ref.actor.loss_agg_mode", "token-mean"),
    ("actor_rollout_ref.actor.kl_loss_type=full", "actor_rollout_ref.actor.kl_loss_type", "low_var_kl"),
    ("algorithm.rollout_correction.rollout_is=seq", "algorithm.rollout_correction.rollout_is", "sequence"),
    ('algorithm.rollout_correction.rollout_rs="token_k1,seq_k3"', "algorithm.rollout_correction.rollout_rs", "seq_k3"),
    ("reward.reward_manager.name=naiv", "reward.reward_manager.name", "did you mean 'naive'"),
    ("trainer.logger=[console,wandbb]", "trainer.logger", "did you mean 'wandb'"),
    ("actor_rollout_ref.rollout.name=vllm_ascend", "actor_rollout_ref.rollout.name", "vllm"),
    ("actor_rollout_ref.actor.optim.optimizer=adamw", "actor_rollout_ref.actor.optim.optimizer", "adam"),
    (
        "actor_rollout_ref.actor.optim.lr_decay_style=inverse_square_root",
        "actor_rollout_ref.actor.optim.lr_decay_style",
        "inverse-square-root",
    ),
    (
        "actor_rollout_ref.actor.optim.weight_decay_incr_style=exponential",
        "actor_rollout_ref.actor.optim.weight_decay_incr_style",
        "linear",
    ),
]
ACCEPTED = [
    "actor_rollout_ref.actor.optim.lr=1",  # an integer where verl wants a float
    "actor_rollout_ref.actor.entropy_coeff=0",
    "actor_rollout_ref.actor.optim.lr_warmup_steps=null",  # null to an Optional key
    "actor_rollout_ref.rollout.max_model_len=null",
    "trainer.total_training_steps=null",
    "trainer.experiment_name=2024",  # Hydra reads it as an integer; verl formats it
    "trainer.logger=console",  # Tracking takes a single name too
    "trainer.logger=[console,tensorboard,tracking]",
    "algorithm.adv_estimator=rloo",
    "actor_rollout_ref.actor.kl_loss_type=k3+",  # the straight-through '+' suffix (core_algos.kl_penalty)
    "algorithm.kl_penalty=abs",
    'algorithm.rollout_correction.rollout_rs="token_k1,seq_max_k3"',
    "actor_rollout_ref.actor.optim.lr_decay_style=cosine",
    # sgd without the presets' precision-aware optimizer (megatron-core runs that with adam only); the CPU
    # offload stays (megatron/core/optimizer/__init__.py: CPUSGD)
    "actor_rollout_ref.actor.optim.optimizer=sgd"
    " actor_rollout_ref.actor.optim.override_optimizer_config.use_precision_aware_optimizer=false",
]
# A name verl uses only in some settings is judged only there, as verl does.
UNUSED = [
    "algorithm.kl_penalty=full",  # use_kl_in_reward is off
    "actor_rollout_ref.actor.optim.lr_wsd_decay_style=constant",  # lr_decay_style is not WSD
]


@pytest.mark.parametrize(("override", "key", "said"), REFUSED, ids=[r[0] for r in REFUSED])
def test_refused_naming_the_key(cli, override, key, said):
    if "kl_loss_type" in override:
        override = [override, "actor_rollout_ref.actor.use_kl_loss=true"]
    outcome = cli("model=35b", "device=gpu", "dry_run=true", *([override] if isinstance(override, str) else override))
    errors = [line for line in outcome.said.splitlines() if line.startswith("ERROR")]
    assert outcome.code == 2, outcome.said
    assert len(errors) == 1 and f"[{key}]" in errors[0] and said in errors[0], errors


@pytest.mark.parametrize("override", ACCEPTED + UNUSED)
def test_accepted(cli, override):
    outcome = cli("model=35b", "device=gpu", "dry_run=true", *override.split())
    assert outcome.code == 0, outcome.said


def test_token_sum_follows_the_installed_verl(cli):
    """verl 0.9 added "token-sum" to agg_loss and ActorConfig; 0.8.0 has neither."""
    outcome = cli("model=35b", "device=gpu", "dry_run=true", "actor_rollout_ref.actor.loss_agg_mode=token-sum")
    assert outcome.code == (0 if ON_0_9 else 2), outcome.said


def test_a_wsd_decay_style_is_judged_with_wsd(cli):
    bad = [
        "actor_rollout_ref.actor.optim.lr_decay_style=WSD",
        "actor_rollout_ref.actor.optim.lr_wsd_decay_style=constant",
    ]
    outcome = cli("model=35b", "device=gpu", "dry_run=true", *bad)
    assert outcome.code == 2 and "[actor_rollout_ref.actor.optim.lr_wsd_decay_style]" in outcome.said


def _reference_lists() -> list[Path]:
    found = sorted(SHIPPED_SEEDS.glob("*.txt"))
    for folder in ("seed_overrides", "upstream_overrides"):
        found += sorted((REFERENCE / folder).glob("*.txt"))
    return found


@pytest.mark.parametrize("path", _reference_lists(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_verl_launch_scripts_pass(path):
    """The overrides verl's own launch scripts hand to main_ppo, on verl's own config."""
    text = path.read_text().splitlines()
    lines = [ln for ln in text[: text.index("#ENV")] if ln and not ln.startswith("#")]  # the header names #ENV too
    # Keys one verl has and the other lacks (reference/README.md): grad_offload left in 0.9, py_executable
    # came after 0.8 (verl main's uv launch, PR #7127).
    gone = "grad_offload=" if ON_0_9 else "runtime_env.py_executable="
    lines = [ln for ln in lines if gone not in ln]
    with initialize_config_dir(str(verl_config_dir()), version_base=None):
        cfg = compose("ppo_trainer", overrides=lines)
    assert type_problems(cfg) + name_problems(cfg) == []


def test_every_preset_passes(combo):
    model, device = combo
    cfg = compose_ours([f"model={model}", f"device={device}"])
    assert type_problems(cfg) + name_problems(cfg) == []
