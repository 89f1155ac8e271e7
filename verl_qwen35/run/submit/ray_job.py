"""submit=ray_job: submit the run to a running Ray cluster through Ray's Job Submission API.

The entrypoint is `python -m verl_qwen35 relaunch .` in the run directory, uploaded as the
job's working_dir; the device environment rides in the job's runtime_env, as `ray job
submit --runtime-env-json` would send it.
"""

import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from verl_qwen35 import shell
from verl_qwen35.checks.submit import ray_job_problems
from verl_qwen35.records.launch import digest
from verl_qwen35.run.drill import refuse_unordered
from verl_qwen35.run.environment import effective_env
from verl_qwen35.run.stops import stoppable
from verl_qwen35.run.submit.base import Backend, SubmitError, relaunch_argv
from verl_qwen35.terminal import say


@dataclass
class SubmitRayJob:
    backend: str = "ray_job"
    address: str = "http://127.0.0.1:8265"
    python: str = "python"


def runtime_env(cfg: DictConfig, run_dir: Path) -> dict[str, Any]:
    """working_dir and env_vars of the job.

    verl's own `ray.init(runtime_env=...)` in the job's driver sends the same variables again;
    Ray refuses a driver runtime_env that repeats a job's env var unless
    RAY_OVERRIDE_JOB_RUNTIME_ENV=1 (ray/_private/worker.py, `_merge_runtime_env` in
    ray/runtime_env/runtime_env.py), and the values are the same, so that is set too.
    """
    env_vars = {**effective_env(cfg), "RAY_OVERRIDE_JOB_RUNTIME_ENV": "1"}
    env: dict[str, Any] = {"working_dir": str(run_dir), "env_vars": env_vars}
    checkpoints = Path(str(cfg.trainer.default_local_dir))
    if checkpoints.is_absolute() and checkpoints.is_relative_to(run_dir):
        env["excludes"] = [f"/{checkpoints.relative_to(run_dir)}/"]  # a resubmission uploads no checkpoints
    return env


def entrypoint(cfg: DictConfig, launch_digest: str) -> str:
    """The job's command line, run by a shell (Popen(shell=True) in JobSupervisor._exec_entrypoint,
    ray/dashboard/modules/job/job_supervisor.py); it relaunches only the record as written at submission."""
    return shell.command([*relaunch_argv(cfg, "."), "--digest", launch_digest])


def submit_ray_job(cfg: DictConfig, run_dir: Path, dry: bool, write_launch_file: Callable[[], Path]) -> str | None:
    """Write launch.yaml and submit the job (unless dry); its submission id."""
    refuse_unordered(cfg, "ray_job")  # a resume drill's job in its save job's sweep: no job dependencies here
    address, env = cfg.submit.address, runtime_env(cfg, run_dir)

    def announce(record: Path) -> str:
        command = entrypoint(cfg, digest(record))
        say(f"ray_job    {address}: {command} (working_dir {run_dir}, {len(env['env_vars'])} env vars)")
        return command

    if not Path(str(cfg.trainer.default_local_dir)).is_absolute():
        say(
            f"WARNING [trainer.default_local_dir] {cfg.trainer.default_local_dir} is relative: on the cluster it is "
            "inside the job's temporary copy of the run directory and is lost with it; set an absolute path on "
            "storage the cluster keeps",
            file=sys.stderr,
        )
    if dry:
        announce(write_launch_file())
        say("ray_job    dry run, not submitted")
        return None
    from ray.job_submission import JobSubmissionClient

    try:
        with stoppable():  # a cluster that does not answer must not hold Ctrl-C
            client = JobSubmissionClient(address)  # checks that the cluster answers
        command = announce(write_launch_file())
        with stoppable():
            job_id = client.submit_job(entrypoint=command, runtime_env=env)
    except Exception as err:  # ConnectionError, ValueError, RuntimeError, and Ray's own RPC errors
        raise SubmitError(
            f"submit.address={address}: cannot submit to a Ray cluster there ({err}); give the head's "
            "dashboard address, e.g. submit.address=http://head:8265 (check `ray status` on the head)"
        ) from None
    say(f"ray_job    submitted job {job_id}")
    say(f"log        ray job logs --address {address} --follow {job_id}")
    return job_id


BACKEND = Backend(name="ray_job", options=SubmitRayJob, problems=ray_job_problems, submit=submit_ray_job)
