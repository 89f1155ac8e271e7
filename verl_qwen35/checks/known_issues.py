"""Known upstream bugs that bite this workload, checked: a table of issue threads as data, each entry naming the
packages and versions it affects and the settings that trigger it.

The shipped table is verl_qwen35/data/known_issues.yaml (its header documents the shape); a team adds entries
in `known_issues.yaml` at the top of a `--config-dir`, read with the same limits as every file
(config/yaml_files.load_yaml) and refused whole, naming the file and the key, when its shape is wrong. The dry
run judges the planned stack and the resolved config (`issue_problems`); `doctor` the installed packages
(`installed_issues`). A version the dry run does not know (a package not installed here, or only assumed) makes
the finding conditional on it: said as a warning that names the version it would apply to.
"""

import functools
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, requires, version
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from verl_qwen35.checks.megatron_keys import mcore_in_use, planned_mcore
from verl_qwen35.checks.problem import Problem
from verl_qwen35.checks.vllm import vllm_in_use
from verl_qwen35.config.yaml_files import load_yaml
from verl_qwen35.data import DATA_DIR
from verl_qwen35.errors import UserError
from verl_qwen35.installed import installed_verl_version
from verl_qwen35.model.layout import device_of

SHIPPED = DATA_DIR / "known_issues.yaml"
FILE_NAME = "known_issues.yaml"  # at the top of a --config-dir
LEVELS = ("warn", "error")
REQUIRED = ("id", "link", "title", "level", "affects", "when", "thread", "workaround")
OPTIONAL = ("fixed_in",)
OPERATORS = ("not", "in", "not_in", "gt", "ge", "lt", "le", "contains")
DEVICES = ("gpu", "npu")
ENV_PREFIX = "ENV."
MAX_ENTRIES = 1000
MAX_TEXT = 2000  # characters of one field: a message, not a document


@dataclass(frozen=True)
class KnownIssue:
    """One upstream bug: where it is discussed, what it affects, what triggers it, what to do."""

    id: str
    link: str
    title: str
    level: str
    affects: Mapping[str, SpecifierSet]
    when: Mapping[str, Any]
    thread: str
    workaround: str
    fixed_in: str | None
    source: Path

    @property
    def device(self) -> str | None:
        return self.when.get("device")


@dataclass(frozen=True)
class PlannedVersion:
    """A package's version as the dry run knows it: `known` when installed here (or given as the plan's)."""

    version: str | None
    how: str
    known: bool


def _bad(path: Path, where: str, why: str) -> UserError:
    return UserError(f"{path}: {where}: {why}; fix the entry (the shape is in {SHIPPED}) or remove the file")


def _condition(path: Path, where: str, value: Any) -> Any:
    """A condition as written, refused unless it is a value, a list of values or one known operator."""
    if isinstance(value, dict):
        if len(value) != 1 or next(iter(value)) not in OPERATORS:
            raise _bad(path, where, f"a condition mapping holds one operator of {', '.join(OPERATORS)}, not {value!r}")
        op, operand = next(iter(value.items()))
        if op in ("in", "not_in", "contains") and not isinstance(operand, list):
            raise _bad(path, f"{where}.{op}", f"takes a list, not {operand!r}")
        if op in ("gt", "ge", "lt", "le") and (isinstance(operand, bool) or not isinstance(operand, int | float)):
            raise _bad(path, f"{where}.{op}", f"takes a number, not {operand!r}")
        if op == "contains" and not all(isinstance(s, str) and s for s in operand):
            raise _bad(path, f"{where}.contains", "takes a list of non-empty strings")
        return value
    if isinstance(value, list) and any(isinstance(v, dict | list) for v in value):
        raise _bad(path, where, "a list condition holds plain values")
    return value


def _text(path: Path, where: str, value: Any, optional: bool = False) -> str | None:
    if value is None and optional:
        return None
    if not isinstance(value, str) or not value.strip() or len(value) > MAX_TEXT:
        raise _bad(path, where, f"must be non-empty text of at most {MAX_TEXT} characters")
    return value.strip()


