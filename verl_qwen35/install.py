"""The two installs a user picks from, and the refusal that names the missing one.

Config-only: hydra-core, omegaconf and verl's wheel without its dependencies (the config path
reads verl's YAML and its version, never imports it). Launch: verl's runtime, the `launch`
extra. `dry_run=full` and a launch import verl; in a config-only install they stop here, with
the command that completes it, before any import fails deep inside verl.
"""

import json
from importlib.metadata import PackageNotFoundError, distribution, requires

from packaging.requirements import Requirement

from verl_qwen35.checks.problem import Problem, error
from verl_qwen35.errors import UserError

SUPPORTED_VERL = ">=0.8,<0.10"
# The verl the config-only install names: the newest release CI runs against.
CONFIG_ONLY_VERL = "pip install --no-deps 'verl==0.9.1'"
PACKAGE = "verl-qwen35"


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


class VerlNotInstalled(UserError, ModuleNotFoundError):
    """No verl at all: an install step the user missed, answered with one message and exit 2."""


def verl_missing_message() -> str:
    """What to say when verl is not installed at all."""
    return (
        f"verl is not installed. For composing and checking configs: {CONFIG_ONLY_VERL}; "
        f"to launch too: {launch_install_command()} (verl{SUPPORTED_VERL} is supported)"
    )


def missing_verl_runtime() -> list[str]:
    """verl's own unconditional requirements that are not installed (all of them after `--no-deps`)."""
    missing = []
    for line in requires("verl") or []:
        requirement = Requirement(line)
        if requirement.marker is not None and not requirement.marker.evaluate({"extra": ""}):
            continue  # an extra's requirement
        try:
            distribution(requirement.name)
        except PackageNotFoundError:
            missing.append(requirement.name)
    return missing


def runtime_problems(mode: str) -> list[Problem]:
    """A refusal when `mode` ("full" or "launch") needs verl's runtime and this is a config-only install."""
    missing = missing_verl_runtime()
    if not missing:
        return []
    what = "dry_run=full runs verl's own validate_config" if mode == "full" else "a launch runs verl"
    return [
        error(
            "dry_run",
            f"{what}, whose runtime is not installed here (a config-only install; missing: {', '.join(missing)}). "
            f"Install it with: {launch_install_command()}; or use dry_run=true, which needs none of it",
        )
    ]
