"""Choices the command fills in (device, verl schema) and the group choices it refuses.

verl ships a config group named `model` (`model@actor_rollout_ref.model: hf_model`) and
Hydra unions same-named groups across the search path, so without this guard
`model=hf_model` or `model@actor_rollout_ref.model=35b` would compose nonsense.
"""

import itertools
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

from hydra.core.override_parser.types import Override
from omegaconf import OmegaConf

from verl_qwen35.errors import UserError
from verl_qwen35.installed import conf_dir, detect_device, installed_verl_schema, verl_config_dir
from verl_qwen35.terminal import say

OUR_GROUPS = (
    "device",
    "model",
    "hardware",
    "parallel",
    "tuning",
    "npu_stack",
    "verl_schema",
    "submit",
    "logger",
    "trial",
)
DEFAULT_MODEL = "35b"  # conf/config.yaml's defaults list
# `hardware: tested_on/${model}_${device}`: the machine each model's upstream script ran on, per device.
TESTED_ON = "hardware/tested_on"


class ChoiceError(UserError):
    """A group choice that cannot compose into a Qwen3.5 launch."""


def options(group: str, extra_dirs: Iterable[Path] = ()) -> list[str]:
    """Our options of a group, plus any a user adds with --config-dir."""
    found = set()
    for root in (conf_dir(), *extra_dirs):
        found.update(p.stem for p in (Path(root) / group).glob("*.yaml"))
    return sorted(found)


def presets() -> list[tuple[str, str]]:
    """Every shipped (model, device) pair: each model preset on each device (conf/model x conf/device), the one
    list goldens, CI and the tests iterate over."""
    return [(model, device) for model in options("model") for device in options("device")]


def values(override: Override) -> list[str]:
    """Every option an override names: a sweep's, and each of a list (`logger=[console,file]`)."""
    chosen = list(override.sweep_iterator()) if override.is_sweep_override() else [override.value()]
    return [str(v) for item in chosen for v in (item if isinstance(item, list) else [item])]


def _group_choices(overrides: Sequence[Override]) -> dict[str, list[str]]:
    return {
        o.key_or_group: values(o)
        for o in overrides
        if o.package is None and not o.is_delete() and o.key_or_group in OUR_GROUPS
    }


def check_choices(overrides: Sequence[Override], extra_dirs: Iterable[Path] = ()) -> None:
    """Refuse choices of our groups that are not ours, our options at verl's packages, and a model
    whose default layout preset does not exist."""
    extra_dirs = tuple(extra_dirs)
    verl_models = {p.stem for p in (verl_config_dir() / "model").glob("*.yaml")}
    for override in overrides:
        group, package = override.key_or_group, override.package
        if not override.is_delete() and override.value() is None and group not in OUR_GROUPS:
            _check_verl_group_kept(group, package)
        if override.is_delete() or group not in OUR_GROUPS:
            continue
        valid = options(group, extra_dirs)
        if package is None and override.value() is None:
            nothing = " (logger=[] logs nothing)" if group == "logger" else ""
            raise ChoiceError(f"{group}=null removes the {group} preset; choose one of: {', '.join(valid)}{nothing}")
        for value in values(override):
            tested = group == "hardware" and value.startswith("tested_on/")
            if tested and value.removeprefix("tested_on/") in options(TESTED_ON, extra_dirs):
                continue  # conf/config.yaml's default, or the device's for a model without one
            if package is None and value not in valid:
                raise ChoiceError(_not_ours(group, value, valid))
            if package is not None and group == "model" and value not in verl_models:
                raise ChoiceError(
                    f"model@{package}={value}: `model@...` is verl's HF-model group "
                    f"(options: {', '.join(sorted(verl_models))}); pick a Qwen3.5 preset with "
                    f"model=<{'|'.join(valid)}> and set HF model fields as actor_rollout_ref.model.KEY=VALUE"
                )
    chosen = _group_choices(overrides)
    _check_layout_presets(chosen, extra_dirs)
    _check_stack_against_machine(chosen)


