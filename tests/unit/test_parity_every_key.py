"""Parity, every key on both sides: changing any one leaf of the actor's or the ref's Megatron config
alone is refused, naming that key on both sides; changing both alike away from the patch is refused
naming the patch key.

Runs on the resolved config, as preflight does (app.run resolves before the checks): there the two
sides are plain values, and nothing links them any more.
"""

import copy
from functools import cache

import pytest
from omegaconf import OmegaConf, open_dict

from verl_qwen35.checks.parity import ONE_SIDED, PLAIN_VERL_PATCH_KEYS, parity_errors, patch_sources
from verl_qwen35.config import compose
from verl_qwen35.config.schema import ACTOR, PARALLEL_KEYS, REF


@cache
def resolved():
    cfg = compose(["model=35b", "device=npu"])
    OmegaConf.resolve(cfg)
    return cfg


def _leaves(value, prefix=""):
    if isinstance(value, dict) and value:
        return [leaf for key, inner in value.items() for leaf in _leaves(inner, f"{prefix}.{key}" if prefix else key)]
    return [(prefix, value)]


def _other(value):
    if isinstance(value, bool):
        return not value
    if isinstance(value, int | float):
        return value + 1
    if value is None:
        return 3
    if isinstance(value, list):
        return [*value, "x"]
    if isinstance(value, dict):
        return {"added_on_one_side": 1}
    return f"{value}_other"


def actor_leaves() -> list[tuple[str, object]]:
    actor = OmegaConf.to_container(OmegaConf.select(resolved(), ACTOR))
    return [(path, value) for path, value in _leaves(actor) if path.split(".")[0] not in ONE_SIDED]


LEAVES = actor_leaves()


def test_there_are_leaves_to_compare():
    paths = {path for path, _ in LEAVES}
    assert {"tensor_model_parallel_size", "param_offload", "use_remove_padding", "seed"} <= paths
    assert any(path.startswith("override_transformer_config.") for path in paths)


@pytest.mark.parametrize("side", [ACTOR, REF], ids=["actor", "ref"])
@pytest.mark.parametrize(("path", "value"), LEAVES, ids=[path for path, _ in LEAVES])
def test_one_side_alone_is_refused_naming_the_key_on_both_sides(side, path, value):
    cfg = copy.deepcopy(resolved())
    OmegaConf.update(cfg, f"{side}.{path}", _other(value), merge=False, force_add=True)
    errors = parity_errors(cfg)
    assert len(errors) == 1, [str(e) for e in errors]
    (problem,) = errors
    top = path.split(".")[0]
    leaf = f"{path}.added_on_one_side" if isinstance(value, dict) else path  # an empty mapping gains a key
    named = (f"{ACTOR}.{top}", f"{REF}.{top}") if top in patch_sources(cfg) else (f"{ACTOR}.{leaf}", f"{REF}.{leaf}")
    assert problem.level == "error" and problem.keys[:2] == named
    assert f"{named[0]}=" in problem.message and f"{named[1]}=" in problem.message
    assert "actor and ref must share" in problem.message


PATCHED = sorted(k for k in patch_sources(resolved()) if k in OmegaConf.select(resolved(), ACTOR))


@pytest.mark.parametrize("key", PATCHED)
def test_both_sides_changed_alike_are_refused_naming_the_patch_key(key):
    cfg = copy.deepcopy(resolved())
    changed = _other(OmegaConf.to_container(cfg, resolve=True)["actor_rollout_ref"]["actor"]["megatron"][key])
    for side in (ACTOR, REF):
        OmegaConf.update(cfg, f"{side}.{key}", changed, merge=False)
    (problem,) = parity_errors(cfg)
    source = patch_sources(cfg)[key]
    assert problem.keys == (f"{ACTOR}.{key}", f"{REF}.{key}", source)
    assert f"but {source}=" in problem.message and f"set {source} instead" in problem.message


def test_the_shipped_config_has_no_parity_error():
    assert parity_errors(copy.deepcopy(resolved())) == []


@cache
def plain_verl():
    """A plain verl config (a verl launch.yaml relaunched): no `megatron` patch, only actor and ref."""
    cfg = copy.deepcopy(resolved())
    with open_dict(cfg):
        del cfg["megatron"]
    return cfg


# Stated here, not imported: a key dropped from parity.py's lists must fail its case, not lose it.
PLAIN_VERL_COMPARED = [
    "use_mbridge",
    "vanilla_mbridge",
    "use_remove_padding",
    "dtype",
    "param_offload",
    "override_transformer_config",
    "tensor_model_parallel_size",
    "pipeline_model_parallel_size",
    "virtual_pipeline_model_parallel_size",
    "context_parallel_size",
    "expert_model_parallel_size",
    "expert_tensor_parallel_size",
]


def test_the_plain_verl_list_is_parity_pys():
    assert sorted(PLAIN_VERL_COMPARED) == sorted([*PLAIN_VERL_PATCH_KEYS, *PARALLEL_KEYS])


@pytest.mark.parametrize("key", PLAIN_VERL_COMPARED)
def test_a_plain_verl_config_compares_every_patched_key_between_actor_and_ref(key):
    cfg = copy.deepcopy(plain_verl())
    value = OmegaConf.to_container(cfg, resolve=True)["actor_rollout_ref"]["actor"]["megatron"].get(key)
    OmegaConf.update(cfg, f"{ACTOR}.{key}", _other(value), merge=False, force_add=True)
    (problem,) = parity_errors(cfg)
    assert problem.keys == (f"{ACTOR}.{key}", f"{REF}.{key}")
    assert problem.message.endswith(": actor and ref must share the Megatron patch")


def test_a_plain_verl_config_with_equal_sides_has_no_parity_error():
    assert parity_errors(copy.deepcopy(plain_verl())) == []


@pytest.mark.parametrize(
    ("config", "advice"),
    [
        (resolved, "Set +megatron.seed=... once (it reaches both)"),  # a new key of the patch: `+`
        (plain_verl, f"Set {ACTOR}.seed and {REF}.seed=... once"),  # no patch to set
    ],
    ids=["patch", "plain_verl"],
)
def test_a_side_specific_leaf_outside_the_patch_says_where_to_set_it_once(config, advice):
    cfg = copy.deepcopy(config())
    OmegaConf.update(cfg, f"{ACTOR}.seed", 7, merge=False)
    (problem,) = parity_errors(cfg)
    assert problem.keys == (f"{ACTOR}.seed", f"{REF}.seed")
    assert problem.message.startswith(f"{ACTOR}.seed=7 but {REF}.seed=42: actor and ref must share the whole")
    assert advice in problem.message
