"""`verl-qwen35`: the one command. Compose with Hydra, check, then plan (dry run), launch or submit.

`verl-qwen35 SUBCOMMAND ...` runs a side tool (diff, estimate, plan, doctor, relaunch, data, presets);
anything else is Hydra's command line for the run itself. The checks that must pass before Hydra
writes `.hydra/` run in Hydra's own callback (conf/config.yaml, `config/prewrite.py`).
"""

import itertools
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import hydra
from hydra.errors import ConfigCompositionException
from omegaconf import DictConfig
from omegaconf.errors import InterpolationResolutionError

from verl_qwen35.cli import data, diff, doctor, estimate, help, plan, relaunch
from verl_qwen35.cli.answers import PROG, answered
from verl_qwen35.config import compose
from verl_qwen35.config.choices import implicit_overrides
from verl_qwen35.config.errors import resolve_naming_key
from verl_qwen35.config.prewrite import check_before_writing
from verl_qwen35.config.resolvers import register_resolvers
from verl_qwen35.config.schema import register_schema
from verl_qwen35.config.sources import register_sources
from verl_qwen35.config.yaml_files import check_config_dir
from verl_qwen35.installed import conf_dir
from verl_qwen35.run.job import MODES, job_context, run_job
from verl_qwen35.run.sweep import guarded_job, in_multirun, interrupted


def _presets(argv: list[str]) -> int:
    return help.serve_listing([help.PRESETS_FLAG, *argv])


# name -> (main, one line for --help); each main takes its own argv and returns the exit code.
SUBCOMMANDS: dict[str, tuple[Callable[[list[str]], int], str]] = {
    "diff": (diff.main, "diff A B [--format markdown|json]   compare two configs key by key"),
    "estimate": (estimate.main, "estimate OVERRIDES [--format json]  device memory estimate of a config"),
    "plan": (plan.main, "plan OVERRIDES [--top N] [--sweep DIR]  rank the layouts that fit"),
    "doctor": (doctor.main, "doctor [device=gpu|npu]              check this machine's software stack"),
    "relaunch": (relaunch.main, "relaunch RUN_DIR                     launch a run's exact config again"),
    "data": (data.main, "data --out DIR                       fetch the geo3k parquet files once"),
    "presets": (_presets, "presets [--config-dir DIR]           models, devices, layouts, tunings"),
}


@hydra.main(config_path=str(conf_dir()), config_name="config", version_base=None)
def hydra_main(cfg: DictConfig) -> None:
    """The job Hydra runs: in a sweep nothing a job raises may end the sweep or lose its summary."""
    choices, output_dir = job_context()
    if in_multirun() and output_dir:
        value = cfg.get("dry_run")
        mode = MODES.get(value, "?") if isinstance(value, bool | str) else "?"
        guarded_job(lambda: run_job(cfg, choices, output_dir), output_dir, mode)
    else:
        with answered():  # inside the job, so that Hydra adds no "Error executing job" line of its own
            run_job(cfg, choices, output_dir)


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
    with hydra_errors_raised():
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


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] in SUBCOMMANDS:
        with answered(f"{PROG} {argv[0]}"):
            code = SUBCOMMANDS[argv[0]][0](argv[1:])
            sys.stdout.flush()  # a closed pipe (`| head`) is answered here, not at the interpreter's exit
        return code
    register_resolvers()
    register_schema()
    register_sources()
    if help.handled(
        argv, hydra_main, [usage for _, usage in SUBCOMMANDS.values()]
    ):  # --help, --presets, --help-full, shell completion
        return 0
    # A user who sets HYDRA_FULL_ERROR asks for Hydra's tracebacks; everyone else gets one message.
    with answered(full_error="HYDRA_FULL_ERROR" in os.environ, on_interrupt=interrupted):
        for directory in help.config_dirs(argv):
            check_config_dir(directory)  # YAML syntax and size limits, before Hydra parses any of it
        run_hydra(argv)
    return 0


def entry() -> None:
    """The `verl-qwen35` console script."""
    sys.exit(main())