def _check_verl_group_kept(group: str, package: str | None) -> None:
    """`critic=null`: Hydra refuses a null group choice with a traceback; verl's config groups are whole sections
    its start-up reads, so say which and what to choose."""
    folder = verl_config_dir() / group
    if not folder.is_dir():
        return  # a plain key set to null: the checks judge it
    choices = sorted(p.stem for p in folder.glob("*.yaml"))
    at = f"@{package}" if package else ""
    raise ChoiceError(
        f"{group}{at}=null removes verl's `{group}` config group, a section verl's start-up reads; keep one of: "
        f"{', '.join(choices) or '(none found)'} (set its keys with {package or group}.KEY=VALUE; to turn a part "
        "off, use its enable key where it has one, e.g. critic.enable=false)"
    )


def _check_stack_against_machine(chosen: dict[str, list[str]]) -> None:
    """`device=gpu hardware=a3`: the device group composes one stack (environment, Megatron patch, MindSpeed
    keys), the hardware preset names a machine of the other kind. Judged on the choices, the one place both are
    known: `trainer.device` cannot tell, verl's `auto_set_device` rewrites it to the machine's device."""
    devices, machines = chosen.get("device", []), chosen.get("hardware", [])
    if len(devices) != 1 or len(machines) != 1:
        return  # a sweep over either: each job's own pair is judged by the preflight's memory and rules
    device, hardware = devices[0], machines[0]
    kind = _device_of(hardware)
    if kind is not None and device in ("gpu", "npu") and kind != device:
        raise ChoiceError(
            f"hardware={hardware} is an {kind.upper()} machine but device={device} composes the {device.upper()} "
            f"stack: pass device={kind}, or a {device.upper()} hardware=NAME (verl-qwen35 --presets)"
        )


def _check_layout_presets(chosen: dict[str, list[str]], extra_dirs: tuple[Path, ...]) -> None:
    """`parallel: ${model}_${device}` and `hardware: tested_on/${model}_${device}` need those files; say which
    one to add instead of Hydra's search path dump."""
    pairs = list(itertools.product(chosen.get("model", [DEFAULT_MODEL]), chosen.get("device", ["gpu"])))
    if "parallel" not in chosen:
        layouts = set(options("parallel", extra_dirs))
        for model, device in pairs:
            if f"{model}_{device}" not in layouts:
                raise ChoiceError(_no_layout(model, device, layouts, extra_dirs[0] if extra_dirs else None))
    if "hardware" not in chosen and len(pairs) > 1:  # one pair falls back to the device's (implicit_overrides)
        tested = set(options(TESTED_ON, extra_dirs))
        for model, device in pairs:
            if f"{model}_{device}" not in tested:
                raise ChoiceError(_no_hardware(model, device, extra_dirs))


def _no_hardware(model: str, device: str, extra_dirs: Iterable[Path]) -> str:
    return (
        f"model={model} device={device} names no hardware ({TESTED_ON}/{model}_{device}.yaml): pass "
        f"hardware=<{'|'.join(options('hardware', extra_dirs))}>"
    )


def _no_layout(model: str, device: str, layouts: Iterable[str], extra_dir: Path | None) -> str:
    where = (extra_dir or Path("<your --config-dir>")) / "parallel" / f"{model}_{device}.yaml"
    return (
        f"model={model} has no layout preset for device={device}: add {where} "
        "with at least parallel.nnodes and parallel.devices_per_node "
        f"(like {conf_dir() / 'parallel' / '35b_gpu.yaml'}), "
        f"or pick an existing layout with parallel=<{'|'.join(sorted(layouts))}>"
    )


