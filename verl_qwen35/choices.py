"""Choices the entrypoint fills in (device, verl schema) and the group choices it refuses.

verl ships a config group named `model` (`model@actor_rollout_ref.model: hf_model`) and
Hydra unions same-named groups across the search path, so without this guard
`model=hf_model` or `model@actor_rollout_ref.model=35b` would compose nonsense.
"""

import importlib.util
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.override_parser.types import Override

from verl_qwen35.paths import conf_dir, verl_config_dir
from verl_qwen35.versions import installed_verl_schema

OUR_GROUPS = ("device", "model", "parallel", "tuning", "verl_schema", "submit")


class ChoiceError(ValueError):
    """A group choice that cannot compose into a Qwen3.5 launch."""


def detect_device() -> str:
    """npu on a host with torch_npu installed, else gpu (find_spec imports nothing)."""
    return "npu" if importlib.util.find_spec("torch_npu") is not None else "gpu"


def options(group: str, extra_dirs: Iterable[Path] = ()) -> list[str]:
    """Our options of a group, plus any a user adds with --config-dir."""
    found = set()
    for root in (conf_dir(), *extra_dirs):
        found.update(p.stem for p in (Path(root) / group).glob("*.yaml"))
    return sorted(found)


def _values(override: Override) -> list[str]:
    if override.is_sweep_override():
        return [str(v) for v in override.sweep_iterator()]
    return [str(override.value())]


def check_choices(overrides: Sequence[str], extra_dirs: Iterable[Path] = ()) -> None:
    """Refuse choices of our groups that are not ours, and our options at verl's packages."""
    extra_dirs = tuple(extra_dirs)
    verl_models = {p.stem for p in (verl_config_dir() / "model").glob("*.yaml")}
    for override in OverridesParser.create().parse_overrides(list(overrides)):
        group, package = override.key_or_group, override.package
        if override.is_delete() or group not in OUR_GROUPS:
            continue
        valid = options(group, extra_dirs)
        for value in _values(override):
            if package is None and value not in valid:
                raise ChoiceError(
                    f"{group}={value} is not a {group} of verl_qwen35; choose one of: "
                    f"{', '.join(valid)} (add your own with --config-dir DIR holding {group}/NAME.yaml)"
                )
            if package is not None and group == "model" and value not in verl_models:
                raise ChoiceError(
                    f"model@{package}={value}: `model@...` is verl's HF-model group "
                    f"(options: {', '.join(sorted(verl_models))}); pick a Qwen3.5 preset with "
                    f"model=<{'|'.join(valid)}> and set HF model fields as actor_rollout_ref.model.KEY=VALUE"
                )


def implicit_overrides(overrides: Sequence[str], announce: bool = True) -> list[str]:
    """Add `device` (detected) and `verl_schema` (installed verl) when the user gave none."""
    keys = {o.split("=", 1)[0].lstrip("+~") for o in overrides if "=" in o}
    added = []
    if "device" not in keys:
        device = detect_device()
        added.append(f"device={device}")
        if announce:
            why = "torch_npu is installed" if device == "npu" else "torch_npu is not installed"
            print(f"verl_qwen35: device={device} ({why}); pass device=gpu|npu to choose", file=sys.stderr)
    if "verl_schema" not in keys:
        added.append(f"verl_schema={installed_verl_schema()}")
    return added + list(overrides)
