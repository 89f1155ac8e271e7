"""Submission to a cluster (`submit=slurm|ray_job`), after the preflight.

What runs on the cluster is `python -m verl_qwen35.relaunch <run dir>`, reading the run
directory's launch.yaml: a submitted run and a relaunch are the same thing. Ray and the
Slurm commands are used only here, on the submission path.
"""

import shlex
from collections.abc import Callable
from pathlib import Path

from omegaconf import DictConfig

from verl_qwen35.checks import device_of

BACKENDS = ("none", "slurm", "ray_job")


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
    """The command the cluster runs: `<submit.python> -m verl_qwen35.relaunch <run dir>`."""
    return [*shlex.split(cfg.submit.python), "-m", "verl_qwen35.relaunch", run_dir]


def submit(cfg: DictConfig, run_dir: Path, dry: bool, write_launch_file: Callable[[], Path]) -> str | None:
    """Submit the run directory; the job id, or None in a dry run.

    `write_launch_file` writes the run's launch.yaml (app.write_launch_file); a backend calls it
    once it knows the submission can go ahead (sbatch found, the Ray cluster answered).
    """
    backend = cfg.submit.backend
    if backend == "slurm":
        from verl_qwen35.submit.slurm import submit_slurm

        return submit_slurm(cfg, run_dir, dry, write_launch_file)
    if backend == "ray_job":
        from verl_qwen35.submit.ray_job import submit_ray_job

        return submit_ray_job(cfg, run_dir, dry, write_launch_file)
    raise SubmitError(f"submit.backend={backend!r}: use submit=slurm or submit=ray_job (or submit=none to launch here)")
