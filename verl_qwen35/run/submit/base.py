"""What every submission backend shares: its refusal, the device resource, the command the cluster runs."""

import shlex

from omegaconf import DictConfig

from verl_qwen35.checks import device_of


class SubmitError(Exception):
    """A submission that cannot go ahead; the message names the key or command to change (exit 2)."""


def submitting(cfg: DictConfig) -> bool:
    return cfg.submit.backend != "none"


def ray_device(cfg: DictConfig) -> tuple[str, int]:
    """The Ray resource verl asks for, and how many a node has.

    verl places its workers on Ray's "NPU" resource on Ascend and "GPU" elsewhere
    (verl/single_controller/ray/base.py, and verl 0.9's verl/plugin/platform/platform_npu.py).
    """
    return ("NPU" if device_of(cfg) == "npu" else "GPU"), int(cfg.trainer.n_gpus_per_node)


def relaunch_argv(cfg: DictConfig, run_dir: str) -> list[str]:
    """The command the cluster runs: `<submit.python> -m verl_qwen35 relaunch <run dir>`."""
    return [*shlex.split(cfg.submit.python), "-m", "verl_qwen35", "relaunch", run_dir]
