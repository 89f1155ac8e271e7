"""The value kind of every key verl reads, read live from the installed verl (imports verl and torch).

verl's flattened trainer config (`trainer/config/_generated_ppo_megatron_trainer.yaml`) names, at each
section verl turns into a dataclass, that dataclass in `_target_` (`verl/workers/config/*.py`,
`verl/trainer/config/*.py`); a field's annotation is what verl's code computes with (`Optional[int]`
fields default to null in the YAML and say nothing there). Sections verl reads as plain dicts (trainer,
data) keep the kind of their YAML default. `scripts/verl_fields.py` ships this list per verl minor for the
fast path (checks/verl_types.py); `dry_run=full` judges with the live one.
"""

import dataclasses
import enum
import importlib
import re
import types
import typing
from typing import Any

from omegaconf import DictConfig

from verl_qwen35.checks.problem import Problem
from verl_qwen35.checks.verl_types import BASE, read_as_fields, type_problems
from verl_qwen35.config.yaml_files import load_mapping
from verl_qwen35.installed import verl_config_dir

SIMPLE = {bool: "bool", int: "int", float: "float", str: "str", type(None): "null"}
# `${oc.select:actor_rollout_ref.actor.x,null}` or `${actor_rollout_ref.actor.x}`: the key a default follows
FOLLOWS = re.compile(r"^\$\{(?:oc\.select:)?([A-Za-z_][\w.]*)[,}]")


def annotation_kinds(annotation: Any) -> set[str]:
    """The kinds of value an annotation admits; "any" when none can be told from a YAML value."""
    origin = typing.get_origin(annotation)
    if annotation in SIMPLE:
        return {SIMPLE[annotation]}
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return {"str"}
    if origin is typing.Literal:
        return {SIMPLE.get(type(v), "any") for v in typing.get_args(annotation)}
    if annotation in (list, tuple) or origin in (list, tuple, typing.Sequence):
        return {"list"}
    if annotation is dict or origin in (dict, typing.Mapping) or dataclasses.is_dataclass(annotation):
        return {"dict"}
    if origin in (typing.Union, types.UnionType):
        return set().union(*(annotation_kinds(arg) for arg in typing.get_args(annotation)))
    return {"any"}


def _dataclass_of(annotation: Any) -> type | None:
    """The dataclass an annotation names (also inside Optional[...])."""
    if dataclasses.is_dataclass(annotation) and isinstance(annotation, type):
        return annotation
    for arg in typing.get_args(annotation):
        if found := _dataclass_of(arg):
            return found
    return None


def _target(name: Any) -> type | None:
    if not isinstance(name, str) or "." not in name:
        return None
    module, _, attr = name.rpartition(".")
    found = getattr(importlib.import_module(module), attr, None)
    return found if dataclasses.is_dataclass(found) else None


def _default_kind(value: Any) -> str | None:
    """A plain section's YAML default's kind (trainer, data: verl computes with them as they are)."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    return None  # text, null, a list or an interpolation: no kind to keep


def _walk(node: dict, prefix: str, cls: type | None, out: dict[str, dict]) -> None:
    cls = _target(node.get("_target_")) or cls
    hints = typing.get_type_hints(cls) if cls else {}
    fields = {f.name for f in dataclasses.fields(cls)} if cls else set()
    for key, value in node.items():
        if key == "_target_":
            continue
        path = f"{prefix}{key}"
        annotation = hints.get(key) if key in fields else None
        kinds = annotation_kinds(annotation) if annotation is not None else set()
        if isinstance(value, dict) and (value.get("_target_") or _dataclass_of(annotation) or annotation is None):
            _walk(value, f"{path}.", _dataclass_of(annotation), out)
            continue
        if annotation is not None:
            if "any" in kinds:
                continue
            if value is None:
                kinds.add("null")
            out[path] = {"kinds": sorted(kinds), "source": f"{cls.__name__}.{key}: {_shown(annotation)}"}
        elif kind := _default_kind(value):
            out[path] = {"kinds": [kind], "source": f"default {str(value).lower() if kind == 'bool' else value}"}
        if path in out and isinstance(value, str) and (followed := FOLLOWS.match(value)):
            out[path]["follows"] = followed.group(1)


def _shown(annotation: Any) -> str:
    if isinstance(annotation, type):
        return annotation.__name__
    return str(annotation).replace("typing.", "")


def live_fields() -> dict[str, dict]:
    """Flat verl key -> {"kinds": [...], "source": "<dataclass>.<field>: <annotation>" or "default <value>"}."""
    out: dict[str, dict] = {}
    _walk(load_mapping(verl_config_dir() / BASE), "", None, out)
    return dict(sorted(out.items()))


def _targets(node: Any, out: set[str]) -> None:
    if isinstance(node, dict):
        if isinstance(node.get("_target_"), str):
            out.add(node["_target_"])
        for value in node.values():
            _targets(value, out)


def live_dataclass_fields() -> dict[str, list[str]]:
    """Each dataclass a `_target_` of verl's trainer config names -> its field names: the keys Hydra's
    `instantiate` (verl/utils/config.py omega_conf_to_dataclass) may pass it; any other key is refused."""
    names: set[str] = set()
    _targets(load_mapping(verl_config_dir() / BASE), names)
    found = {name: _target(name) for name in sorted(names)}
    return {name: sorted(f.name for f in dataclasses.fields(cls)) for name, cls in found.items() if cls}


def real_type_problems(cfg: DictConfig) -> list[Problem]:
    """The fast rule, judged with the field list of the verl installed here (not the shipped snapshot)."""
    return type_problems(cfg, read_as_fields() | live_fields())
