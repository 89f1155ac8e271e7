"""Submission to a cluster (`submit=<backend>`, conf/submit/), after the preflight.

What runs on the cluster is `python -m verl_qwen35 relaunch <run dir>`, reading the run
directory's launch.yaml: a submitted run and a relaunch are the same thing. Ray and the
Slurm commands are used only here, on the submission path. Each backend is one module of this
package exposing `BACKEND` (base.py `Backend`), found by the one table, config/backends.py.
"""

from collections.abc import Callable
from pathlib import Path

from omegaconf import DictConfig

from verl_qwen35.checks.problem import Problem
from verl_qwen35.config.backends import named
from verl_qwen35.run.stops import stoppable
from verl_qwen35.run.submit.base import SubmitError, ray_device, relaunch_argv

__all__ = ["SubmitError", "ray_device", "relaunch_argv", "run_dir_problems", "submit", "submitting"]


def submitting(cfg: DictConfig) -> bool:
    """Whether the run goes to a cluster (a name no backend declares counts: the preflight refuses it)."""
    chosen = named(cfg.submit.backend)
    return chosen is None or chosen.submit is not None


def run_dir_problems(cfg: DictConfig, run_dir: Path) -> list[Problem]:
    """What the submission would refuse about the run directory Hydra chose (known only once the run starts):
    part of the verdict, so a dry run never says OK and then fails."""
    return named(cfg.submit.backend).run_dir_problems(cfg, run_dir)


def submit(cfg: DictConfig, run_dir: Path, dry: bool, write_launch_file: Callable[[], Path]) -> str | None:
    """Submit the run directory; the job id, or None in a dry run.

    `write_launch_file` writes the run's launch.yaml (run/launch_record.py write_launch_file); a backend calls it
    once it knows the submission can go ahead (sbatch found, the Ray cluster answered). The preflight has
    refused any other backend (checks/submit.py).

    Every backend runs inside one `stoppable` section: a Ctrl-C or SIGTERM noted before it (while the preflight
    ran) ends the command here, before anything is submitted, and one during it cuts the call where it stands.
    """
    with stoppable():
        return named(cfg.submit.backend).submit(cfg, run_dir, dry, write_launch_file)
