"""The software stack on this host against the version matrix (`verl_qwen35/data/matrix/<device>.yaml`).

Nothing is imported to find a version: `importlib.metadata` gives it, `importlib.util.find_spec`
says whether the module is importable (only the top-level package of a dotted name is imported,
and `megatron` is a namespace package), and files are read as text (torch's `version.py` for its
CUDA build, transformers' model directory, CANN's install info). Used by `verl-qwen35
doctor` and, as launch-time errors, by `run.machine.launch_problems`.
"""

import importlib.util
import os
import platform
import re
import shutil
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, requires, version
from pathlib import Path
from typing import Any

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from verl_qwen35.config.yaml_files import load_yaml
from verl_qwen35.data import MATRIX_DIR
from verl_qwen35.disk import read_bytes
from verl_qwen35.errors import UserError
from verl_qwen35.verl_release import NEWEST, release_of, shown, standing

CANN_HOMES = ("ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME")
CANN_DEFAULT = Path("/usr/local/Ascend/ascend-toolkit/latest")
INFO_MAX_BYTES = 64 * 1024  # ascend_toolkit_install.info: a few lines


@dataclass(frozen=True)
class Verdict:
    """One component: what is installed, what is required, and whether that is fine."""

    name: str
    installed: str  # a version, a path, or "missing"
    required: str
    ok: bool
    note: str = ""
    source: str = ""


class MatrixError(ValueError):
    """A version matrix file that cannot be read or lacks what a component needs; names the file."""


def load_matrix(path: Path) -> list[dict[str, Any]]:
    try:
        data = load_yaml(path)  # size and alias limits (an alias bomb in --matrix would hang OmegaConf)
    except UserError as err:
        raise MatrixError(f"{err} (not a readable YAML version matrix)") from None
    components = data.get("components") if isinstance(data, dict) else None
    if not isinstance(components, list) or not all(isinstance(c, dict) for c in components):
        raise MatrixError(
            f"{path}: a version matrix is a mapping with `components:`, a list of mappings "
            f"(see {MATRIX_DIR / 'gpu.yaml'})"
        )
    return components


def dist_version(dist: str) -> str | None:
    try:
        return version(dist)
    except PackageNotFoundError:
        return None


def importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a parent package missing or broken
        return False


def satisfies(found: str, spec: str) -> bool:
    """PEP 440 check; pre-releases and local builds (2.13.0+cpu, 9.0.RC1) count as their release."""
    if not spec:
        return True
    try:
        release = ".".join(map(str, Version(found).release))
        return SpecifierSet(spec).contains(release, prereleases=True)
    except (InvalidVersion, InvalidSpecifier):
        return False


def _module_dir(module: str) -> Path | None:
    spec = importlib.util.find_spec(module) if importable(module) else None
    return Path(spec.origin).parent if spec and spec.origin else None


def torch_cuda(module: str = "torch") -> str | None:
    """The CUDA version torch was built for, read from torch/version.py (None: a CPU or other build)."""
    where = _module_dir(module)
    version_py = where / "version.py" if where else None  # an installed package's own file, read as text
    text = version_py.read_text() if version_py and version_py.is_file() else ""
    found = re.search(r"^cuda\b[^=\n]*=\s*['\"]([^'\"]+)['\"]", text, re.MULTILINE)
    return found.group(1) if found else None


def knows_model(module: str, model_type: str) -> bool:
    where = _module_dir(module)
    return bool(where and (where / "models" / model_type).is_dir())


def cann_version() -> tuple[str | None, str]:
    """(version, where) from CANN's ascend_toolkit_install.info (`version=9.0.0`)."""
    homes = [Path(os.environ[k]) for k in CANN_HOMES if os.environ.get(k)] + [CANN_DEFAULT]
    for home in homes:
        # <home>/ascend_toolkit_install.info or <home>/<arch>-linux/ascend_toolkit_install.info
        for info in [*home.glob("ascend_toolkit_install.info"), *sorted(home.glob("*/ascend_toolkit_install.info"))]:
            try:  # under a directory the environment names: read only when a plain file, and only its head
                text = read_bytes(info, INFO_MAX_BYTES).decode("utf-8", "replace")
            except (OSError, UserError):
                continue
            found = re.search(r"^version=(\S+)", text, re.MULTILINE)
            if found:
                return found.group(1), str(info)
    return None, " or ".join(f"${k}" for k in CANN_HOMES) + f" or {CANN_DEFAULT}"


