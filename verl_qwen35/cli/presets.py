"""`verl-qwen35 --presets`: every group's options, read from conf/ and each `--config-dir`.

Nothing is hard-coded: a group directory or a preset file someone adds (a model, a layout,
a submit option) is listed as it lands. Layouts show nodes x devices as their files say; a layout without its
own devices_per_node uses a whole node of its hardware (hardware/tested_on/<layout>.yaml when there is one).
"""

import itertools
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from verl_qwen35.config.yaml_files import load_yaml, read_text
from verl_qwen35.installed import conf_dir, detect_device

COMMAND = "verl-qwen35"


@dataclass(frozen=True)
class Option:
    group: str
    name: str
    path: Path
    user_dir: Path | None  # the --config-dir it came from, None for ours

    def description(self) -> str:
        """The file's first comment line that is not a `# @package` header (after a leading defaults list)."""
        lines = read_text(self.path).splitlines()
        if lines and lines[0].startswith("defaults:"):
            lines = list(itertools.dropwhile(lambda line: line.startswith(("defaults:", " ", "-")) or not line, lines))
        for line in lines:
            if line.startswith("#") and not line.startswith("# @package"):
                return line.lstrip("# ").strip()
            if line.strip() and not line.startswith("#"):
                break
        return ""

    def values(self) -> DictConfig:
        loaded = load_yaml(self.path)  # the loader's limits: a --config-dir file may be an alias bomb
        return OmegaConf.create(loaded) if isinstance(loaded, dict) else OmegaConf.create()


def tested_on(name: str, extra_dirs: Iterable[Path] = ()) -> str | None:
    """The hardware `hardware/tested_on/<model>_<device>.yaml` loads (`- /hardware/h100@_here_`), None without one."""
    for root in (conf_dir(), *extra_dirs):
        path = Path(root) / "hardware" / "tested_on" / f"{name}.yaml"
        if path.is_file():
            loaded = load_yaml(path)  # the loader's limits: a --config-dir file may be an alias bomb
            for entry in (loaded.get("defaults") or []) if isinstance(loaded, dict) else []:
                if isinstance(entry, str) and entry.startswith("/hardware/"):
                    return entry.removeprefix("/hardware/").split("@", 1)[0]
    return None


def discover(extra_dirs: Iterable[Path] = ()) -> dict[str, dict[str, Option]]:
    """group -> option -> Option, from conf/ then each --config-dir.

    Hydra puts `--config-dir` after our conf/ on its search path, so a file of ours wins over
    a user's file of the same name; the listing shows the one Hydra loads.
    """
    groups: dict[str, dict[str, Option]] = {}
    for root, user_dir in [(conf_dir(), None), *((Path(d), Path(d)) for d in extra_dirs)]:
        if not root.is_dir():
            continue
        for group_dir in sorted(p for p in root.iterdir() if p.is_dir()):
            for path in sorted(group_dir.glob("*.yaml")):
                options = groups.setdefault(group_dir.name, {})
                options.setdefault(path.stem, Option(group_dir.name, path.stem, path, user_dir))
    return dict(sorted(groups.items(), key=lambda item: _group_order(item[0])))


def default_choices() -> dict[str, str]:
    """group -> default choice as conf/config.yaml's defaults list writes it (`${model}_${device}` kept)."""
    defaults = OmegaConf.create(load_yaml(conf_dir() / "config.yaml")).get("defaults", [])
    found = {}
    for entry in defaults:
        if isinstance(entry, DictConfig):
            for key, value in entry.items_ex(resolve=False):
                found[str(key).removeprefix("optional ").removeprefix("override ")] = str(value)
    return found


def _group_order(group: str) -> tuple[bool, int, str]:
    """The defaults list's order, hardware just before the layouts that pick it; verl_schema (picked from the
    installed verl) last."""
    order = list(default_choices())
    place = "parallel" if group == "hardware" else group
    return (group == "verl_schema", order.index(place) if place in order else len(order), group)


def _scalar(value: object) -> str:
    return "-" if value is None else str(value)


def layout_summary(values: DictConfig, hardware: Option | None = None) -> tuple[str, str]:
    """('N x D = W', 'tp=.. pp=.. ...') of a parallel preset, read as written (not composed); D is the
    hardware's devices_per_node when the layout sets none (config/schema.py Parallel)."""
    raw = OmegaConf.to_container(values, resolve=False)
    assert isinstance(raw, dict)
    nodes, per_node = raw.get("nnodes"), raw.get("devices_per_node")
    if per_node is None and hardware is not None:
        per_node = hardware.values().get("devices_per_node")
    world = f" = {nodes * per_node}" if isinstance(nodes, int) and isinstance(per_node, int) else ""
    # A whole node of the hardware the device or the layout names, when neither the layout nor a hardware says.
    size = f"{_scalar(nodes)} x {_scalar(per_node) if per_node is not None else 'node'}{world}"
    hidden = ("nnodes", "devices_per_node", "defaults")
    shown = {k: v for k, v in raw.items() if k not in hidden and not isinstance(v, dict | list)}
    return size, " ".join(f"{key}={_scalar(value)}" for key, value in shown.items())


