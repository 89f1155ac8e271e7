"""The config with its wrongly typed values set aside, so the rules that never read them still speak.

A bad value (`trainer.total_epochs=ten`, `data.train_batch_size=-1`) stops the rules that compute with it; the
others (`actor_rollout_ref.rollout.n=1` with GRPO) hold whatever the value is. Which rule reads which key is
nowhere written down, so it is measured: the rules run on two copies of the config, each bad key (and every key
that follows it by interpolation) given a different valid value of its kind in each, and a finding counts only
when both copies give it word for word and it names no set-aside key. A finding that changes with the value,
or that is about the key itself, belongs to the value the user has not yet given.
"""

from copy import deepcopy
from typing import Any

from omegaconf import DictConfig, OmegaConf

from verl_qwen35.checks.megatron_keys import field_spec
from verl_qwen35.checks.problem import Problem
from verl_qwen35.checks.values import FED_BY, kinds
from verl_qwen35.checks.verl_types import shipped_verl_data

OTC = "megatron.override_transformer_config"
# The sides our megatron patch is copied to (config/schema.py ACTOR / REF name their megatron nodes instead).
ACTOR_SIDE, REF_SIDE = "actor_rollout_ref.actor", "actor_rollout_ref.ref"
# Two different valid values of each kind, the first kind a key takes that is listed here.
STAND_INS: dict[str, tuple[Any, Any]] = {
    "int": (1, 2),
    "float": (0.5, 0.6),
    "bool": (True, False),
    "str": ("a", "b"),
    "list": ([], [None]),
    "dict": ({}, {"a": None}),
}


def key_of(shown: str) -> str:
    """The config key a problem names: `parallel.tp (actor_rollout_ref...)` is `parallel.tp`."""
    return shown.split(" (")[0]


def followers(key: str) -> list[str]:
    """The keys that hold this key's value by interpolation: what a shorthand feeds, the actor's and ref's copies
    of our megatron patch, the ref's copy of the actor's engine key, and verl's own `oc.select` followers."""
    found = [k for k, source in FED_BY.items() if source == key]
    if key.startswith("megatron."):
        found += [f"{ACTOR_SIDE}.{key}", f"{REF_SIDE}.{key}"]
    on_actor = [k for k in [key, *found] if k.startswith(f"{ACTOR_SIDE}.megatron.")]
    found += [f"{REF_SIDE}.{k.removeprefix(ACTOR_SIDE + '.')}" for k in on_actor]
    fields = shipped_verl_data()["fields"]
    return found + [k for k, spec in fields.items() if spec.get("follows") == key]


def stand_ins(key: str) -> tuple[Any, Any] | None:
    """Two valid values for the key, or None when its type is not known here."""
    if key.startswith(f"{OTC}."):
        spec = field_spec().get(key.removeprefix(f"{OTC}."), {})
        if len(spec.get("choices", [])) > 1 and "str" in spec.get("kinds", []):
            return spec["choices"][0], spec["choices"][1]
    taken = kinds(key)
    return next((STAND_INS[k] for k in taken if k in STAND_INS), None)


def masked_configs(cfg: DictConfig, bad: list[Problem]) -> tuple[DictConfig, DictConfig, set[str]] | None:
    """Two copies of the resolved config with every bad value replaced, and the keys replaced; None when a bad
    key's type is unknown (then only the bad values are reported, as before)."""
    copies = deepcopy(cfg), deepcopy(cfg)
    replaced: set[str] = set()
    for copy in copies:
        OmegaConf.set_readonly(copy, False)
    for key in {key_of(k) for p in bad for k in p.keys}:
        values = stand_ins(key)
        if values is None:
            return None
        given = OmegaConf.select(cfg, key, default=None)
        for k in [key, *followers(key)]:
            if k != key and OmegaConf.select(cfg, k, default=None) != given:
                continue  # set on its own, not following the bad value
            parent_key, _, leaf = k.rpartition(".")
            for copy, value in zip(copies, values, strict=True):
                parent = OmegaConf.select(copy, parent_key, default=None) if parent_key else copy
                if isinstance(parent, DictConfig) and leaf in parent:  # through an interpolation: its target
                    parent[leaf] = value
                    replaced.add(k)
    return copies[0], copies[1], replaced
