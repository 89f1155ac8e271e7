"""submit=slurm: write `<run dir>/job.sbatch` from the config and hand it to `sbatch`.

The script's body is the static bash file job.sbatch beside this module; only its
`#SBATCH` lines and a block of settings are generated, every value through verl_qwen35/shell.py
(validated or quoted there). The script pins the sha256 of launch.yaml as written at submission:
the job and the relaunch on the head refuse a record changed since.
"""

import shlex
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from omegaconf import DictConfig

from verl_qwen35 import shell
from verl_qwen35.checks.problem import Problem, error
from verl_qwen35.checks.schedule import train_rows, training_steps
from verl_qwen35.checks.submit import slurm_problems
from verl_qwen35.records.launch import digest
from verl_qwen35.records.private_files import write_private
from verl_qwen35.run.drill import SaveJob, wait_for
from verl_qwen35.run.environment import effective_env
from verl_qwen35.run.submit.base import Backend, SubmitError, ray_device
from verl_qwen35.terminal import say

TEMPLATE = Path(__file__).with_name("job.sbatch")
SCRIPT = "job.sbatch"
FAILED = "chain.failed"  # job.sbatch writes it when a job of a chain fails; the later ones stop at it


@dataclass
class SlurmRay:
    port: int = 6379
    dashboard_port: int = 8265
    client_server_port: int = 10001
    # The dashboard (Ray's Jobs API, which runs any code sent to it) binds here; null: the head node's address.
    dashboard_host: str | None = "127.0.0.1"
    # Ray's token authentication for every node and the run ("token"), or none ("disabled").
    auth_mode: str = "token"
    temp_dir: str | None = None
    interface: str | None = None
    wait_timeout: int = 600
    head_args: list[str] = field(default_factory=list)
    worker_args: list[str] = field(default_factory=list)


@dataclass
class SubmitSlurm:
    backend: str = "slurm"
    job_name: str | None = None
    partition: str | None = None
    account: str | None = None
    time: str | None = None
    exclusive: bool = True
    cpus_per_node: int | None = None
    sbatch: list[str] = field(default_factory=list)
    setup: list[str] = field(default_factory=list)
    python: str = "python"
    container: str | None = None
    mounts: list[str] = field(default_factory=list)
    # Jobs in a chain, each after the one before (afterany), each resuming from the run's checkpoints.
    chain: int = 1
    ray: SlurmRay = field(default_factory=SlurmRay)


def sbatch_options(cfg: DictConfig, run_dir: Path) -> list[str]:
    """The job's `#SBATCH` options: one task per node, the device count of each node on GPU."""
    s = cfg.submit
    resource, per_node = ray_device(cfg)
    options = [
        f"--job-name={s.job_name or shell.job_name(str(cfg.trainer.experiment_name))}",
        f"--nodes={cfg.trainer.nnodes}",
        "--ntasks-per-node=1",
        f"--output={run_dir}/slurm-%j.out",
    ]
    if resource == "GPU":
        options.append(f"--gpus-per-node={per_node}")
    if s.cpus_per_node is not None:
        options.append(f"--cpus-per-task={s.cpus_per_node}")
    if s.exclusive:
        options.append("--exclusive")
    if s.chain > 1:
        options.append("--requeue")  # a preempted job of a chain goes back to the queue
    options += [f"--{key}={s[key]}" for key in ("partition", "account", "time") if s[key] is not None]
    return options + [str(option) for option in s.sbatch]


def container_args(cfg: DictConfig, run_dir: Path) -> list[str]:
    """pyxis/enroot options for every step (as NeMo-RL's ray.sub); the run dir is always mounted."""
    s = cfg.submit
    if not s.container:
        return []
    mounts = [*map(str, s.mounts), f"{run_dir}:{run_dir}"]
    return [
        f"--container-image={s.container}",
        f"--container-mounts={','.join(mounts)}",
        "--container-name=verl_qwen35",
    ]


