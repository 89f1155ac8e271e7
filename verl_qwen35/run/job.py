"""The job: preflight the composed config, then print the plan (dry run) or launch verl."""

import os
import sys
from pathlib import Path
from typing import Any

from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

from verl_qwen35.builder.build import MODES, UNDEFINED_AFTER_ERRORS, build_run
from verl_qwen35.checks import preflight
from verl_qwen35.checks.known_issues import config_problems
from verl_qwen35.checks.megatron_keys import planned_mcore
from verl_qwen35.checks.memory import headroom_warnings, memory_numbers
from verl_qwen35.checks.problem import Problem, error
from verl_qwen35.checks.rewrites import startup_rewrites
from verl_qwen35.checks.sections import structure_problems
from verl_qwen35.checks.tracking import backends, swanlab_login_problems
from verl_qwen35.checks.verl_settings import deprecation_notes
from verl_qwen35.checks.verl_target import installed_verl_problems, planned_verl_problems, schema_problems, verl_in_use
from verl_qwen35.checks.versions import rules_line
from verl_qwen35.config.output_paths import writes_lines
from verl_qwen35.config.secrets import redact
from verl_qwen35.errors import UserError
from verl_qwen35.installed import missing_module_message
from verl_qwen35.model.memory import InputError
from verl_qwen35.model.run import Run
from verl_qwen35.planner.summary import plan_lines
from verl_qwen35.planner.whole_run import predicted_step
from verl_qwen35.records.metrics import keep_file_history
from verl_qwen35.run.console_copy import console_copy
from verl_qwen35.run.drill import is_resume, note_submitted
from verl_qwen35.run.environment import from_shell, job_environment
from verl_qwen35.run.launch_record import write_launch_file
from verl_qwen35.run.machine import launch_problems, runtime_problems
from verl_qwen35.run.resolved import writable
from verl_qwen35.run.submit import SubmitError, run_dir_problems, submit, submitting
from verl_qwen35.run.sweep import in_multirun, job_tag, write_verdict
from verl_qwen35.terminal import say
from verl_qwen35.validators.library_output import held_back

__all__ = ["MODES", "job_context", "launch_now", "run_job"]


class LaunchRefused(SystemExit):
    """Exit code 2: the reasons are already printed."""


class PreflightRefused(LaunchRefused):
    """Exit code 2: the preflight refused the config (not a submission that failed after it passed)."""


def job_context() -> tuple[dict[str, str], str | None]:
    """The group choices and the output directory of the Hydra job being run (none outside Hydra)."""
    if not HydraConfig.initialized():
        return {}, None
    hydra_cfg = HydraConfig.get()
    return dict(hydra_cfg.runtime.choices), hydra_cfg.runtime.output_dir


def problems(run: Run) -> list[Problem]:
    cfg, mode = run.config, run.mode
    if wrong_schema := schema_problems(run.choices.get("verl_schema")):
        return wrong_schema  # every other finding would be about keys the schema added or lacks
    # A drill's resume job submitted with its save job: the checkpoint is not there yet (run/drill.py orders them).
    later = mode == "dry" or (submitting(cfg) and is_resume(cfg))
    found = preflight(run, machine_missing="warning" if later else "error")
    if not structure_problems(cfg):  # a missing section: nothing reads inside it
        found += config_problems(cfg, user_config_dirs(), os.environ)  # upstream bugs this config would meet
    found += installed_verl_problems() + planned_verl_problems(cfg)
    # A submitted run gets the real validators and the machine checks on the cluster, in its relaunch.
    here = mode == "full" or (mode == "launch" and not submitting(cfg))
    if here:  # a config-only install stops here, naming the install that runs verl
        found += runtime_problems(mode)
    if here and not [p for p in found if p.level == "error"]:
        found += real_or_missing(run)
    if submitting(cfg) and not [p for p in found if p.level == "error"]:
        found += run_dir_problems(cfg, run_dir_of(run.output_dir))  # what the submission would refuse, in the verdict
    if mode == "launch" and not submitting(cfg) and not [p for p in found if p.level == "error"]:
        found += launch_problems(cfg)  # the stack and the cluster's devices, before verl starts Ray
        found += swanlab_login_problems(cfg, os.environ)  # this shell's key, as at the stack check
    return found


