"""`verl-qwen35`: the one command. Compose with Hydra, check, then plan (dry run), launch or submit.

`verl-qwen35 SUBCOMMAND ...` runs a side tool (diff, estimate, plan, doctor, relaunch, report, calibrate, data,
presets); anything else is Hydra's command line for the run itself. The checks that must pass before Hydra
writes `.hydra/` run in Hydra's own callback (conf/config.yaml, `config/prewrite.py`).
"""

import errno
import io
import itertools
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager, redirect_stdout
from importlib import import_module
from pathlib import Path

import hydra
from hydra.core.override_parser.types import Override
from hydra.errors import ConfigCompositionException
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import InterpolationResolutionError, OmegaConfBaseException

from verl_qwen35.cli import help
from verl_qwen35.cli.answers import PROG, answered
from verl_qwen35.cli.dry_run import run_in_process
from verl_qwen35.config import compose
from verl_qwen35.config.choices import implicit_overrides
from verl_qwen35.config.errors import resolve_naming_key
from verl_qwen35.config.overrides import check_bounds, parse_overrides, refused_together, typed_override_errors
from verl_qwen35.config.prewrite import check_before_writing, discard_unstarted_run
from verl_qwen35.config.resolvers import register_resolvers
from verl_qwen35.config.schema import register_schema
from verl_qwen35.config.secrets import findings, override_value, redact_config_text, shell_secrets
from verl_qwen35.config.sources import register_sources
from verl_qwen35.config.user_conf import check_config_dirs, scanned_once
from verl_qwen35.errors import UserError
from verl_qwen35.installed import conf_dir
from verl_qwen35.run.stops import stops_deferred
from verl_qwen35.run.sweep import guarded_job, in_multirun, interrupted, released_when_done
from verl_qwen35.terminal import safe


def _subcommand(module: str) -> Callable[[list[str]], int]:
    """`verl_qwen35.cli.<module>.main`, imported when that subcommand runs (a run imports none of them)."""

    def main(argv: list[str]) -> int:
        return import_module(f"verl_qwen35.cli.{module}").main(argv)

    return main


# name -> (main, one line for --help); each main takes its own argv and returns the exit code.
SUBCOMMANDS: dict[str, tuple[Callable[[list[str]], int], str]] = {
    "diff": (_subcommand("diff"), "diff A B [--format markdown|json]   compare two configs key by key"),
    "estimate": (_subcommand("estimate"), "estimate OVERRIDES [--format json]  device memory estimate of a config"),
    "plan": (_subcommand("plan"), "plan OVERRIDES [--top N] [--sweep DIR]  rank the layouts that fit"),
    "doctor": (_subcommand("doctor"), "doctor [device=gpu|npu]              check this machine's software stack"),
    "relaunch": (_subcommand("relaunch"), "relaunch RUN_DIR                     launch a run's exact config again"),
    "report": (
        _subcommand("report"),
        "report RUN_DIR [--out DIR] [--json]  a run's metrics, plots, predicted vs measured",
    ),
    "calibrate": (
        _subcommand("calibrate"),
        "calibrate RUN_DIR... [--out FILE]     fit the step-time model to your runs' phases",
    ),
    "data": (_subcommand("data"), "data --out DIR                       fetch the geo3k parquet files once"),
    "import": (
        _subcommand("import_script"),
        "import SCRIPT [--device gpu|npu] [--out DIR]  a launch script as a preset",
    ),
    "presets": (help.presets_main, "presets [--config-dir DIR]           models, devices, layouts, tunings"),
}


@hydra.main(config_path=str(conf_dir()), config_name="config", version_base=None)
def hydra_main(cfg: DictConfig) -> None:
    """The job Hydra runs: in a sweep nothing a job raises may end the sweep or lose its summary.

    The job's modules (checks, planner, run) are imported here: `--cfg job` and `--help` never run it."""
    from verl_qwen35.cli.picture import job_and_picture
    from verl_qwen35.run.job import MODES, job_context

    choices, output_dir = job_context()
    if in_multirun() and output_dir:
        value = cfg.get("dry_run")
        mode = MODES.get(value, "?") if isinstance(value, bool | str) else "?"
        guarded_job(lambda: job_and_picture(cfg, choices, output_dir), output_dir, mode)
    else:
        with answered():  # inside the job, so that Hydra adds no "Error executing job" line of its own
            job_and_picture(cfg, choices, output_dir)


