"""Launch a run's exact resolved config again.

The run directory's launch.yaml is the resolved config that was launched, with the
environment it really used, so later edits to conf/ or another shell do not change it;
its checkpoint directory is absolute, so verl resumes from it from any working directory.
A record sets what the run executes (LD_PRELOAD, reward function paths, `_target_`s): one that
someone else can write, or replace in its directory, is refused unless `trust_shared`, and a
Slurm job's relaunch checks the sha256 its job.sbatch pinned at submission.
"""

import os
import sys
from pathlib import Path

from omegaconf.errors import ConfigAttributeError, ConfigKeyError

from verl_qwen35.builder.build import build_run
from verl_qwen35.checks import preflight
from verl_qwen35.checks.sections import structure_problems
from verl_qwen35.errors import UserError
from verl_qwen35.records.launch import LAUNCH_FILE, digest, read_launch_file
from verl_qwen35.records.private_files import writable_by_others
from verl_qwen35.run.environment import effective_env
from verl_qwen35.run.job import launch_now
from verl_qwen35.run.launch_record import shared_storage_warning
from verl_qwen35.run.machine import launch_problems, runtime_problems
from verl_qwen35.terminal import say


def _launch_file(target: Path) -> Path:
    path = target / LAUNCH_FILE if target.is_dir() else target
    if not path.is_file():
        raise UserError(f"{path} does not exist (a launched run's output directory holds {LAUNCH_FILE})")
    return path


def trusted(path: Path, trust_shared: bool = False) -> None:
    """Refuse (or, trusting a shared directory, warn about) a record that another user could have written."""
    why = [w for w in (writable_by_others(path), writable_by_others(path.absolute().parent)) if w]
    if not why:
        return
    said = "; ".join(why)
    if not trust_shared:
        raise UserError(
            f"{said}, so someone else may have changed what this run executes (LD_PRELOAD, reward "
            f"functions, _target_s); check the file, then `chmod go-w {path} {path.absolute().parent}`, "
            "or relaunch with --trust-shared"
        )
    say(f"WARNING relaunch: {said}; going on as asked (--trust-shared)", file=sys.stderr)


def pinned(path: Path, expected: str) -> None:
    """The record is the one its Slurm job was submitted with (job.sbatch's LAUNCH_DIGEST)."""
    if (found := digest(path)) != expected.lower():
        raise UserError(
            f"{path}: changed since it was submitted (sha256 {found}, the job pinned {expected}); nothing was "
            "started. Submit the run again to launch the record as it is now"
        )


def relaunch(target: Path, trust_shared: bool = False, expected_digest: str | None = None) -> int:
    path = _launch_file(target)
    trusted(path, trust_shared)
    if expected_digest is not None:
        pinned(path, expected_digest)
    cfg, meta = read_launch_file(path)
    if broken := structure_problems(cfg):  # a hand-edited or cut-off record
        lacking = ", ".join(p.keys[0] for p in broken)
        raise UserError(f"{path}: the recorded config lacks {lacking}; launch again to write a whole one")
    try:
        run = build_run(cfg, mode="launch")[0]  # the record's own values: the builder links and resolves a copy
        errors = [p for p in preflight(run) + runtime_problems("launch") if p.level == "error"]
    except (ConfigAttributeError, ConfigKeyError) as err:
        raise UserError(
            f"{path}: the recorded config lacks {err.full_key}; launch again to write a whole one"
        ) from None
    errors = errors or [p for p in launch_problems(cfg) if p.level == "error"]
    for problem in errors:
        say(problem, file=sys.stderr)
    if errors:
        return 2
    for name, value in effective_env(cfg, {}).items():
        if name in os.environ and os.environ[name] != value and value:
            say(f"relaunch: {name}: the recorded value is used, not this shell's", file=sys.stderr)
    missing = [name for name in meta.get("secrets_not_recorded") or [] if name not in os.environ]
    if missing:
        say(f"relaunch: not exported here (they were at launch): {', '.join(missing)}", file=sys.stderr)
    if warning := shared_storage_warning(cfg):
        say(warning, file=sys.stderr)
    say(f"relaunch: resuming from {cfg.trainer.default_local_dir}", file=sys.stderr)
    # A submitted job's relaunch (--digest) has its scheduler's log: slurm-<id>.out, `ray job logs`.
    launch_now(cfg, use_shell_env=False, run_dir=None if expected_digest else path.parent)
    return 0
