"""Actor and ref get the same Megatron patch, and a launch is refused when they do not."""

import pytest

from verl_qwen35.checks.parity import ACTOR, REF, parity_errors, patch_sources
from verl_qwen35.compose import compose


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
