"""The job: preflight the composed config, then print the plan (dry run) or launch verl."""

import sys
from pathlib import Path

from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig, OmegaConf

from verl_qwen35.checks import Problem, preflight
from verl_qwen35.checks.memory import memory_column
from verl_qwen35.environment import from_shell, job_environment
from verl_qwen35.install import runtime_problems
from verl_qwen35.plan import plan_lines
from verl_qwen35.submit import SubmitError, submit, submitting
from verl_qwen35.sweep import in_multirun, job_tag, note_job_id, write_verdict
from verl_qwen35.versions import installed_verl_schema

MODES = {False: "launch", True: "dry", "full": "full"}
LAUNCH_FILE = "launch.yaml"


class LaunchRefused(SystemExit):
    """Exit code 2: the reasons are already printed."""


def _choices() -> tuple[dict[str, str], str | None]:
    if not HydraConfig.initialized():
        return {}, None
    hydra_cfg = HydraConfig.get()
    return dict(hydra_cfg.runtime.choices), hydra_cfg.runtime.output_dir


def mode_of(cfg: DictConfig) -> str:
    if cfg.dry_run not in MODES:
        print(f"ERROR   [dry_run] ={cfg.dry_run!r}: use dry_run=false (launch), true or full", file=sys.stderr)
        raise LaunchRefused(2)
    return MODES[cfg.dry_run]


def problems(cfg: DictConfig, choices: dict[str, str], mode: str) -> list[Problem]:
    found = preflight(cfg, machine_missing="warning" if mode == "dry" else "error")
    schema = choices.get("verl_schema")
    if mode != "dry" and schema and schema != installed_verl_schema():
        found.append(
            Problem(
                "error",
                ("verl_schema",),
                (
                    f"verl_schema={schema} but the installed verl needs {installed_verl_schema()}: drop the "
                    "override to launch (it is for composing another verl's config)"
                ),
            )
        )
    if mode != "dry":
        found += runtime_problems(mode)
    if mode == "full" and not [p for p in found if p.level == "error"]:
        found += _verl_problems(cfg)
    # A submitted run gets these on the cluster, in its relaunch: this host is not where it runs.
    if mode == "launch" and not submitting(cfg) and not [p for p in found if p.level == "error"]:
        from verl_qwen35.checks.machine import launch_problems  # launch path only: keeps dry runs lean

        found += launch_problems(cfg)  # the stack and the cluster's devices, before verl starts Ray
    return found


def _verl_problems(cfg: DictConfig) -> list[Problem]:
    from verl_qwen35.verl_check import verl_validate

    try:
        verl_validate(cfg)
    except Exception as err:  # verl raises AssertionError, ValueError, TypeError, ...
        return [Problem("error", ("verl",), f"verl's own checks refused this config: {type(err).__name__}: {err}")]
    return []


def separate_sweep_job(cfg: DictConfig, output_dir: str) -> None:
    """In a sweep, each job checkpoints into its own output directory under its own run name."""
    cfg.trainer.experiment_name = f"{cfg.trainer.experiment_name}_{job_tag()}"
    cfg.trainer.default_local_dir = str(Path(output_dir) / "checkpoints")


def run(cfg: DictConfig) -> None:
    mode = mode_of(cfg)
    choices, output_dir = _choices()
    OmegaConf.resolve(cfg)
    if in_multirun() and output_dir:
        separate_sweep_job(cfg, output_dir)
    found = problems(cfg, choices, mode)
    errors = [p for p in found if p.level == "error"]
    if output_dir:
        write_verdict(output_dir, mode, found, memory_column(cfg))
    for problem in found:
        print(problem, file=sys.stderr)
    if mode != "launch":
        print("\n".join(plan_lines(cfg, choices, output_dir)))
        for name, value in from_shell(cfg).items():
            print(f"env        {name}={value} (from your shell; config says {cfg.env.set[name]})")
    if errors:
        print(f"verdict    REFUSED: {len(errors)} error(s), nothing launched", file=sys.stderr)
        if in_multirun():
            return  # the sweep goes on; SweepSummary reports and sets the exit code
        raise LaunchRefused(2)
    if mode != "launch":
        print(f"verdict    OK ({len(found)} warning(s)): dry run, nothing launched")
    if submitting(cfg):  # Hydra always gives a run its output dir; the cwd only outside Hydra
        submit_run(cfg, str(Path(output_dir or ".").resolve()), dry=mode != "launch")
        return
    if mode != "launch":
        return
    if output_dir:
        write_launch_file(cfg, output_dir)
        print(f"relaunch   python -m verl_qwen35.relaunch {output_dir}", file=sys.stderr)
    launch_now(cfg)


def write_launch_file(cfg: DictConfig, output_dir: str) -> Path:
    """The run's launch.yaml: what `python -m verl_qwen35.relaunch <run dir>` launches."""
    path = Path(output_dir) / LAUNCH_FILE
    path.write_text(OmegaConf.to_yaml(cfg))
    return path


def submit_run(cfg: DictConfig, output_dir: str, dry: bool) -> None:
    """Submit the run directory with its launch.yaml (submit=slurm|ray_job); the job id goes to verdict.json."""
    try:
        job_id = submit(cfg, Path(output_dir), dry, lambda: write_launch_file(cfg, output_dir))
    except SubmitError as err:
        print(f"ERROR   [submit] {err}", file=sys.stderr)
        raise LaunchRefused(2) from None
    if job_id:
        note_job_id(output_dir, job_id)


def launch_now(cfg: DictConfig) -> None:
    from verl_qwen35.launch import launch

    with job_environment(cfg):
        launch(cfg)
