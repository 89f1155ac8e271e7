"""`verl-qwen35 --presets`: every group's options, read from conf/ and each `--config-dir`.

Nothing is hard-coded: a group directory or a preset file someone adds (a model, a layout,
a submit option) is listed as it lands. Layouts show nodes x devices as their files say.
"""

import itertools
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from omegaconf import DictConfig, OmegaConf
from tabulate import tabulate

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
    """The defaults list's order; verl_schema (picked from the installed verl) last."""
    order = list(default_choices())
    return (group == "verl_schema", order.index(group) if group in order else len(order), group)


def _scalar(value: object) -> str:
    return "-" if value is None else str(value)


def layout_summary(values: DictConfig) -> tuple[str, str]:
    """('N x D = W', 'tp=.. pp=.. ...') of a parallel preset, read as written (not composed)."""
    raw = OmegaConf.to_container(values, resolve=False)
    assert isinstance(raw, dict)
    nodes, per_node = raw.get("nnodes"), raw.get("devices_per_node")
    world = f" = {nodes * per_node}" if isinstance(nodes, int) and isinstance(per_node, int) else ""
    size = f"{_scalar(nodes)} x {_scalar(per_node)}{world}"
    shown = {k: v for k, v in raw.items() if k not in ("nnodes", "devices_per_node") and not isinstance(v, dict | list)}
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
                size, rest = layout_summary(option.values())
                text = f"{size:<12} {rest}"
            else:
                text = option.description()
            lines.append(f"  {option.name:<{width}}{text}{_origin(option)}".rstrip())
        lines.append("")
    lines += _grid(groups)
    return "\n".join(lines).rstrip() + "\n"


def default_text(group: str, defaults: dict[str, str]) -> str:
    if group == "device":
        return f"detected, {detect_device()} here (npu when torch_npu is installed)"
    if group == "verl_schema":
        return "the installed verl's"
    chosen = defaults.get(group)
    return chosen.replace("${", "<").replace("}", ">") if chosen else "none"


def _grid(groups: dict[str, dict[str, Option]]) -> list[str]:
    """model x device: the layout and tuning `model=M device=D` picks by default (`M_D`)."""
    layouts, tunings = groups.get("parallel", {}), groups.get("tuning", {})
    rows = []
    for model in groups.get("model", {}):
        for device in groups.get("device", {}):
            name = f"{model}_{device}"
            if name in layouts:
                size, rest = layout_summary(layouts[name].values())
                rows.append((model, device, name, size, rest, name if name in tunings else "-"))
            else:
                missing = f"no preset: add parallel/{name}.yaml or pass parallel=NAME"
                rows.append((model, device, "-", "-", missing, "-"))
    head = ("model", "device", "parallel", "nodes x devices", "layout", "tuning")
    grid = tabulate(rows, headers=head, tablefmt="plain", disable_numparse=True)
    out = ["model x device (what model=M device=D picks: parallel=M_D, tuning=M_D when it exists)"]
    return out + ["  " + line for line in grid.splitlines()]
