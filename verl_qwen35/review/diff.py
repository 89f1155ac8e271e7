"""What a config change really changes, key by key, for review (`verl-qwen35 diff A B`).

A and B are each an override set ("device=gpu model=122b") or a YAML file (a run's
.hydra/config.yaml, a golden file). Exit 0 when equal, 1 when different, 2 on error.
"""

import fnmatch
import json
import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from verl_qwen35.checks.parity import parity_errors
from verl_qwen35.config import compose
from verl_qwen35.config.schema import ACTOR, REF
from verl_qwen35.config.yaml_files import load_mapping
from verl_qwen35.errors import UserError
from verl_qwen35.records.launch import HEADER, LAUNCH_FILE
from verl_qwen35.review.flat import flatten

_ENV_READ = re.compile(r"\$\{(\s*(?:oc\.env|env)\s*:)")


@dataclass
class Diff:
    changed: dict[str, tuple[Any, Any]] = field(default_factory=dict)
    added: dict[str, Any] = field(default_factory=dict)
    removed: dict[str, Any] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.changed or self.added or self.removed)

    def sections(self) -> list[str]:
        keys = [*self.changed, *self.added, *self.removed]
        return sorted({k.split(".", 1)[0] for k in keys})


@dataclass(frozen=True)
class Side:
    """One side of a diff: `config` as compared against a resolved side, `written` as compared against a record
    read as written (every `${` text), and whether this side is such a record (a file holding `${...}`)."""

    config: DictConfig
    written: DictConfig
    interpolated: bool = False


def load(spec: str) -> Side:
    """An existing .yaml path is read as data (with limits, without any `hydra` node, nothing in it resolved: a
    `${...}` is compared as its text); a launch record (launch.yaml) as the config it records; a run directory as
    its launch.yaml, else its .hydra/config.yaml; anything else is an override set, composed."""
    path = Path(spec)
    if path.is_dir():
        path = next((p for p in (path / LAUNCH_FILE, path / ".hydra" / "config.yaml") if p.is_file()), path)
        if path.is_dir():
            raise UserError(f"{spec}: a directory without {LAUNCH_FILE} or .hydra/config.yaml (not a run directory)")
    if spec.endswith((".yaml", ".yml")) or path.is_file():
        data = load_mapping(path)
        if is_launch_record(data):  # resolved values, each `${` written as text: compared as they are
            cfg = OmegaConf.create(interpolations_as_text(recorded_config(data, path.resolve().parent)))
            return Side(cfg, cfg)
        data.pop("hydra", None)
        cfg = OmegaConf.create(interpolations_as_text(data))  # .hydra/config.yaml is unresolved: compared as written
        return Side(cfg, cfg, interpolated=holds_interpolation(data))
    cfg = compose(shlex.split(spec))  # the user's own overrides: resolved, but for the environment's values
    written = interpolations_as_text(OmegaConf.to_container(cfg, resolve=False))
    return Side(shown_unresolved_env(cfg), OmegaConf.create(written))


def compare_sides(a: Side, b: Side, ignore: Sequence[str] = ()) -> tuple[Diff, DictConfig, DictConfig]:
    """The diff, and the two configs compared: as written when either side is a record holding `${...}` (a
    composition against its own .hydra/config.yaml compares equal), resolved otherwise."""
    written = a.interpolated or b.interpolated
    first, second = (a.written, b.written) if written else (a.config, b.config)
    return compare(first, second, ignore), first, second


def is_launch_record(data: dict[str, Any]) -> bool:
    """launch.yaml's shape (records/launch.py): our metadata node and the config under `config`."""
    return set(data) == {HEADER, "config"} and isinstance(data[HEADER], dict) and isinstance(data["config"], dict)


_START = re.compile(r"(\\*)\$\{")


def recorded_config(data: dict[str, Any], run_dir: Path) -> dict[str, Any]:
    """The config a launch record holds, with paths under the record's own run directory read `<run dir>/...`,
    so two runs of the same overrides compare equal."""
    root = str(run_dir)

    def plain(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: plain(v) for k, v in value.items()}
        if isinstance(value, list):
            return [plain(v) for v in value]
        if isinstance(value, str) and (value == root or value.startswith(root + "/")):
            return RUN_DIR + value[len(root) :]
        return value

    return plain(data["config"])


def _each_string(value: Any, change: Any) -> Any:
    if isinstance(value, dict):
        return {k: _each_string(v, change) for k, v in value.items()}
    if isinstance(value, list):
        return [_each_string(v, change) for v in value]
    return change(value) if isinstance(value, str) else value


def _escape(value: str) -> str:
    # An even run of backslashes before `${` escapes only itself: the interpolation would resolve.
    return _START.sub(lambda m: m.group(0) if len(m.group(1)) % 2 else m.group(1) + "\\${", value)


