"""`python -m verl_qwen35 device=npu model=122b`: compose with Hydra, check, launch verl.

Before Hydra runs (and writes `.hydra/`), the command line is read with Hydra's own parsers
and checked: group choices, secrets, `--config-dir` files, HOME. Hydra's own errors are
raised to `errors.answered` (HYDRA_FULL_ERROR), which answers them with one message, exit 2.
"""

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import hydra
from omegaconf import DictConfig
from omegaconf.errors import InterpolationResolutionError

from verl_qwen35 import cli_help, collector
from verl_qwen35.choices import check_choices, implicit_overrides
from verl_qwen35.cmdline import CommandLine, parse_command_line
from verl_qwen35.errors import UserError, answered
from verl_qwen35.paths import conf_dir
from verl_qwen35.secret_scan import check_overrides
from verl_qwen35.sections import TOP_LEVEL
from verl_qwen35.user_conf import check_config_dirs

HOME_READERS = ("data.train_files", "data.val_files")  # conf/config.yaml: ${oc.env:HOME}/data/geo3k/...


@hydra.main(config_path=str(conf_dir()), config_name="config", version_base=None)
def _hydra_main(cfg: DictConfig) -> None:
    from verl_qwen35.app import run  # here, so `--cfg`, `--help` and `--info` do not load the checks

    run(cfg)


def _sweep_interrupted() -> None:
    from verl_qwen35.sweep import interrupted  # only a sweep has anything to summarize

    interrupted()


def _check_home(line: CommandLine) -> None:
    given = {o.key_or_group for o in line.overrides}
    if not os.environ.get("HOME") and not all(key in given for key in HOME_READERS):
        raise UserError(
            "HOME is not set, and data.train_files / data.val_files default to $HOME/data/geo3k/...: "
            "export HOME=/path/to/home, or set data.train_files=... and data.val_files=..."
        )


def _check_sections_kept(line: CommandLine) -> None:
    """`data=null` would drop a whole section (and Hydra, for verl's groups, fails on it with a ValueError)."""
    for override in line.overrides:
        if override.key_or_group in TOP_LEVEL and not override.is_delete() and override.value() is None:
            raise UserError(
                f"{override.input_line}: removes the whole {override.key_or_group} section that the checks and verl "
                f"read; set keys inside it instead ({override.key_or_group}.KEY=VALUE)"
            )


def prepare(argv: list[str], announce: bool = True) -> CommandLine:
    """The command line, parsed once and checked before Hydra writes anything."""
    line = parse_command_line(argv)
    if line.args.hydra_help or line.args.shell_completion:  # Hydra's own config, not ours
        return line
    line.overrides = implicit_overrides(line.overrides, announce=announce)
    check_choices(line.overrides, line.config_dirs)
    check_overrides(line.overrides)
    check_config_dirs(line.overrides, line.config_dirs)
    _check_home(line)
    _check_sections_kept(line)
    return line


@contextmanager
def hydra_errors_raised() -> Iterator[None]:
    """Let Hydra's errors propagate to us instead of being printed with exit 1."""
    previous = os.environ.get("HYDRA_FULL_ERROR")
    os.environ["HYDRA_FULL_ERROR"] = "1"
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop("HYDRA_FULL_ERROR", None)


@contextmanager
def interpolation_named_by_override(line: CommandLine) -> Iterator[None]:
    """Hydra's own printing (`--cfg job --resolve`) resolves without naming the key that failed; when
    one override holds an interpolation, it is the one to name."""
    try:
        yield
    except InterpolationResolutionError as err:
        written = [o for o in line.overrides if "${" in (o.input_line or "")]
        if getattr(err, "full_key", None) or len(written) != 1:
            raise
        raise UserError(f"{written[0].key_or_group}: {str(err).splitlines()[0]}") from None


def main() -> None:
    if cli_help.handled(sys.argv[1:], _hydra_main):  # --help, --presets, --help-full, shell completion
        return
    collector.tune_for_composing()
    try:
        # A user who sets HYDRA_FULL_ERROR asks for Hydra's tracebacks; everyone else gets one message.
        with answered(full_error="HYDRA_FULL_ERROR" in os.environ, on_interrupt=_sweep_interrupted):
            line = prepare(sys.argv[1:])
            sys.argv = [sys.argv[0], *line.argv()]
            with hydra_errors_raised(), interpolation_named_by_override(line):
                _hydra_main()
    finally:
        collector.restore_python_defaults()  # main() may run inside another program (tests)


if __name__ == "__main__":
    main()