def settings(cfg: DictConfig, run_dir: Path, launch_digest: str) -> list[str]:
    """Shell assignments the script's body reads, then the device environment and submit.setup."""
    s, ray = cfg.submit, cfg.submit.ray
    resource, per_node = ray_device(cfg)
    device_args = [f"--num-gpus={per_node}"] if resource == "GPU" else [f'--resources={{"{resource}": {per_node}}}']
    values = {
        "RUN_DIR": str(run_dir),
        "LAUNCH_DIGEST": launch_digest,
        "NNODES": int(cfg.trainer.nnodes),
        "DEVICES_PER_NODE": per_node,
        "RAY_RESOURCE": resource,
        "RAY_PORT": int(ray.port),
        "RAY_DASHBOARD_PORT": int(ray.dashboard_port),
        "RAY_DASHBOARD_HOST": ray.dashboard_host or "",  # empty: the head node's address
        "RAY_AUTH": ray.auth_mode,
        "RAY_CLIENT_SERVER_PORT": int(ray.client_server_port),
        "RAY_INTERFACE": ray.interface or "",
        "RAY_WAIT_TIMEOUT": int(ray.wait_timeout),
        "CHAIN": int(s.chain),
        "CHECKPOINT_DIR": str(cfg.trainer.default_local_dir),
        "TOTAL_STEPS": "" if (total := run_steps(cfg)) is None else total,  # empty: unknown here
    }
    arrays = {
        "RAY_DEVICE_ARGS": device_args,
        "PYTHON": shlex.split(s.python),
        "CONTAINER_ARGS": container_args(cfg, run_dir),
        "RAY_TEMP_ARGS": [f"--temp-dir={ray.temp_dir}"] if ray.temp_dir else [],
        "RAY_HEAD_ARGS": list(ray.head_args),
        "RAY_WORKER_ARGS": list(ray.worker_args),
    }
    lines = [shell.assign(name, value) for name, value in values.items()]
    lines += [f"{name}={shell.array(items)}" for name, items in arrays.items()]
    lines += [
        "",
        "# The device environment (env.set, your shell's values winning) for `ray start` and the run;",
        "# secrets are not written here: Slurm passes on what your shell exports at sbatch time.",
    ]
    for name, value in effective_env(cfg).items():
        lines.append(shell.unset(name) if name in cfg.env.unset else shell.export(name, value))
    if s.setup:
        lines += ["", "# submit.setup", *map(str, s.setup)]  # shell lines, by design
    return lines


def run_steps(cfg: DictConfig) -> int | None:
    """The run's trainer steps as verl counts them (checks/schedule.py), or None when the data is not readable."""
    return training_steps(cfg, train_rows(cfg)).total


def sbatch(command: list[str], script: Path) -> str:
    """Run `sbatch --parsable ...` and return the job id it prints."""
    # Slurm's own client, on the user's behalf: it answers at once with one line (not run_child's untrusted case)
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise SubmitError(
            f"`sbatch {script}` failed (exit {done.returncode}): {done.stderr.strip() or done.stdout.strip()}; "
            "check submit.partition, submit.account, submit.time and submit.sbatch"
        )
    job_id = done.stdout.strip().split(";")[0]  # --parsable: "<id>" or "<id>;<cluster>"
    if not job_id.isdigit():
        raise SubmitError(f"`sbatch --parsable {script}` printed no job id: {done.stdout.strip()!r}")
    return job_id


def dependency(after: SaveJob) -> str:
    """sbatch's option that queues a resume drill's job after its save job (the id a placeholder in a dry run)."""
    return f"--dependency=afterok:{after.job_id or '<job id of sweep job ' + str(after.job) + '>'}"


def drill_comment(after: SaveJob | None) -> list[str]:
    """The script's note of the dependency sbatch is given on its command line (an id is digits: sbatch())."""
    if after is None:
        return []
    return [
        "",
        f"# The resume drill's second job: queued after its save job (sweep job {after.job}), which writes the "
        "checkpoint it resumes:",
        f"#   sbatch --parsable {dependency(after)} job.sbatch",
    ]


def render(cfg: DictConfig, run_dir: Path, launch_digest: str, after: SaveJob | None = None) -> str:
    """The whole script; shell.UnsafeValue for a value the preflight did not refuse (it refuses them all)."""
    text = TEMPLATE.read_text()
    text = text.replace("@SBATCH@", "\n".join(shell.sbatch_line(option) for option in sbatch_options(cfg, run_dir)))
    return text.replace("@SETTINGS@", "\n".join(settings(cfg, run_dir, launch_digest) + drill_comment(after)))


