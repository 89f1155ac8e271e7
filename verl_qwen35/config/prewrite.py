"""The checks that must pass before Hydra writes `.hydra/` (a secret there is on disk for good).

One function, `check_before_writing`, called by the one composition function (`compose`) and, for
the command, by a Hydra callback on run and multirun start (Hydra's public hook that runs after
composition and before any output directory is made).
"""

import os
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from verl_qwen35.config.choices import check_choices
from verl_qwen35.config.line_breaks import check_line_breaks, check_override_line_breaks
from verl_qwen35.config.overrides import parse_overrides
from verl_qwen35.config.schema import NODES
from verl_qwen35.config.secrets import ADVICE, check_overrides, config_findings
from verl_qwen35.config.sections import TOP_LEVEL
from verl_qwen35.config.user_conf import check_config_dirs
from verl_qwen35.errors import UserError
from verl_qwen35.installed import conf_dir


def check_before_writing(overrides: Sequence[str], config_dirs: Sequence[Path], job: DictConfig | None) -> None:
    """Group choices, secrets in the overrides and in `--config-dir` files, whole sections kept;
    `job` (the composed config, None for a sweep) is scanned for secrets too, all but Hydra's `hydra` node."""
    parsed = parse_overrides(list(overrides))
    check_choices(parsed, config_dirs)
    check_overrides(parsed)
    check_override_line_breaks(parsed)
    check_config_dirs(parsed, list(config_dirs))
    for override in parsed:
        if override.key_or_group in TOP_LEVEL and not override.is_delete() and override.value() is None:
            raise UserError(
                f"{override.input_line}: removes the whole {override.key_or_group} section that the checks and verl "
                f"read; set keys inside it instead ({override.key_or_group}.KEY=VALUE)"
            )
    if job is not None:
        missing_values(job)
        nested_values(job)
        check_line_breaks(job, leave_out=(HYDRA,))
        for key, why in config_findings(job, leave_out=(HYDRA,)):
            raise UserError(f"{key}: {why}; refused before anything was written. Instead, {ADVICE}.")


HYDRA = "hydra"  # Hydra's own node of a composed config: not the job's values


def missing_values(job: DictConfig) -> None:
    """The schema's mandatory keys (`parallel.nnodes`, the model facts, ...) that no preset or override set:
    OmegaConf composes `???` and would only fail at the first read, naming a verl key that interpolates it."""
    for node in NODES:
        if not OmegaConf.is_dict(job.get(node)):
            continue
        raw = OmegaConf.to_container(job[node], resolve=False)  # `???` kept as written, nothing resolved
        if missing := sorted(key for key, value in raw.items() if value == "???"):
            keys = ", ".join(f"{node}.{key}" for key in missing)
            where = f"your {node}/<name>.yaml" if (conf_dir() / node).is_dir() else "a preset"
            one = len(missing) == 1
            raise UserError(
                f"{keys} {'is' if one else 'are'} missing: mandatory in the {node} schema (no default); set "
                f"{'it' if one else 'them'} in {where} or on the command line ({node}.{missing[0]}=VALUE)"
            )


def nested_values(job: DictConfig) -> None:
    """Our nodes assigned key by key into a fresh schema: OmegaConf's merge (how Hydra applies a preset or
    `env.unset=[[a]]`) leaves the elements of a typed list or dict unchecked, an assignment checks them."""
    for node, schema in NODES.items():
        if not OmegaConf.is_dict(job.get(node)):
            continue
        fresh = OmegaConf.structured(schema)
        for key, value in OmegaConf.to_container(job[node], resolve=False).items():
            try:
                fresh[key] = value
            except OmegaConfBaseException as err:
                where = getattr(err, "full_key", None) or key
                raise UserError(f"{node}.{where}: {str(err).splitlines()[0]}") from None


def user_config_dirs(config: DictConfig) -> list[Path]:
    """The `--config-dir` directories of a composed config (Hydra records them as `command-line` sources)."""
    return [
        Path(source.path)
        for source in config.hydra.runtime.config_sources
        if source.provider == "command-line" and source.schema == "file"
    ]


class Refused(BaseException):
    """What a pre-write check raised, on its way out of Hydra's callback.

    Hydra turns an `Exception` raised by a callback into a warning and goes on with the run
    (`Callbacks._notify`), which would write `.hydra/` anyway; a `BaseException` passes through it,
    and the command's `answered` unwraps it: a user mistake is one message and exit 2, a bug its traceback."""

    def __init__(self, error: Exception) -> None:
        super().__init__(str(error))
        self.error = error