@contextmanager
def hydra_errors_raised() -> Iterator[None]:
    """Let Hydra's errors propagate to `answered` instead of being printed with exit 1."""
    previous = os.environ.get("HYDRA_FULL_ERROR")
    os.environ["HYDRA_FULL_ERROR"] = "1"
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop("HYDRA_FULL_ERROR", None)


def with_implicit(argv: list[str]) -> list[str]:
    """argv with `device` and `verl_schema` filled in when not given, beside the user's own overrides.

    Hydra's command line (argparse) takes its overrides as one run of arguments, before or after the
    flags; the filled-in ones join that run: before the first override, or before the flags when none
    (at the end, a flag with an optional value, `--info`, would take them for its value)."""
    added = implicit_overrides(argv, config_dirs=help.config_dirs(argv))
    first = _first_override(argv)
    if first == len(argv):
        return [*added, *argv]
    return [*argv[:first], *added, *argv[first:]]


def _first_override(argv: list[str]) -> int:
    after_value_flag = {i + 1 for i, arg in enumerate(argv) if arg in ("-sc", "--shell-completion")}
    return next(
        (i for i, arg in enumerate(argv) if "=" in arg and not arg.startswith("-") and i not in after_value_flag),
        len(argv),
    )


def overrides_of(argv: list[str]) -> list[str]:
    """The run of overrides in argv, as Hydra's argparse reads them."""
    return list(itertools.takewhile(lambda arg: not arg.startswith("-"), argv[_first_override(argv) :]))


def run_hydra(argv: list[str]) -> None:
    """Hydra's own command line over argv, with the filled-in choices.

    Where composition fails before Hydra's callback runs the pre-write checks (`data=null` is refused by
    Hydra's defaults list, `model=mine` without `parallel/mine_gpu.yaml` is a missing file), the same
    checks name the fault if they can; anything else is raised as it was, for `answered` to explain."""
    sys.argv = [sys.argv[0], *with_implicit(argv)]
    with hydra_errors_raised(), printed_configs_redacted(argv):
        try:
            hydra_main()
        except InterpolationResolutionError as err:
            if getattr(err, "full_key", None) or "--resolve" not in argv:
                raise
            # `--cfg job --resolve`: Hydra resolves the whole config at once, and OmegaConf names no key.
            resolve_naming_key(compose(overrides_of(argv), help.config_dirs(argv)))
            raise
        except (ValueError, ConfigCompositionException):  # OmegaConf's errors are ValueErrors too: after theirs
            check_before_writing(overrides_of(sys.argv[1:]), help.config_dirs(argv), None)
            raise
        except OSError as err:
            if err.errno not in DISK_FULL:
                raise
            # Hydra's run_job writes .hydra/ before our job starts: a full disk (or a file size limit) there.
            where = "while Hydra wrote its output"
            if discarded := discard_unstarted_run():
                run_dir, removed = discarded
                done = "removed, nothing half-written is left" if removed else "it was there before: check its .hydra/"
                where = f"writing the run directory {run_dir} ({done})"
            raise UserError(
                f"{err.strerror or os.strerror(err.errno)} {where}; free space there or choose another "
                "directory with hydra.run.dir=... (hydra.sweep.dir=... for -m)"
            ) from None


DISK_FULL = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)
# Hydra's flags that print the composed config (hydra/_internal/utils.py get_args_parser).
PRINTING_FLAGS = ("--cfg", "-c", "--info", "-i")


@contextmanager
def printed_configs_redacted(argv: list[str]) -> Iterator[None]:
    """`--cfg` and `--info` print the config from inside Hydra, where no callback runs: what they print is
    taken as it comes and shown with secret values masked (config/secrets.py redact_config_text)."""
    if not any(a in PRINTING_FLAGS or a.startswith(("--cfg=", "--info=")) for a in argv):
        yield
        return
    captured = io.StringIO()
    try:
        with redirect_stdout(captured):
            yield
    finally:
        sys.stdout.write(safe(secret_overrides_masked(redact_config_text(captured.getvalue()), argv)))