def user_config_dirs() -> list[Path]:
    """The `--config-dir` directories of the job being run: Hydra records them as `command-line` sources, or as
    `hydra.searchpath in command-line` ones where the dry run composed in-process (config/__init__.py compose)."""
    if not HydraConfig.initialized():
        return []
    return [
        Path(source.path)
        for source in HydraConfig.get().runtime.config_sources
        if source.provider in USER_PROVIDERS and source.schema == "file"
    ]


USER_PROVIDERS = ("command-line", "hydra.searchpath in command-line")  # hydra/_internal/config_loader_impl.py


def real_or_missing(run: Run) -> list[Problem]:
    """The real validators and the rehearsal; a package their imports need and this install lacks (an install
    without verl's runtime extras) is one refusal naming it and the extra that brings it."""
    try:
        with held_back():  # their import notices and CPU fallbacks: counted in one line, kept in the job's log
            from verl_qwen35.validators.real import real_problems  # imports torch, megatron-core and verl

            return real_problems(writable(run.config), run.device)  # verl's dataclasses edit what they are given
    except ModuleNotFoundError as err:
        if not err.name:
            raise
        what = "dry_run=full (verl's start-up, rehearsed)" if run.mode == "full" else "the launch (verl's start-up)"
        return [error("dry_run", missing_module_message(err.name, what))]


def plan_or_why_not(run: Run, refused: bool) -> list[str]:
    """The plan; after errors, values it would compute with may be of the wrong type, so it may not exist."""
    if not refused:
        return plan_lines(run)
    try:
        return plan_lines(run)
    except UNDEFINED_AFTER_ERRORS:
        return ["plan       not computed: it reads values the errors above refuse; fix those and run again"]


def memory_or_none(run: Run, refused: bool) -> tuple[dict[str, Any] | None, list[Problem]]:
    """The verdict's memory numbers and its little-headroom warnings; none after errors that leave them undefined."""
    try:
        return memory_numbers(run.config, run.estimate), headroom_warnings(run.config, run.estimate)
    except UNDEFINED_AFTER_ERRORS:
        if not refused:
            raise
        return None, []


def step_or_none(run: Run, refused: bool) -> dict[str, float] | None:
    """The verdict's predicted step (seconds, band); none for a refused config (a layout the preflight refuses is
    not one to time) or one the model cannot time (InputError names why in the plan)."""
    if refused:
        return None
    try:
        t = predicted_step(run)
    except InputError:
        return None
    return {"seconds": round(t.total, 1), "low": round(t.low, 1), "high": round(t.high, 1)}


def run_dir_of(output_dir: str | None) -> Path:
    """The directory a submission hands to the cluster: Hydra's output dir (the cwd only outside Hydra)."""
    return Path(output_dir or ".").resolve()


def run_job(composed: DictConfig, choices: dict[str, str], output_dir: str | None, record: bool = True) -> bool:
    """The Hydra task: the composed config becomes one read-only `Run`, checked, then planned or launched.
    False when the preflight refused the config in a sweep (alone, PreflightRefused is raised).

    `record=False` (a dry run composed in-process, cli/dry_run.py): `output_dir` is not made by Hydra; a dry run
    that passes makes it and keeps its verdict.json there (no `.hydra/`), a refused one leaves nothing."""
    run, broken = build_run(composed, choices, output_dir, sweep_tag=job_tag() if in_multirun() else None)
    cfg, mode = run.config, run.mode
    kept = output_dir if record else None
    if broken:
        report(broken, kept, mode)
        return refused(len(broken))
    found = problems(run)
    errors = [p for p in found if p.level == "error"]
    if not record and not errors and output_dir:
        kept = made_run_dir(output_dir)
    report(found, kept, mode, *memory_or_none(run, bool(errors)), step_or_none(run, bool(errors)))
    if mode != "launch":
        lines = plan_or_why_not(run, bool(errors))
        say(redact("\n".join(lines if record else [unmade(line, kept is not None) for line in lines])))
        if not errors:
            for name, value in from_shell(cfg).items():
                say(redact(f"env        {name}={value} (from your shell; config says {cfg.env.set[name]})"))
    if not errors:  # every place the run writes outside its run directory, whoever chose it (a preset too)
        for line in writes_lines(cfg, output_dir):
            say(redact(line))
    planned = planned_mcore(cfg)[0]  # plan.megatron_core, when given and usable
    say(
        rules_line(run.device, planned, verl_in_use(cfg)), file=sys.stderr if errors else sys.stdout
    )  # what the rules assumed
    for note in deprecation_notes(cfg) + startup_rewrites(cfg)[0]:
        say(redact(f"note       {note}"), file=sys.stderr if errors else sys.stdout)
    if errors:
        return refused(len(errors))
    if mode != "launch":
        say(f"verdict    OK ({len(found)} warning(s)): dry run, nothing launched")
    if submitting(cfg):  # Hydra always gives a run its output dir; the cwd only outside Hydra
        submit_run(cfg, str(run_dir_of(output_dir)), choices.get("verl_schema"), dry=mode != "launch")
        return True
    if mode != "launch":
        return True
    if output_dir:
        write_launch_file(cfg, output_dir, choices.get("verl_schema"))
        say(f"relaunch   verl-qwen35 relaunch {output_dir}", file=sys.stderr)
    launch_now(cfg, run_dir=output_dir)
    return True