def _origin(option: Option) -> str:
    return f"  [{option.user_dir}]" if option.user_dir is not None else ""


def presets_text(extra_dirs: Iterable[Path] = ()) -> str:
    """Every group's options with what each holds, then the model x device grid of layouts and tunings."""
    extra_dirs = list(extra_dirs)
    groups = discover(extra_dirs)
    defaults = default_choices()
    sources = ", ".join([str(conf_dir()), *map(str, extra_dirs)])
    lines = [f"{COMMAND} presets (from {sources}); pick one with GROUP=OPTION", ""]
    width = max(len(name) for options in groups.values() for name in options) + 2
    for group, options in groups.items():
        lines.append(f"{group}  (default: {default_text(group, defaults)})")
        for option in options.values():
            if group == "parallel":
                machine = tested_on(option.name, extra_dirs)
                size, rest = layout_summary(option.values(), groups.get("hardware", {}).get(machine or ""))
                lines.append(f"  {option.name:<{width}}{size:<12} {rest}{_origin(option)}".rstrip())
                if about := option.description():  # the layout's why, on a line of its own under its numbers
                    lines.append(f"  {'':<{width}}{about}")
                continue
            if group == "hardware":
                text = f"{hardware_summary(option.values())}: {option.description()}"
            else:
                text = option.description()
            lines.append(f"  {option.name:<{width}}{text}{_origin(option)}".rstrip())
        lines.append("")
    lines += _grid(groups, extra_dirs)
    return "\n".join(lines).rstrip() + "\n"


def hardware_summary(values: DictConfig) -> str:
    """'8 x 79.19 GiB, 989 TFLOPS bf16, ...' of a hardware preset: what the estimate and the planner read."""
    v = values
    return (
        f"{v.get('device', '?')} {v.get('devices_per_node', '?')} x {v.get('device_memory_gib', '?')} GiB "
        f"(reserve {v.get('reserved_gib', '?')}), host {v.get('host_memory_gib', '?')} GiB, "
        f"{v.get('bf16_tflops', '?')} TFLOPS bf16, HBM {v.get('hbm_gbps', '?')} GB/s, "
        f"links {v.get('intra_node_gbps', '?')}/{v.get('inter_node_gbps', '?')} GB/s"
    )


def default_text(group: str, defaults: dict[str, str]) -> str:
    if group == "hardware":
        return "the one the model's upstream script ran on on this device, hardware/tested_on/<model>_<device>"
    if group == "device":
        return f"detected, {detect_device()} here (npu when torch_npu is installed)"
    if group == "verl_schema":
        return "the installed verl's"
    chosen = defaults.get(group)
    return chosen.replace("${", "<").replace("}", ">") if chosen else "none"


def _grid(groups: dict[str, dict[str, Option]], extra_dirs: Iterable[Path] = ()) -> list[str]:
    """model x device: the layout and tuning `model=M device=D` picks by default (`M_D`)."""
    layouts, tunings = groups.get("parallel", {}), groups.get("tuning", {})
    hardware = groups.get("hardware", {})
    rows = []
    for model in groups.get("model", {}):
        for device in groups.get("device", {}):
            name = f"{model}_{device}"
            if name in layouts:
                machine = tested_on(name, extra_dirs)
                size, rest = layout_summary(layouts[name].values(), hardware.get(machine or ""))
                rows.append((model, device, name, machine or "-", size, rest, name if name in tunings else "-"))
            else:
                missing = f"no preset: add parallel/{name}.yaml or pass parallel=NAME"
                rows.append((model, device, "-", "-", "-", missing, "-"))
    head = ("model", "device", "parallel", "hardware", "nodes x devices", "layout", "tuning")
    from tabulate import tabulate  # only `--presets` prints a grid (the run imports this module for --help)

    grid = tabulate(rows, headers=head, tablefmt="plain", disable_numparse=True)
    out = [
        "model x device (what model=M device=D picks: parallel=M_D, hardware=tested_on/M_D, tuning=M_D when it "
        "exists; hardware=H picks parallel=M_H when that exists)"
    ]
    return out + ["  " + line for line in grid.splitlines()]
