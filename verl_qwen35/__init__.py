"""Configure, check, plan and launch Qwen3.5 MoE GRPO on verl (GPU and Ascend NPU).

The public API, for notebooks and other tools (importing it changes nothing outside the package):

    from verl_qwen35 import compose, preflight, estimate, plan, resolve
    cfg = compose(["device=npu", "model=122b"])
    run = resolve(cfg)                   # Run: the resolved, read-only config with its layout and estimate
    problems = preflight(run)            # list[Problem]: level, keys, message
    memory = estimate(run)               # MemoryEstimate, GiB
    best = plan(run, nnodes=8, devices_per_node=16, top=5)   # list[Candidate], best first

`preflight`, `estimate` and `plan` take a `Run` (`resolve` builds it from a composed config).
The names are imported when first used: `python -m verl_qwen35` runs this file before every command,
and `--cfg job` needs neither the checks nor the planner.
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any

from verl_qwen35.installed import __version__

if TYPE_CHECKING:
    from omegaconf import DictConfig

    from verl_qwen35.checks.problem import Problem
    from verl_qwen35.config import compose
    from verl_qwen35.model.memory import MemoryEstimate
    from verl_qwen35.model.run import Run
    from verl_qwen35.planner.search import Candidate

__all__ = [
    "Candidate",
    "MemoryEstimate",
    "Problem",
    "Run",
    "compose",
    "estimate",
    "plan",
    "preflight",
    "resolve",
    "__version__",
]

_WHERE = {
    "Candidate": "verl_qwen35.planner.search",
    "MemoryEstimate": "verl_qwen35.model.memory",
    "Problem": "verl_qwen35.checks.problem",
    "Run": "verl_qwen35.model.run",
    "compose": "verl_qwen35.config",
}


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(import_module(_WHERE[name]), name)
    raise AttributeError(f"module 'verl_qwen35' has no attribute {name!r}")


def resolve(cfg: "DictConfig") -> "Run":
    """The `Run` of a composed config, as a dry run builds it (yours is copied, never edited: it keeps its
    interpolations, and `parallel.*` its sway over verl's keys)."""
    from verl_qwen35.builder.build import build_run

    return build_run(cfg, mode="dry", keep_composed=True)[0]


def preflight(run: "Run") -> "list[Problem]":
    """Every problem the dry run would report (a missing local data or model file is a warning)."""
    from verl_qwen35.checks import preflight as checked

    return checked(run, machine_missing="warning")


def estimate(run: "Run") -> "MemoryEstimate":
    """Memory per device (training and rollout) and host memory per node, in GiB."""
    from verl_qwen35.model.memory import estimate as estimated

    return run.estimate or estimated(run.config)  # a config the estimate cannot take: its error names the key


def plan(run: "Run", nnodes: int, devices_per_node: int, top: int = 10) -> "list[Candidate]":
    """The layouts of the run's model on nnodes x devices_per_node that fit and that the whole preflight accepts,
    best first (as `verl-qwen35 plan`); `top=0` lists all."""
    from verl_qwen35.builder.build import build_run
    from verl_qwen35.planner.search import composed_of, search, verified

    sized = {"parallel.nnodes": nnodes, "parallel.devices_per_node": devices_per_node}
    cluster = build_run(composed_of(run), run.choices, mode="dry", keep_composed=True, changes=sized)[0]
    return verified(cluster, search(cluster, top=top), top)[0]