def _entry(path: Path, index: int, raw: Any) -> KnownIssue:
    where = f"issues[{index}]"
    if not isinstance(raw, dict):
        raise _bad(path, where, f"an entry is a mapping of {', '.join(REQUIRED)}")
    if not isinstance(raw.get("id"), str) or not raw["id"].strip():
        raise _bad(path, f"{where}.id", "every entry needs an id (a short name such as verl-7978)")
    where = f"issues[{index}] (id {raw['id']})"
    if missing := [k for k in REQUIRED if k not in raw]:
        raise _bad(path, where, f"lacks {', '.join(missing)}")
    if unknown := sorted(set(raw) - set(REQUIRED) - set(OPTIONAL)):
        raise _bad(path, f"{where}.{unknown[0]}", f"not a field; the fields are {', '.join(REQUIRED + OPTIONAL)}")
    link = _text(path, f"{where}.link", raw["link"])
    if not link.startswith("https://"):
        raise _bad(path, f"{where}.link", f"the thread's address (https://...), not {link!r}")
    if raw["level"] not in LEVELS:
        raise _bad(path, f"{where}.level", f"one of {', '.join(LEVELS)}, not {raw['level']!r}")
    if not isinstance(raw["affects"], dict):
        raise _bad(path, f"{where}.affects", "a mapping {package: specifier} ({} for any version)")
    affects = {}
    for name, spec in raw["affects"].items():
        try:
            affects[str(name)] = SpecifierSet(str(spec))
        except InvalidSpecifier:
            raise _bad(path, f"{where}.affects.{name}", f"{spec!r} is not a version specifier (>=0.24,<0.26)") from None
    if not isinstance(raw["when"], dict) or not raw["when"]:
        raise _bad(path, f"{where}.when", "a non-empty mapping {key: condition}")
    when = {str(k): _condition(path, f"{where}.when.{k}", v) for k, v in raw["when"].items()}
    if "device" in when and when["device"] not in DEVICES:
        raise _bad(path, f"{where}.when.device", f"one of {', '.join(DEVICES)}, not {when['device']!r}")
    return KnownIssue(
        id=raw["id"].strip(),
        link=link,
        title=_text(path, f"{where}.title", raw["title"]),
        level=raw["level"],
        affects=affects,
        when=when,
        thread=_text(path, f"{where}.thread", raw["thread"]),
        workaround=_text(path, f"{where}.workaround", raw["workaround"]),
        fixed_in=_text(path, f"{where}.fixed_in", raw.get("fixed_in"), optional=True),
        source=path,
    )


def load_table(path: Path) -> list[KnownIssue]:
    """The entries of one file; a wrong shape is one refusal naming the file and the key."""
    content = load_yaml(path)
    if not isinstance(content, dict) or set(content) != {"issues"} or not isinstance(content["issues"], list):
        raise _bad(path, "issues", "the file is one mapping, `issues:` with a list of entries")
    if len(content["issues"]) > MAX_ENTRIES:
        raise _bad(path, "issues", f"more than {MAX_ENTRIES} entries")
    entries = [_entry(path, i, raw) for i, raw in enumerate(content["issues"])]
    ids = [e.id for e in entries]
    if twice := sorted({i for i in ids if ids.count(i) > 1}):
        raise _bad(path, f"issues (id {twice[0]})", "an id appears twice")
    return entries


@functools.cache
def shipped_table() -> tuple[KnownIssue, ...]:
    """The table this package ships (read once a process: it is part of the installed package, like the matrices);
    a team's files are read on every call."""
    return tuple(load_table(SHIPPED))


def known_issues(config_dirs: Sequence[Path] = ()) -> list[KnownIssue]:
    """The shipped table, then each --config-dir's `known_issues.yaml`; a team entry with a shipped id replaces it."""
    table = {e.id: e for e in shipped_table()}
    for root in config_dirs:
        path = Path(root) / FILE_NAME
        if os.path.lexists(path):  # a FIFO or a link is refused by the reader, never waited on or followed blindly
            table.update({e.id: e for e in load_table(path)})
    return list(table.values())


# --- versions -------------------------------------------------------------------------------------------


def installed(name: str) -> str | None:
    """A distribution's version from its metadata (nothing is imported)."""
    try:
        return version(name)
    except (PackageNotFoundError, ValueError):
        return None


# One exact pin of a Requires-Dist line: `sglang==0.5.12; extra == "sglang"` (packaging.requirements is not
# imported on the dry run's path: it is slow to import, and a pin needs no more than this).
_PIN = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*==\s*([0-9][^\s;,]*)\s*(?:;.*)?$")