def declared_by_verl(dist: str) -> str | None:
    """What the installed verl declares for `dist` outside its extras (`transformers>=5.5.3,!=5.6.0,<5.11` for
    verl 0.9.1; "" for a bare name), or None when verl is not installed or does not name it."""
    from packaging.requirements import InvalidRequirement, Requirement  # only doctor and the launch check

    try:
        lines = requires("verl") or []
    except PackageNotFoundError:
        return None
    for line in lines:
        try:
            found = Requirement(line)
        except InvalidRequirement:
            continue
        unconditional = found.marker is None or found.marker.evaluate({"extra": ""})
        if unconditional and found.name.lower() == dist.lower():
            return str(found.specifier)
    return None


def requirement(c: dict[str, Any]) -> tuple[str, str]:
    """(specifier, where it comes from): the installed verl's declaration for `declared_by: verl`, else `require`."""
    if c.get("declared_by") == "verl":
        declared = declared_by_verl(c["dist"])
        if declared is not None:
            return declared, f"verl {dist_version('verl')} declares {c['dist']}{declared or ' (any version)'}"
    return c.get("require", ""), ""


def install_hint(c: dict[str, Any], spec: str) -> str:
    return c.get("install") or f"pip install '{c['dist']}{spec}'"


def _package(c: dict[str, Any]) -> Verdict:
    found = dist_version(c["dist"])
    spec, declared = requirement(c)
    required = spec or "any"
    if found is None or not importable(c["module"]):
        why = f"pip distribution {c['dist']} not installed" if found is None else f"{c['module']} not importable"
        return Verdict(c["name"], "missing", required, False, f"{why}; install: {install_hint(c, spec)}", c["source"])
    ok = satisfies(found, spec)
    note = "" if ok else f"needs {c['dist']}{spec}{f' ({declared})' if declared else ''}: {install_hint(c, spec)}"
    if ok and c.get("recommend") and not satisfies(found, c["recommend"]):
        note = f"recommended: {c['dist']}{c['recommend']}"
    return Verdict(c["name"], found, required, ok, note, c["source"])


def _verl(c: dict[str, Any], verdict: Verdict) -> Verdict:
    """verl: a release newer than the newest known is fine, judged by its own config files (the note says so)."""
    try:
        judged = standing(verdict.installed)
    except UserError as err:
        return Verdict(c["name"], verdict.installed, verdict.required, False, f"{err}", c["source"])
    if not judged.newer:
        return verdict
    note = f"newer than {shown(NEWEST)}: judged by its own config files, the rules of {shown(NEWEST)} not verified"
    return Verdict(c["name"], verdict.installed, verdict.required, True, note, c["source"])


def _pairs(c: dict[str, Any], verdict: Verdict) -> Verdict:
    """A package that patches another of its own major.minor (MindSpeed core_r0.18.0 and megatron-core 0.18)."""
    other = dist_version(c["pairs_with"])
    if other is None or release_of(other)[:2] == release_of(verdict.installed)[:2]:
        return verdict
    theirs = ".".join(map(str, release_of(other)[:2]))
    mine = ".".join(map(str, release_of(verdict.installed)[:2]))
    note = (
        f"{c['dist']} {verdict.installed} patches {c['pairs_with']} {mine}"
        f", but {c['pairs_with']} {other} is installed: install {c['dist']} core_r{theirs}.0 (or {c['pairs_with']} "
        f"of {c['dist']}'s number)"
    )
    return Verdict(
        c["name"], verdict.installed, f"{verdict.required}, {c['pairs_with']} {theirs}.x", False, note, c["source"]
    )


