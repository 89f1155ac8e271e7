"""`verl-qwen35`: the one command. Compose with Hydra, check, then plan (dry run), launch or submit.

`verl-qwen35 SUBCOMMAND ...` runs a side tool (diff, estimate, plan, doctor, relaunch, data, presets);
anything else is Hydra's command line for the run itself. The checks that must pass before Hydra
writes `.hydra/` run in Hydra's own callback (conf/config.yaml, `compose/prewrite.py`).
"""

import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import hydra
from omegaconf import DictConfig

from verl_qwen35.cli import data, diff, doctor, estimate, help, plan, relaunch
from verl_qwen35.cli.answers import answered
from verl_qwen35.config.choices import implicit_overrides
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
    flags; the filled-in ones join that run: before the first override, or at the end when none."""
    added = implicit_overrides(argv)
    after_value_flag = {i + 1 for i, arg in enumerate(argv) if arg in ("-sc", "--shell-completion")}
    first = next(
        (i for i, arg in enumerate(argv) if "=" in arg and not arg.startswith("-") and i not in after_value_flag),
        len(argv),
    )
    return [*argv[:first], *added, *argv[first:]]


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] in SUBCOMMANDS:
        return SUBCOMMANDS[argv[0]][0](argv[1:])
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
        sys.argv = [sys.argv[0], *with_implicit(argv)]
        with hydra_errors_raised():
            hydra_main()
    return 0


def entry() -> None:
    """The `verl-qwen35` console script."""
    sys.exit(main())