def verl_pin(name: str) -> str | None:
    """The exact version the installed verl pins for `name` in one of its extras (`sglang==0.5.12; extra ==
    "sglang"`), or None."""
    try:
        lines = requires("verl") or []
    except PackageNotFoundError:
        return None
    wanted = re.sub(r"[-_.]+", "-", name).lower()
    for line in lines:
        match = _PIN.match(line[:500])
        if match and re.sub(r"[-_.]+", "-", match.group(1)).lower() == wanted:
            return match.group(2)
    return None


def planned_version(name: str, known: Mapping[str, PlannedVersion]) -> PlannedVersion:
    """What the dry run knows of a package: the rules' own (`known`: verl, megatron-core, vllm as the version
    line says them), else the installed one, else verl's pin, else nothing."""
    if name in known:
        return known[name]
    if found := installed(name):
        return PlannedVersion(found, "installed", True)
    if pinned := verl_pin(name):
        return PlannedVersion(pinned, f"pinned by verl {installed('verl')}'s extras; not installed here", False)
    return PlannedVersion(None, "not installed here", False)


def rules_versions(cfg: DictConfig) -> dict[str, PlannedVersion]:
    """The versions the dry run's rules follow (the `rules` line): verl, megatron-core (plan.megatron_core, else
    installed, else assumed) and vLLM (installed, else the device's assumed one); on NPU a vllm-ascend that is
    not installed is taken at the assumed vLLM's version (vllm-ascend's releases follow vLLM's numbering)."""
    device = device_of(cfg)
    planned, _ = planned_mcore(cfg)
    mcore, mcore_how = mcore_in_use(planned)
    vllm = vllm_in_use(device)
    vllm_version = ".".join(map(str, vllm.release))
    found = {
        "verl": PlannedVersion(installed_verl_version(), "installed", True),
        "megatron-core": PlannedVersion(
            f"{mcore[0]}.{mcore[1]}", mcore_how.split("(", 1)[-1].rstrip(")"), "assumed" not in mcore_how
        ),
        "vllm": PlannedVersion(
            vllm_version, "installed" if vllm.installed else "assumed: not installed", vllm.installed
        ),
    }
    if device == "npu" and installed("vllm-ascend") is None:
        found["vllm-ascend"] = PlannedVersion(vllm_version, "assumed as the rules' vLLM: not installed", False)
    return found


def config_problems(cfg: DictConfig, config_dirs: Sequence[Path], environ: Mapping[str, str]) -> list[Problem]:
    """The dry run's findings: the shipped table and the --config-dirs' entries against the config and the
    planned stack."""
    known = rules_versions(cfg)
    return issue_problems(cfg, known_issues(config_dirs), lambda name: planned_version(name, known), environ)


def _in(spec: SpecifierSet, found: str) -> bool:
    try:
        return spec.contains(Version(found), prereleases=True)
    except InvalidVersion:
        return False


# --- the config ------------------------------------------------------------------------------------------


def _env_value(cfg: DictConfig, name: str, environ: Mapping[str, str]) -> str | None:
    """The variable as the run gets it: cleared by env.unset, else the shell's value, else env.set's."""
    env = cfg.get("env")
    if not OmegaConf.is_dict(env):
        return environ.get(name)
    if name in (env.get("unset") or []):
        return ""
    if name in environ:
        return environ[name]
    value = (env.get("set") or {}).get(name)
    return None if value is None else str(value)


def _value(cfg: DictConfig, key: str, environ: Mapping[str, str]) -> Any:
    if key == "device":
        return device_of(cfg)
    if key.startswith(ENV_PREFIX):
        return _env_value(cfg, key.removeprefix(ENV_PREFIX), environ)
    value = OmegaConf.select(cfg, key, default=None)
    return OmegaConf.to_container(value, resolve=True) if OmegaConf.is_config(value) else value


def _same(a: Any, b: Any) -> bool:
    """Equal as written: numbers and booleans as such, anything else as text (an environment value is text)."""
    if isinstance(a, bool) or isinstance(b, bool) or a is None or b is None:
        return a is b or a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    return str(a) == str(b)