def check(c: dict[str, Any]) -> Verdict:
    kind = c["kind"]
    if kind == "python":
        found = platform.python_version()
        ok = satisfies(found, c["require"])
        return Verdict(c["name"], found, c["require"], ok, "" if ok else f"needs Python{c['require']}", c["source"])
    if kind == "tool":
        path = shutil.which(c["command"])
        return Verdict(c["name"], path or "missing", "on PATH", bool(path), "" if path else "not on PATH", c["source"])
    if kind == "cann":
        found, where = cann_version()
        if found is None:
            return Verdict(c["name"], "missing", c["require"], False, f"no ascend_toolkit_install.info in {where}")
        ok = satisfies(found, c["require"])
        return Verdict(c["name"], found, c["require"], ok, where, c["source"])
    verdict = _package(c)
    if not verdict.ok:
        return verdict
    if kind == "verl":
        return _verl(c, verdict)
    if kind == "pairs":
        return _pairs(c, verdict)
    if kind == "torch":
        cuda = torch_cuda(c["module"])
        if cuda is None:
            note = f"a build without CUDA; install: {c.get('install') or 'a CUDA build of torch'}"
            return Verdict(c["name"], verdict.installed, f"{verdict.required}, CUDA", False, note)
        return Verdict(c["name"], f"{verdict.installed} (CUDA {cuda})", verdict.required, True, verdict.note)
    if kind == "torch_npu":
        torch = dist_version("torch") or "missing"
        same = torch != "missing" and Version(torch).release[:2] == Version(verdict.installed).release[:2]
        note = "" if same else f"torch is {torch}; torch_npu must match its major.minor"
        return Verdict(c["name"], verdict.installed, verdict.required, same, note, c["source"])
    if kind == "transformers" and not knows_model(c["module"], c["model_type"]):
        return Verdict(c["name"], verdict.installed, verdict.required, False, f"has no {c['model_type']} model")
    return verdict


@dataclass(frozen=True)
class Stack:
    """A stack verl pins (matrix `stacks:`): shown beside what is installed, never enforced."""

    name: str
    pins: dict[str, str]
    source: str


def known_stacks(path: Path) -> list[Stack]:
    """The matrix's `stacks:` (none when absent), each a mapping with name, source and pins."""
    data = load_yaml(path)
    stacks = data.get("stacks") or [] if isinstance(data, dict) else []
    ok = isinstance(stacks, list) and all(
        isinstance(s, dict) and isinstance(s.get("name"), str) and isinstance(s.get("pins"), dict) for s in stacks
    )
    if not ok:
        raise MatrixError(
            f"{path}: `stacks:` is a list of mappings with name, source and pins (see {MATRIX_DIR / 'gpu.yaml'})"
        )
    return [Stack(s["name"], {str(k): str(v) for k, v in s["pins"].items()}, str(s.get("source", ""))) for s in stacks]


def installed_version(name: str) -> str:
    """What is installed of a stack's component: a pip distribution's version, or CANN's."""
    if name == "python":
        return platform.python_version()
    found = cann_version()[0] if name == "cann" else torch_cuda() if name == "cuda" else dist_version(name)
    return found or "-"


def applies(c: dict[str, Any], verl: str | None) -> bool:
    """Whether a component is needed here: `when_verl` on the installed verl, `when` on each named package
    (a package not installed meets no condition: the component then does not apply)."""
    if c.get("when_verl") and not (verl is not None and satisfies(verl, c["when_verl"])):
        return False
    for dist, spec in (c.get("when") or {}).items():
        found = dist_version(dist)
        if found is None or not satisfies(found, spec):
            return False
    return True


def stack_verdicts(device_or_matrix: str | Path) -> list[Verdict]:
    """Every component of a matrix (a device's shipped one, or a file) that applies to the installed verl."""
    path = device_or_matrix if isinstance(device_or_matrix, Path) else MATRIX_DIR / f"{device_or_matrix}.yaml"
    verl = dist_version("verl")
    verdicts = []
    for i, c in enumerate(load_matrix(path)):
        try:
            if applies(c, verl):
                verdicts.append(check(c))
        except (KeyError, TypeError, ValueError, AttributeError) as err:  # a key missing, a bad specifier
            what = f"missing key {err}" if isinstance(err, KeyError) else f"{type(err).__name__}: {err}"
            raise MatrixError(
                f"{path}: component {i} ({c.get('name', 'no name')}): {what}; each needs name, kind, source "
                f"and the keys of its kind (see {MATRIX_DIR / 'gpu.yaml'})"
            ) from None
    return verdicts