def run_dir_problem(run_dir: Path) -> str | None:
    """Why job.sbatch cannot name this run directory, or None."""
    if shell.sbatch_problem(str(run_dir)):
        # The run dir goes into `#SBATCH --output=...`, a line Slurm splits at whitespace (and cuts at '#').
        return (
            f"the run directory {str(run_dir)!r} holds whitespace, a quote or '#', which an `#SBATCH` line cannot "
            "carry; set hydra.run.dir (hydra.sweep.dir in a sweep) to a path without them"
        )
    return None


def run_dir_problems(cfg: DictConfig, run_dir: Path) -> list[Problem]:
    return [error("hydra.run.dir", why)] if (why := run_dir_problem(run_dir)) else []


def submit_slurm(cfg: DictConfig, run_dir: Path, dry: bool, write_launch_file: Callable[[], Path]) -> str | None:
    """Write launch.yaml and job.sbatch; unless dry, `sbatch` it and return the job id."""
    if why := run_dir_problem(run_dir):
        raise SubmitError(why)
    sbatch_path = None if dry else shutil.which("sbatch")
    if not dry and sbatch_path is None:
        raise SubmitError(
            "submit=slurm: the `sbatch` command is not on PATH; submit from a Slurm login node, "
            "or add dry_run=true to only write the run's launch.yaml and job.sbatch"
        )
    after = wait_for(cfg)  # the resume drill's save job, or SubmitError naming trial=drill_resume
    if after is not None and sbatch_path is not None and after.job_id is None:
        raise SubmitError(
            f"trial={cfg.trial.name}: its save job (sweep job {after.job}, {after.option}) was a dry run, nothing "
            "submitted; submit the save job first (the same sweep without dry_run, the save job before this one)"
        )
    waits = [dependency(after)] if after is not None else []
    try:
        render(cfg, run_dir, "0" * 64, after)  # every value checked before anything is written
    except shell.UnsafeValue as err:
        raise SubmitError(f"job.sbatch cannot carry a value: {err}") from None
    record = write_launch_file()
    script = run_dir / SCRIPT
    write_private(script, render(cfg, run_dir, digest(record), after))
    say(f"slurm      {script} ({cfg.trainer.nnodes} node(s); relaunches {run_dir})")
    if after is not None:
        say(f"slurm      the resume drill: queued after its save job, sweep job {after.job} ({after.option})")
    if sbatch_path is None:
        say(f"slurm      dry run, not submitted; to submit: sbatch {' '.join([*waits, str(script)])}")
        return None
    (run_dir / FAILED).unlink(missing_ok=True)  # a new submission starts a new chain
    job_id = sbatch([sbatch_path, "--parsable", *waits, str(script)], script)
    jobs = [job_id]
    for _ in range(cfg.submit.chain - 1):  # each after the one before, however it ended (afterany)
        try:
            jobs.append(sbatch([sbatch_path, "--parsable", f"--dependency=afterany:{jobs[-1]}", str(script)], script))
        except SubmitError as err:
            raise SubmitError(f"{err}; already queued: job(s) {' '.join(jobs)} (scancel {' '.join(jobs)})") from None
        except KeyboardInterrupt:  # stopped mid-chain (submit() is stoppable): say what is queued
            say(f"slurm      stopped; already queued: job(s) {' '.join(jobs)} (scancel {' '.join(jobs)})")
            raise
    if len(jobs) > 1:
        say(f"slurm      chained jobs {' -> '.join(jobs)} (each resumes from {cfg.trainer.default_local_dir})")
    say(f"slurm      submitted job {job_id}")
    say(f"log        {run_dir}/slurm-{job_id}.out (Ray: {run_dir}/slurm-{job_id}/ray-*.log)")
    return job_id


BACKEND = Backend(
    name="slurm", options=SubmitSlurm, problems=slurm_problems, run_dir_problems=run_dir_problems, submit=submit_slurm
)
