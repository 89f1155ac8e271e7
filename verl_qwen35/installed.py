"""What is installed here, read from package metadata and `find_spec` without importing anything.

Importing verl imports torch and Ray (seconds, hundreds of MiB); composing and checking a config
needs only verl's YAML files and its version, so both are found without an import.
"""

import importlib.util
import json
from functools import cache
from importlib.metadata import PackageNotFoundError, distribution, metadata, requires, version
from pathlib import Path

from packaging.version import InvalidVersion, Version

from verl_qwen35.data.matrices import DEVICES, assumed
from verl_qwen35.errors import UserError
from verl_qwen35.verl_release import NEWEST, VerlStanding, release_of, standing

__version__ = "0.1.0"  # the package version (pyproject.toml reads it from here)
PACKAGE = "verl-qwen35"
# verl releases this release knows, and how a newer one is judged: verl_qwen35/verl_release.py.
SUPPORTED_VERL = ">=0.8"
# The verl the config-only install names: the newest release CI runs against.
CONFIG_ONLY_VERL = "pip install --no-deps 'verl==0.9.1'"
_HERE = Path(__file__).resolve().parent
# What the rules assume for a package not installed here: the matrices' `assumed:` (data/matrix/<device>.yaml,
# the one version truth doctor reads too). megatron-core: the Ascend images' (0.16, the same in both matrices);
# vLLM by device: on GPU the one verl 0.9.1's `vllm` extra pins, on NPU the Ascend images' 0.18.0.
ASSUMED_MCORE: tuple[int, int] = assumed("npu", "megatron-core")[:2]  # type: ignore[assignment]
ASSUMED_VLLM = {device: assumed(device, "vllm") for device in DEVICES}


class VerlNotInstalled(UserError, ModuleNotFoundError):
    """No verl at all: an install step the user missed, answered with one message and exit 2."""


def launch_install_command() -> str:
    """`pip install` of this very copy with the `launch` extra (editable checkout, local path or index)."""
    try:
        direct_url = distribution(PACKAGE).read_text("direct_url.json")
    except PackageNotFoundError:
        direct_url = None
    if direct_url:
        found = json.loads(direct_url)
        url = found.get("url", "")
        if url.startswith("file://"):  # a checkout (editable or not) or a wheel file
            editable = "-e " if found.get("dir_info", {}).get("editable") else ""
            return f"pip install {editable}'{url.removeprefix('file://')}[launch]'"
    return f"pip install '{PACKAGE}[launch]'"


def verl_missing_message() -> str:
    return (
        f"verl is not installed. For composing and checking configs: {CONFIG_ONLY_VERL}; "
        f"to launch too: {launch_install_command()} (verl{SUPPORTED_VERL} is supported)"
    )


def missing_verl_runtime() -> list[str]:
    """verl's own unconditional requirements that are not installed (all of them after `--no-deps`), and the
    packages our `launch` extra adds for verl's start-up (cachetools, fastapi, ...: verl imports them undeclared)."""
    from packaging.requirements import Requirement  # ~30 ms: only a launch's stack check reads requirements

    missing = []
    for line in requires("verl") or []:
        requirement = Requirement(line)
        if requirement.marker is not None and not requirement.marker.evaluate({"extra": ""}):
            continue  # an extra's requirement
        if not _installed(requirement.name):
            missing.append(requirement.name)
    return missing + [name for name in extra_packages("launch") if name != "verl" and not _installed(name)]


def _installed(name: str) -> bool:
    try:
        distribution(name)
    except PackageNotFoundError:
        return False
    return True


def extra_packages(extra: str) -> list[str]:
    """The packages an extra of this project brings (pyproject.toml, as installed; none from a bare checkout)."""
    from packaging.requirements import Requirement

    try:
        lines = requires(PACKAGE) or []
    except PackageNotFoundError:
        return []
    found = [Requirement(line) for line in lines]
    return [r.name for r in found if r.marker is not None and r.marker.evaluate({"extra": extra})]


def project_extras() -> list[str]:
    """The extras of this project (pyproject.toml's optional-dependencies, as installed; none from a bare checkout)."""
    try:
        return metadata(PACKAGE).get_all("Provides-Extra") or []
    except PackageNotFoundError:
        return []


def missing_module_message(module: str, what: str) -> str:
    """One message for a module `what` imports that is not installed: the package and the extra that brings it."""
    top = module.split(".")[0]
    # launch first, then the smallest extra that brings it (`kuberay` for kubernetes, not `test`).
    extras = sorted(project_extras(), key=lambda extra: (extra != "launch", len(extra_packages(extra))))
    brought = next((extra for extra in extras if top in extra_packages(extra)), "launch")
    command = launch_install_command().replace("[launch]", f"[{brought}]")
    return (
        f"{what} imports the package `{top}`, which is not installed here; the `{brought}` extra brings it: "
        f"{command} (or pip install {top})"
    )


@cache
def installed_verl_version() -> str:
    try:
        return version("verl")
    except PackageNotFoundError as err:
        raise VerlNotInstalled(verl_missing_message()) from err


def installed_verl_schema() -> str:
    """The `verl_schema` option matching the installed verl, or a clear refusal."""
    return installed_verl().schema


@cache
def installed_verl() -> VerlStanding:
    """The installed verl as this release judges it (a newer one by its own config files)."""
    found = installed_verl_version()
    if release_of(found)[:2] <= NEWEST:
        return standing(found)
    try:
        config = verl_config_dir()
    except FileNotFoundError:  # a verl without its config files: the standing says they could not be read
        config = None
    return standing(found, config)


def schema_for(found: str) -> str:
    """The `verl_schema` option for a known verl version (a newer one is judged by its files: `installed_verl`)."""
    return standing(found).schema


@cache
def installed_mcore() -> tuple[int, int] | None:
    """(major, minor) of the installed megatron-core, or None."""
    try:
        release = Version(version("megatron-core")).release
    except (PackageNotFoundError, InvalidVersion):
        return None
    return (release[0], release[1]) if len(release) >= 2 else None


def conf_dir() -> Path:
    """Our conf/: inside the package in a wheel, beside it in a source checkout."""
    for candidate in (_HERE / "conf", _HERE.parent / "conf"):
        if (candidate / "config.yaml").is_file():
            return candidate
    raise FileNotFoundError(f"verl_qwen35: no conf/config.yaml in {_HERE} or {_HERE.parent}")


def verl_config_dir() -> Path:
    """verl's trainer/config directory; find_spec on the top-level name imports nothing."""
    spec = importlib.util.find_spec("verl")
    if spec is None or not spec.submodule_search_locations:
        raise VerlNotInstalled(verl_missing_message())
    path = Path(next(iter(spec.submodule_search_locations))) / "trainer" / "config"
    if not (path / "ppo_trainer.yaml").is_file():
        raise FileNotFoundError(f"verl is installed but {path}/ppo_trainer.yaml is missing")
    return path


def detect_device() -> str:
    """npu on a host with torch_npu installed, else gpu (find_spec imports nothing)."""
    return "npu" if importlib.util.find_spec("torch_npu") is not None else "gpu"


@cache
def installed_vllm() -> tuple[int, ...] | None:
    """The installed vLLM's release (0, 24, 0), or None; read from package metadata, not imported."""
    try:
        return Version(version("vllm")).release
    except (PackageNotFoundError, InvalidVersion):
        return None