def secret_overrides_masked(text: str, argv: list[str]) -> str:
    """Hydra prints the overrides themselves too (`hydra.overrides.task`, `hydra.job.override_dirname`), as
    typed: each one that puts a secret into the config (the check a run refuses it by) is shown `KEY=<redacted>`."""
    shell = shell_secrets()
    for arg in argv:
        if "=" not in arg or arg.startswith("-"):
            continue
        try:
            (override,) = parse_overrides([arg])
        except UserError:  # not an override (a flag's value): Hydra's parser answers it
            continue
        key = override.key_or_group if override.package is None else f"{override.key_or_group}@{override.package}"
        if not override.is_delete() and next(findings(key, override_value(override), shell), None):
            typed = arg.split("=", 1)[0]
            text = text.replace(arg, f"{typed}=<redacted>")
    return text


def not_utf8(argv: list[str]) -> None:
    """An argument with bytes that are not UTF-8 (Python keeps them as surrogates) would fail when Hydra
    writes .hydra/overrides.yaml, after it made the run directory: refused first, naming it."""
    for arg in argv:
        try:
            arg.encode("utf-8")
        except UnicodeEncodeError:
            shown = arg.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
            raise UserError(
                f"the argument `{shown}` holds bytes that are not UTF-8 text; write it in UTF-8 "
                "(iconv -t utf-8) or move the value into a --config-dir file"
            ) from None


def user_search_dirs(argv: list[str]) -> list[Path]:
    """`--config-dir` and `--config-path` (relative to this script's directory, as Hydra reads it) values;
    a `--config-path` that is not a directory is left to Hydra's own message."""
    dirs = help.config_dirs(argv)
    for i, arg in enumerate(argv[:-1]):
        if arg in ("--config-path", "-cp") and (path := Path(__file__).resolve().parent / argv[i + 1]).is_dir():
            dirs.append(path)
    return dirs


def refuse_typed_overrides(overrides: list[Override], argv: list[str]) -> None:
    """The overrides our typed nodes' schema refuses, with the values of the wrong kind among the others (verl's
    keys, composed without the refused ones: a type is judged alone, no rule reads the stand-in), in one message."""
    refused = typed_override_errors(overrides)
    if not refused:
        return
    lines = {line for line, _ in refused}
    rest = [o.input_line for o in overrides if o.input_line and o.input_line not in lines]
    reasons = [why for _, why in refused]
    try:
        cfg = compose([line for line in rest if not line.lstrip("+~").startswith("hydra.")], help.config_dirs(argv))
        OmegaConf.resolve(cfg)
    except UserError as err:
        reasons.append(str(err))
    except OmegaConfBaseException:
        pass  # an interpolation that cannot resolve: named once these are fixed
    else:
        from verl_qwen35.checks.verdict import bad_value_problems  # the error path only

        reasons += [
            f"{', '.join(p.keys)}{'' if p.message[:1] == '=' else ': '}{p.message}" for p in bad_value_problems(cfg)
        ]
    raise refused_together(reasons)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    with answered():
        not_utf8(argv)
        check_bounds(argv)  # before Hydra's grammar or a subcommand parses any: nesting and length
    if argv and argv[0] in SUBCOMMANDS:
        with answered(f"{PROG} {argv[0]}"):
            code = SUBCOMMANDS[argv[0]][0](argv[1:])
            sys.stdout.flush()  # a closed pipe (`| head`) is answered here, not at the interpreter's exit
        return code
    register_resolvers()
    register_schema()
    register_sources()
    with answered():  # a --config-dir file beyond the loader's limits, listed by --presets
        if help.handled(argv, hydra_main, [usage for _, usage in SUBCOMMANDS.values()]):  # --help, --presets, ...
            return 0
    # A user who sets HYDRA_FULL_ERROR asks for Hydra's tracebacks; everyone else gets one message.
    # Ctrl-C and SIGTERM (scancel, `timeout`) stop the run or sweep between jobs: the sweep's summary, exit 130/143.
    answer = answered(full_error="HYDRA_FULL_ERROR" in os.environ, on_interrupt=interrupted)
    with answer, stops_deferred(), released_when_done(), scanned_once():
        # Every file the user adds to the search path: size and alias limits and secrets, before Hydra parses any.
        overrides = parse_overrides(overrides_of(argv))
        check_config_dirs(overrides, user_search_dirs(argv))
        if not {"-m", "--multirun"} & set(argv):  # a sweep's jobs are refused one by one, in its summary
            refuse_typed_overrides(overrides, argv)  # every schema refusal at once; Hydra stops at the first
            filled = with_implicit(argv)
            with hydra_errors_raised():
                if run_in_process(filled):  # a plain dry run: composed once, no run directory
                    return 0
            argv = filled
        run_hydra(argv)
    return 0