def interpolations_as_text(data: Any) -> Any:
    """`data` with every `${` that OmegaConf would resolve escaped: read back, each interpolation is its text
    (nothing of the reader's environment, no resolver run, no expansion of one reference into many)."""
    return _each_string(data, _escape)


def holds_interpolation(data: Any) -> bool:
    """Whether a value of `data` holds a `${` that OmegaConf would resolve."""
    found: list[bool] = []
    _each_string(data, lambda value: found.append(_escape(value) != value))
    return any(found)


RUN_DIR = "<run dir>"


def shown_unresolved_env(cfg: DictConfig) -> DictConfig:
    """The config with every `${oc.env:...}` kept as text: a diff shows where a value comes from and
    never prints what a variable (a token, a home directory) holds on the reviewer's machine."""

    def escape(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: escape(v) for k, v in value.items()}
        if isinstance(value, list):
            return [escape(v) for v in value]
        return _ENV_READ.sub(r"\\${\1", value) if isinstance(value, str) else value

    return OmegaConf.create(escape(OmegaConf.to_container(cfg, resolve=False)))


def compare(a: DictConfig, b: DictConfig, ignore: Sequence[str] = ()) -> Diff:
    flat_a, flat_b = flatten(a), flatten(b)

    def kept(key: str) -> bool:
        return not any(fnmatch.fnmatchcase(key, pattern) for pattern in ignore)

    diff = Diff()
    for key in sorted(flat_a.keys() | flat_b.keys()):
        if not kept(key):
            continue
        if key not in flat_b:
            diff.removed[key] = flat_a[key]
        elif key not in flat_a:
            diff.added[key] = flat_b[key]
        elif flat_a[key] != flat_b[key]:
            diff.changed[key] = (flat_a[key], flat_b[key])
    return diff


def mismatches(cfg: DictConfig) -> list[str]:
    """Actor/ref Megatron patch disagreements (on a plain verl config too, when it has both sides); a key whose
    value is an interpolation's text (a record read as written) is not judged: what it resolves to is unknown."""
    if OmegaConf.select(cfg, ACTOR) is None or OmegaConf.select(cfg, REF) is None:
        return []
    return [
        p.message
        for p in parity_errors(cfg)
        if not any("${" in json.dumps(OmegaConf.select(cfg, key, default=None), default=str) for key in p.keys)
    ]


def _show(value: Any) -> str:
    return json.dumps(value, default=str)


def as_text(diff: Diff, names: tuple[str, str], notes: dict[str, list[str]]) -> str:
    lines = [f"A: {names[0]}", f"B: {names[1]}"]
    for side, found in notes.items():
        lines += [f"!! actor/ref Megatron mismatch in {side}: {m}" for m in found]
    for section in diff.sections():
        lines.append(f"[{section}]")
        lines += [
            f"  ~ {k}: {_show(a)} -> {_show(b)}" for k, (a, b) in diff.changed.items() if k.split(".")[0] == section
        ]
        lines += [f"  + {k}: {_show(v)}" for k, v in diff.added.items() if k.split(".")[0] == section]
        lines += [f"  - {k}: {_show(v)}" for k, v in diff.removed.items() if k.split(".")[0] == section]
    lines.append(f"{len(diff.changed)} changed, {len(diff.added)} added, {len(diff.removed)} removed")
    return "\n".join(lines)


def _cell(value: Any) -> str:
    return f"`{_show(value)}`".replace("|", "\\|")


def as_markdown(diff: Diff, names: tuple[str, str], notes: dict[str, list[str]]) -> str:
    lines = [
        f"**A** `{names[0]}` vs **B** `{names[1]}`: {len(diff.changed)} changed, "
        f"{len(diff.added)} added, {len(diff.removed)} removed",
        "",
    ]
    lines += [f"> :warning: actor/ref Megatron mismatch in {side}: {m}" for side, found in notes.items() for m in found]
    lines += ["| section | key | A | B |", "|---|---|---|---|"]
    rows = [(k, _cell(a), _cell(b)) for k, (a, b) in diff.changed.items()]
    rows += [(k, "*(absent)*", _cell(v)) for k, v in diff.added.items()]
    rows += [(k, _cell(v), "*(absent)*") for k, v in diff.removed.items()]
    for key, a, b in sorted(rows):
        lines.append(f"| {key.split('.', 1)[0]} | `{key}` | {a} | {b} |")
    return "\n".join(lines)


def as_json(diff: Diff, names: tuple[str, str], notes: dict[str, list[str]]) -> str:
    return json.dumps(
        {
            "a": names[0],
            "b": names[1],
            "changed": {k: {"a": a, "b": b} for k, (a, b) in diff.changed.items()},
            "added": diff.added,
            "removed": diff.removed,
            "actor_ref_mismatch": notes,
        },
        indent=2,
        default=str,
    )


FORMATS = {"text": as_text, "markdown": as_markdown, "json": as_json}
