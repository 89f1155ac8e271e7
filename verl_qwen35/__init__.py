"""Configure, check, plan and launch Qwen3.5 MoE GRPO on verl (GPU and Ascend NPU).

The public API, for notebooks and other tools (importing it changes nothing outside the package):

    from verl_qwen35 import compose, preflight, estimate, plan
    cfg = compose(["device=npu", "model=122b"])
    problems = preflight(cfg)            # list[Problem]: level, keys, message
    memory = estimate(cfg)               # MemoryEstimate, GiB
    best = plan(cfg, nnodes=8, devices_per_node=16, top=5)   # list[Candidate], best first
"""

from omegaconf import DictConfig, OmegaConf, open_dict

from verl_qwen35.checks import preflight as _preflight
from verl_qwen35.checks.problem import Problem
from verl_qwen35.config import compose
from verl_qwen35.config.errors import resolve_naming_key
from verl_qwen35.installed import __version__
from verl_qwen35.model.memory import MemoryEstimate
from verl_qwen35.model.memory import estimate as _estimate
from verl_qwen35.planner.search import Candidate, search, verified

__all__ = ["Candidate", "MemoryEstimate", "Problem", "compose", "estimate", "plan", "preflight", "__version__"]


def _resolved(cfg: DictConfig) -> DictConfig:
    """A resolved copy: the caller's config keeps its interpolations (and `parallel.*` its sway over verl's keys)."""
    copy = OmegaConf.create(OmegaConf.to_container(cfg, resolve=False))
    resolve_naming_key(copy)
    return copy


def preflight(cfg: DictConfig) -> list[Problem]:
    """Every problem the dry run would report (a missing local data or model file is a warning)."""
    return _preflight(_resolved(cfg), machine_missing="warning")


def estimate(cfg: DictConfig) -> MemoryEstimate:
    """Memory per device (training and rollout) and host memory per node, in GiB."""
    return _estimate(_resolved(cfg))


def plan(cfg: DictConfig, nnodes: int, devices_per_node: int, top: int = 10) -> list[Candidate]:
    """The layouts of `cfg`'s model on nnodes x devices_per_node that fit and that the whole preflight accepts,
    best first (as `verl-qwen35 plan`); `top=0` lists all."""
    sized = OmegaConf.create(OmegaConf.to_container(cfg, resolve=False))
    with open_dict(sized):
        sized.parallel.nnodes, sized.parallel.devices_per_node = nnodes, devices_per_node
    resolved = _resolved(sized)
    device = "npu" if resolved.trainer.get("device") == "npu" else "gpu"
    return verified(sized, search(resolved, device, top), top)[0]