def _not_ours(group: str, value: str, valid: Iterable[str]) -> str:
    return (
        f"{group}={value} is not a {group} of verl_qwen35; choose one of: "
        f"{', '.join(sorted(valid))} (add your own with --config-dir DIR holding {group}/NAME.yaml)"
    )


def missing_choice(missing: str, found: Iterable[str]) -> str | None:
    """Hydra's missing `group/name` (with the options it found) of one of our groups, said as check_choices says
    it; None for any other group."""
    group, _, name = missing.partition("/")
    if group == "hardware" and name.startswith("tested_on/"):
        model, _, device = name.removeprefix("tested_on/").rpartition("_")
        return _no_hardware(model, device, ())
    if group not in OUR_GROUPS or not name or "/" in name:
        return None
    verl_only = {p.stem for p in (verl_config_dir() / group).glob("*.yaml")} - set(options(group))
    valid = sorted(set(found) - verl_only)
    model, _, device = name.rpartition("_")
    if group == "parallel" and device in ("gpu", "npu"):  # `${model}_${device}`
        if model in options("model"):
            return _no_layout(model, device, valid, None)
        if (verl_config_dir() / "model" / f"{model}.yaml").is_file():  # verl's `model` group let model=X compose
            return _not_ours("model", model, options("model"))
    return _not_ours(group, name, valid)


def implicit_overrides(overrides: Sequence[str], announce: bool = True, config_dirs: Iterable[Path] = ()) -> list[str]:
    """`device` (the hardware's, else detected) and `verl_schema` (the installed verl's) when the command line
    gives none; for a `hardware=NAME` with a layout of its own for the model (`parallel/<model>_<NAME>.yaml`),
    that layout; for a model without `hardware/tested_on/<model>_<device>.yaml` (a user's), the device's
    hardware (`hardware/tested_on/<device>.yaml`).

    Hydra reads one override per argument, so a choice given is an argument that starts with it."""
    given = {o.split("=", 1)[0].lstrip("+~") for o in overrides if "=" in o or o.startswith("~")}
    chosen = {o.split("=", 1)[0]: o.split("=", 1)[1] for o in overrides if "=" in o and not o.startswith(("+", "~"))}
    hardware = chosen.get("hardware")
    model = chosen.get("model", DEFAULT_MODEL)
    added = []
    device = chosen.get("device")
    if "device" not in given:
        device = _device_of(hardware) if hardware else None
        why = f"hardware={hardware} is one" if device else None
        if device is None:
            device = detect_device()
            why = "torch_npu is installed" if device == "npu" else "torch_npu is not installed"
        added.append(f"device={device}")
        if announce:
            say(f"verl-qwen35: device={device} ({why}); pass device=gpu|npu to choose", file=sys.stderr)
    if "verl_schema" not in given:
        added.append(f"verl_schema={installed_verl_schema()}")
    if hardware and "parallel" not in given:
        # The layout follows the hardware where the defaults list cannot: `parallel: ${model}_${device}` would
        # keep a 16-a-node A3 layout on an 8-a-node A2 (verl's 35B NPU script fails there).
        layout = f"{model}_{hardware}"
        if layout in options("parallel", config_dirs):
            added.append(f"parallel={layout}")
            if announce:
                say(f"verl-qwen35: parallel={layout} (the layout for hardware={hardware})", file=sys.stderr)
    single = "," not in model and "," not in str(device)  # a sweep's jobs each need their own file
    tested = set(options(TESTED_ON, config_dirs))
    if "hardware" not in given and single and f"{model}_{device}" not in tested and device in tested:
        added.append(f"hardware=tested_on/{device}")
    return added


def _device_of(hardware: str) -> str | None:
    """The `device` a hardware preset of ours names (None for another name: check_choices refuses it)."""
    path = conf_dir() / "hardware" / f"{hardware}.yaml"
    if not path.is_file():
        return None
    device = OmegaConf.load(path).get("device")  # our shipped conf/, not a user's file
    return str(device) if device in ("gpu", "npu") else None
