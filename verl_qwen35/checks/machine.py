"""Launch-time checks of this host and its Ray cluster: the software stack and the devices.

They run at launch only (never in `dry_run=true|full`, which may run on a laptop or in CI), after
the config's own checks pass and before verl starts Ray. `launch_checks.stack=false` /
`launch_checks.devices=false` skip them (e.g. forwarding tests on a CPU-only machine).
"""

from omegaconf import DictConfig

from verl_qwen35.checks.problem import Problem, error
from verl_qwen35.stack import stack_verdicts


def device_of(cfg: DictConfig) -> str:
    return "npu" if cfg.trainer.get("device") == "npu" else "gpu"


def stack_problems(device: str) -> list[Problem]:
    return [
        error(
            "launch_checks.stack",
            f"{v.name}: installed {v.installed}, required {v.required} ({v.note}); install it in every node's "
            f"environment (python -m verl_qwen35.doctor device={device} lists the whole stack)",
        )
        for v in stack_verdicts(device)
        if not v.ok
    ]


def launch_problems(cfg: DictConfig) -> list[Problem]:
    device = device_of(cfg)
    wanted = cfg.get("launch_checks") or {}
    found = stack_problems(device) if wanted.get("stack", True) else []
    if wanted.get("devices", True) and not any("Ray" in p.message.split(":")[0] for p in found):
        from verl_qwen35.devices import device_problems

        found += device_problems(cfg, device)
    return found