def holds(condition: Any, value: Any) -> bool:
    """Whether a config value meets a condition of the table (see data/known_issues.yaml's header)."""
    if isinstance(condition, list):
        return any(_same(c, value) for c in condition)
    if not isinstance(condition, dict):
        return _same(condition, value)
    op, operand = next(iter(condition.items()))
    if op == "not":
        return not _same(operand, value)
    if op in ("in", "not_in"):
        return any(_same(c, value) for c in operand) == (op == "in")
    if op == "contains":
        return isinstance(value, str) and any(s.lower() in value.lower() for s in operand)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return {"gt": value > operand, "ge": value >= operand, "lt": value < operand, "le": value <= operand}[op]


def triggered(issue: KnownIssue, cfg: DictConfig, environ: Mapping[str, str]) -> dict[str, Any] | None:
    """The config's values for the entry's trigger keys when every condition holds, else None."""
    values = {key: _value(cfg, key, environ) for key in issue.when}
    return values if all(holds(issue.when[k], values[k]) for k in issue.when) else None


def _shown_key(key: str) -> str:
    return f"env.set.{key.removeprefix(ENV_PREFIX)}" if key.startswith(ENV_PREFIX) else key


def _advice(issue: KnownIssue) -> str:
    fixed = f" Fixed in: {issue.fixed_in}." if issue.fixed_in else ""
    return f"Thread: {issue.thread}. Workaround: {issue.workaround}.{fixed} ({issue.link})"


def issue_problems(
    cfg: DictConfig,
    issues: Sequence[KnownIssue],
    version_of: Callable[[str], PlannedVersion],
    environ: Mapping[str, str],
) -> list[Problem]:
    """A finding for each entry whose trigger holds for the config and whose versions hold for the planned stack:
    an error only where the entry says the run cannot succeed and every affected version is known here."""
    found = []
    for issue in issues:
        values = triggered(issue, cfg, environ)
        if values is None:
            continue
        versions = {name: version_of(name) for name in issue.affects}
        if any(v.version is not None and not _in(issue.affects[n], v.version) for n, v in versions.items()):
            continue  # a version known (or assumed) outside the affected range
        unsure = {n: v for n, v in versions.items() if not v.known}
        level = "error" if issue.level == "error" and not unsure else "warning"
        said = ", ".join(f"{_shown_key(k)}={v!r}" for k, v in values.items() if k != "device")
        stack = "; ".join(
            f"{n} {v.version} ({v.how}) in {issue.affects[n]}" if v.version else f"{n} {issue.affects[n]} ({v.how})"
            for n, v in versions.items()
        )
        if unsure:
            cond = ", ".join(f"{n} {issue.affects[n]}" for n in unsure)
            stack = f"applies if the cluster runs {cond}: {stack}"
        refusal = " The run cannot succeed so; change the settings above." if level == "error" else ""
        keys = tuple(_shown_key(k) for k in issue.when if k != "device") or ("device",)
        message = (
            f"known issue {issue.id}: {issue.title} ({said} on {device_of(cfg)}"
            + (f"; {stack}" if stack else "")
            + f").{refusal} {_advice(issue)}"
        )
        found.append(Problem(level, keys, message))
    return found


def installed_issues(issues: Sequence[KnownIssue], device: str) -> list[tuple[KnownIssue, dict[str, str]]]:
    """For `doctor`: the entries for this device whose affected packages are all installed here in range (an
    entry with no version range is the config's matter, for the dry run), with the versions found."""
    found = []
    for issue in issues:
        if issue.device not in (None, device) or not issue.affects:
            continue
        versions = {name: installed(name) for name in issue.affects}
        if all(v is not None and _in(issue.affects[n], v) for n, v in versions.items()):
            found.append((issue, {n: v for n, v in versions.items() if v}))
    return found


def trigger_text(issue: KnownIssue) -> str:
    """The entry's trigger as a reader writes it: `actor_rollout_ref.rollout.name=vllm, ...`."""

    def said(cond: Any) -> str:
        if isinstance(cond, dict):
            op, operand = next(iter(cond.items()))
            return f" {op} {operand}"
        return f" in {cond}" if isinstance(cond, list) else f"={cond}"

    return ", ".join(f"{_shown_key(k)}{said(c)}" for k, c in issue.when.items())
