"""The version truth the rules, the planner and `doctor` share: the shipped matrices `matrix/<device>.yaml`.

Each matrix says what a launch needs (`components`, checked by `doctor` and at launch), which stacks verl
publishes (`stacks`, shown beside what is installed and named by `plan.stack`), and what a dry run's rules
assume for a package that is not installed here (`assumed`). Only the shipped files are read here (a user's
`doctor --matrix` file is run/stack.py's); they are still read with a size bound and the safe loader.
"""

from functools import cache
from typing import Any

import yaml

from verl_qwen35.data import MATRIX_DIR
from verl_qwen35.disk import read_bytes

DEVICES = ("gpu", "npu")
_MAX_BYTES = 256 * 1024
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@cache
def shipped(device: str) -> dict[str, Any]:
    """The shipped matrix of a device, as plain data."""
    data = yaml.load(read_bytes(MATRIX_DIR / f"{device}.yaml", _MAX_BYTES), Loader=_LOADER)
    if not isinstance(data, dict):
        raise ValueError(f"{MATRIX_DIR / device}.yaml: not a mapping")
    return data


def release(text: str) -> tuple[int, ...]:
    """`0.16`, `core_r0.16.0`, `core_v0.18.0`, `0.10.0.dev0` -> (0, 16), (0, 16, 0), (0, 18, 0), (0, 10, 0)."""
    digits = text.strip().removeprefix("core_r").removeprefix("core_v").removeprefix("v").split(".")
    found = []
    for part in digits:
        if not part.isdigit():
            break
        found.append(int(part))
    return tuple(found)


def assumed(device: str, package: str) -> tuple[int, ...]:
    """The release of `package` a dry run's rules assume on `device` when it is not installed here."""
    return release(str(shipped(device)["assumed"][package]["version"]))


def stacks(device: str) -> list[dict[str, Any]]:
    return list(shipped(device).get("stacks") or [])


def stack_ids() -> dict[str, tuple[str, dict[str, Any]]]:
    """Every shipped stack with an `id` (what `plan.stack` names) -> (device, the stack)."""
    return {s["id"]: (device, s) for device in DEVICES for s in stacks(device) if s.get("id")}
