"""Submission to a cluster (`submit=slurm|ray_job|kuberay`), after the preflight.

What runs on the cluster is `python -m verl_qwen35 relaunch <run dir>`, reading the run
directory's launch.yaml: a submitted run and a relaunch are the same thing. Ray and the
Slurm commands are used only here, on the submission path.
"""

from collections.abc import Callable
from pathlib import Path

from omegaconf import DictConfig

from verl_qwen35.checks.problem import Problem, error
from verl_qwen35.run.stops import stoppable
from verl_qwen35.run.submit import kuberay, slurm
from verl_qwen35.run.submit.base import SubmitError, ray_device, relaunch_argv, submitting
from verl_qwen35.run.submit.kuberay import submit_kuberay
from verl_qwen35.run.submit.ray_job import submit_ray_job
from verl_qwen35.run.submit.slurm import submit_slurm

__all__ = ["SUBMITTERS", "SubmitError", "ray_device", "relaunch_argv", "run_dir_problems", "submit", "submitting"]

Submitter = Callable[[DictConfig, Path, bool, Callable[[], Path]], str | None]
# One per backend of the schema's list (config/schema.py BACKENDS) but `none`, which launches here
# (tests/integration/test_submit.py keeps the two and conf/submit/ the same).
SUBMITTERS: dict[str, Submitter] = {"slurm": submit_slurm, "ray_job": submit_ray_job, "kuberay": submit_kuberay}


def run_dir_problems(cfg: DictConfig, run_dir: Path) -> list[Problem]:
    """What the submission would refuse about the run directory Hydra chose (known only once the run starts):
    part of the verdict, so a dry run never says OK and then fails."""
    backend = cfg.submit.backend
    if backend == "kuberay" and (why := kuberay.storage_problem(cfg, run_dir)):
        return [error(("submit.storage.mount_path", "hydra.run.dir", "trainer.default_local_dir"), why)]
    if backend == "slurm" and (why := slurm.run_dir_problem(run_dir)):
        return [error("hydra.run.dir", why)]
    return []


def submit(cfg: DictConfig, run_dir: Path, dry: bool, write_launch_file: Callable[[], Path]) -> str | None:
    """Submit the run directory; the job id, or None in a dry run.

    `write_launch_file` writes the run's launch.yaml (run/launch_record.py write_launch_file); a backend calls it
    once it knows the submission can go ahead (sbatch found, the Ray cluster answered). The preflight has
    refused any other backend (checks/submit.py).

    Every backend runs inside one `stoppable` section: a Ctrl-C or SIGTERM noted before it (while the preflight
    ran) ends the command here, before anything is submitted, and one during it cuts the call where it stands.
    """
    with stoppable():
        return SUBMITTERS[cfg.submit.backend](cfg, run_dir, dry, write_launch_file)