def made_run_dir(output_dir: str) -> str:
    """A passing in-process dry run's directory, made as Hydra's run_job makes one (its last part is new: the
    default name ends in a random tag)."""
    try:
        Path(output_dir).mkdir(parents=True)
    except OSError as err:
        raise UserError(f"hydra.run.dir={output_dir}: cannot be made ({err.strerror or err})") from None
    return output_dir


def unmade(line: str, made: bool) -> str:
    """The plan's `outputs` line of a dry run composed in-process: what it kept, or that a refusal left nothing."""
    if not line.startswith("outputs "):
        return line
    if made:
        return f"{line} (the dry run's verdict.json; hydra.run.dir=DIR keeps its .hydra/ too)"
    return f"{line} (not made: a refused dry run leaves nothing)"


def submit_run(cfg: DictConfig, output_dir: str, schema: str | None, dry: bool) -> None:
    """Submit the run directory with its launch.yaml (submit=<backend>); the job id goes to verdict.json."""
    try:
        job_id = submit(cfg, Path(output_dir), dry, lambda: write_launch_file(cfg, output_dir, schema))
    except SubmitError as err:
        if in_multirun():  # the sweep records the reason as this job's verdict and goes on
            raise UserError(f"[submit] {err}") from None
        say(f"ERROR   [submit] {err}", file=sys.stderr)
        raise LaunchRefused(2) from None
    note_submitted(cfg, output_dir, job_id)


def report(
    found: list[Problem],
    output_dir: str | None,
    mode: str,
    memory: dict[str, Any] | None = None,
    headroom: list[Problem] = (),
    step: dict[str, float] | None = None,
) -> None:
    """The verdict file (for sweeps and people) and every problem on stderr."""
    if output_dir:
        write_verdict(output_dir, mode, found, memory=memory, headroom=headroom, step=step)
    for problem in found:
        say(redact(str(problem)), file=sys.stderr)


def refused(errors: int) -> bool:
    say(f"verdict    REFUSED: {errors} error(s), nothing launched", file=sys.stderr)
    if not in_multirun():
        raise PreflightRefused(2)
    return False  # in a sweep the next job runs; SweepSummary reports and sets the exit code


def launch_now(cfg: DictConfig, use_shell_env: bool = True, run_dir: str | Path | None = None) -> None:
    """verl's launch in the job's environment; its whole console also kept as `run_dir`/job.out (console_copy)."""
    from verl_qwen35.run.launch import launch  # imports verl, torch and Ray

    cfg = writable(cfg)  # verl's main_ppo edits its config (auto_set_device); a Run's is read-only
    with console_copy(run_dir), job_environment(cfg, use_shell_env):
        if "file" in backends(cfg) and os.environ.get("VERL_FILE_LOGGER_PATH"):
            keep_file_history(os.environ["VERL_FILE_LOGGER_PATH"])  # launch and relaunch alike
        launch(cfg)
