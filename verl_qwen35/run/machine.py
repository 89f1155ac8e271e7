"""Launch-time checks of this host and its Ray cluster: the software stack and the devices.

They run at launch only (never in `dry_run=true|full`, which may run on a laptop or in CI), after
the config's own checks pass and before verl starts Ray. `launch_checks.stack=false` /
`launch_checks.devices=false` skip them (e.g. forwarding tests on a CPU-only machine).
"""

from collections.abc import Mapping

from omegaconf import DictConfig

from verl_qwen35.checks.problem import Problem, error
from verl_qwen35.installed import launch_install_command, missing_verl_runtime
from verl_qwen35.model.layout import device_of
from verl_qwen35.run.devices import device_problems
from verl_qwen35.run.stack import Verdict, importable, stack_verdicts


def stack_problem(v: Verdict, device: str) -> Problem:
    found = "not installed" if v.installed == "missing" else f"installed {v.installed}"
    return error(
        "launch_checks.stack",
        f"{v.name}: {found}, required {v.required} ({v.note}); install it in every node's "
        f"environment (verl-qwen35 doctor device={device} lists the whole stack)",
    )


def launch_problems(cfg: DictConfig) -> list[Problem]:
    device = device_of(cfg)
    wanted = cfg.get("launch_checks") or {}
    if not isinstance(wanted, Mapping):
        return [error("launch_checks", f"launch_checks={wanted!r}: must be a mapping, e.g. launch_checks.stack=false")]
    bad = [
        f"launch_checks.{k}={v!r}" for k, v in wanted.items() if k in ("stack", "devices") and not isinstance(v, bool)
    ]
    if bad:
        return [error("launch_checks", f"{', '.join(bad)}: must be true or false")]
    verdicts = stack_verdicts(device) if wanted.get("stack", True) else []
    found = [stack_problem(v, device) for v in verdicts if not v.ok]
    if not wanted.get("devices", True):
        return found
    if not importable("ray"):
        return found + [error("launch_checks.devices", "Ray is not installed: the cluster's devices cannot be counted")]
    return found + device_problems(cfg, device)


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