# The run directory Hydra is about to make (and whether it is new) between the checks and the job's
# start: a write that fails there (a full disk) leaves a half-written `.hydra/`, which `discard_unstarted_run`
# removes when this run made the directory.
_unstarted: list[tuple[Path, bool]] = []


def discard_unstarted_run() -> tuple[Path, bool] | None:
    """The run (or sweep) directory of a run whose job never started, and whether it was removed: it is
    when this run made it; one that was there before is left as it is (its `.hydra/` may be partial)."""
    if not _unstarted:
        return None
    path, fresh = _unstarted.pop()
    if fresh and path.is_dir():
        shutil.rmtree(path, ignore_errors=True)
    return path, fresh


SWEEP_MARKS = ("multirun.yaml", ".sweep.lock")  # what a sweep leaves in its directory (run/sweep.py, sweep_lock.py)


def claim_run_dir(config: DictConfig) -> None:
    """Claim `hydra.run.dir` for this run alone: its `.hydra/` made here, exclusively (mkdir is atomic), before
    Hydra writes into it. A second run given the same directory (at once, or later) is refused instead of
    mixing its records with the first's; one that exists without a run's records (a fresh or empty directory
    a user made) is taken."""
    try:
        run_dir = Path(str(OmegaConf.select(config, "hydra.run.dir"))).absolute()
    except Exception:  # noqa: BLE001 - an interpolation Hydra's run_job names itself
        return
    subdir = OmegaConf.select(config, "hydra.output_subdir", default=None) or ".hydra"
    fresh = not run_dir.exists()
    if sweep := next((name for name in SWEEP_MARKS if os.path.lexists(run_dir / name)), None):
        raise UserError(
            f"hydra.run.dir={run_dir}: is a sweep's directory ({sweep}; hydra.sweep.dir of an earlier or a running "
            "sweep); a run never writes among a sweep's jobs. Give the run its own directory (leave hydra.run.dir "
            "out: the default ends in a random tag)"
        )
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
        (run_dir / subdir).mkdir()
    except FileExistsError:
        raise UserError(
            f"hydra.run.dir={run_dir}: already holds a run's records ({subdir}/), of an earlier or a concurrent "
            "run; give each run its own directory (leave hydra.run.dir out: the default ends in a random tag), or "
            "go on with that run: verl-qwen35 relaunch RUN_DIR"
        ) from None
    except OSError as err:
        raise UserError(f"hydra.run.dir={run_dir}: cannot be made ({err.strerror or err})") from None
    _unstarted.clear()
    _unstarted.append((run_dir, fresh))


def _note_unstarted(config: DictConfig, key: str) -> None:
    _unstarted.clear()
    try:  # `${now:}` resolves once per config (Hydra's resolver caches), as Hydra's run_job reads it
        path = Path(str(OmegaConf.select(config, key))).absolute()
    except Exception:  # noqa: BLE001 - an interpolation Hydra's run_job names itself
        return
    _unstarted.append((path, not path.exists()))


class PrewriteChecks(Callback):
    """conf/config.yaml's `hydra.callbacks`: the checks above, before Hydra makes a run or sweep directory."""

    def on_run_start(self, config: DictConfig, **kwargs: Any) -> None:
        try:
            check_before_writing(command_line(config), user_config_dirs(config), config)  # no copy without `hydra`
            claim_run_dir(config)
        except Exception as err:
            raise Refused(err) from err

    def on_job_start(self, config: DictConfig, **kwargs: Any) -> None:
        _unstarted.clear()  # `.hydra/` is whole: from here on the run directory is the job's

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        # Each job's own config is composed later, job by job; the overrides hold every swept value, and the
        # user's files were all scanned. The sweep's own config is saved whole as multirun.yaml: scanned too.
        try:
            check_before_writing(command_line(config), user_config_dirs(config), None)
            for key, why in config_findings(config, leave_out=(HYDRA,)):
                raise UserError(f"{key}: {why}; refused before anything was written. Instead, {ADVICE}.")
        except Exception as err:
            raise Refused(err) from err
        _note_unstarted(config, "hydra.sweep.dir")  # multirun.yaml and the first job's .hydra/ come next


def command_line(config: DictConfig) -> list[str]:
    """Every override of the command line: `hydra.*` ones too (`hydra.job.env_set.X` lands in .hydra/hydra.yaml)."""
    given = OmegaConf.to_container(config.hydra.overrides, resolve=False)  # as typed: `x=${oc.env:Y}` unresolved
    assert isinstance(given, dict)
    return [*given["hydra"], *given["task"]]
