"""Actor and ref get the same Megatron patch, and a launch is refused when they do not."""

import pytest

from verl_qwen35 import resolve
from verl_qwen35.checks.parity import ONE_SIDED, parity_errors, patch_sources
from verl_qwen35.config import compose
from verl_qwen35.config.patch import plain
from verl_qwen35.config.schema import ACTOR, REF


def test_presets_have_identical_actor_and_ref_patches(combo):
    model, device = combo
    cfg = compose([f"model={model}", f"device={device}"])
    assert parity_errors(cfg) == []
    for key in patch_sources(cfg):
        assert cfg.actor_rollout_ref.actor.megatron[key] == cfg.actor_rollout_ref.ref.megatron[key]


@pytest.mark.parametrize(
    "override",
    [
        f"{REF}.use_remove_padding=true",
        f"{REF}.vanilla_mbridge=true",
        f"{ACTOR}.tensor_model_parallel_size=4",
        f"+{ACTOR}.override_transformer_config.moe_router_topk=4",
        f"{REF}.dtype=float16",
    ],
)
def test_a_one_sided_override_is_refused_naming_both_keys(override):
    cfg = compose(["model=122b", "device=npu", override])
    errors = parity_errors(cfg)
    key = override.lstrip("+").split("=")[0].split(".megatron.")[1].split(".")[0]
    assert len(errors) == 1
    assert errors[0].keys[:2] == (f"{ACTOR}.{key}", f"{REF}.{key}")
    assert f"{ACTOR}.{key}" in errors[0].message and f"{REF}.{key}" in errors[0].message


def test_setting_the_patch_once_moves_both():
    cfg = compose(
        [
            "model=122b",
            "device=npu",
            "megatron.use_remove_padding=true",
            "+megatron.override_transformer_config.moe_router_topk=4",
        ]
    )
    assert parity_errors(cfg) == []
    for side in (cfg.actor_rollout_ref.actor.megatron, cfg.actor_rollout_ref.ref.megatron):
        assert side.use_remove_padding is True
        assert side.override_transformer_config.moe_router_topk == 4


def test_both_sides_overridden_alike_still_points_at_the_patch():
    cfg = compose(["model=35b", "device=gpu", f"{ACTOR}.dtype=float16", f"{REF}.dtype=float16"])
    (error,) = parity_errors(cfg)
    assert "megatron.dtype='bfloat16'" in error.message


@pytest.mark.parametrize(
    "override",
    [
        f"{REF}.seed=7",
        f"{ACTOR}.sequence_parallel=false",
        f"{REF}.use_distributed_optimizer=false",
        f"+{ACTOR}.override_ddp_config.grad_reduce_in_fp32=true",
        f"{REF}.use_dist_checkpointing=true",
        f"{ACTOR}.router_replay.mode=R2",
    ],
)
def test_keys_outside_the_patch_are_compared_too(override):
    cfg = compose(["model=35b", "device=npu", override])
    errors = parity_errors(cfg)
    path = override.lstrip("+").split("=")[0].split(".megatron.")[1]
    assert [e.keys for e in errors] == [(f"{ACTOR}.{path}", f"{REF}.{path}")], [str(e) for e in errors]
    top = path.split(".")[0]
    assert f"megatron.{top}=" in errors[0].message  # the one place to set it


@pytest.mark.parametrize(
    ("override", "key", "value"),
    [
        ("+megatron.seed=7", "seed", 7),
        ("+megatron.sequence_parallel=false", "sequence_parallel", False),
        (
            "+megatron.override_ddp_config={grad_reduce_in_fp32: true}",
            "override_ddp_config",
            {"grad_reduce_in_fp32": True},
        ),
        ("+megatron.use_dist_checkpointing=true", "use_dist_checkpointing", True),
    ],
)
def test_a_new_patch_key_reaches_both_sides(override, key, value):
    cfg = resolve(compose(["model=122b", "device=gpu", override])).config  # the builder links the patch, once
    assert parity_errors(cfg) == []
    for side in (cfg.actor_rollout_ref.actor.megatron, cfg.actor_rollout_ref.ref.megatron):
        assert plain(side[key]) == value


def test_verl_one_sided_keys_are_listed_and_differ_only_there():
    cfg = compose(["model=35b", "device=gpu"])
    assert cfg.actor_rollout_ref.actor.megatron.forward_only is False
    assert cfg.actor_rollout_ref.ref.megatron.forward_only is True
    assert set(ONE_SIDED) == {"forward_only"}
