"""`python -m verl_qwen35 device=npu model=122b`: compose with Hydra, check, launch verl."""

import sys

import hydra
from omegaconf import DictConfig

from verl_qwen35 import cli_help
from verl_qwen35.choices import ChoiceError, check_choices, implicit_overrides
from verl_qwen35.paths import conf_dir


@hydra.main(config_path=str(conf_dir()), config_name="config", version_base=None)
def _hydra_main(cfg: DictConfig) -> None:
    from verl_qwen35.app import run  # here, so `--cfg`, `--help` and `--info` do not load the checks

    run(cfg)


# Hydra's flags that take a value; `--info` takes one only when it names what to show.
_VALUE_FLAGS = {
    "--config-dir",
    "-cd",
    "--config-path",
    "-cp",
    "--config-name",
    "-cn",
    "--cfg",
    "-c",
    "--package",
    "-p",
    "--experimental-rerun",
}
_OPTIONAL_VALUE_FLAGS = {"--info", "-i"}


def _split_argv(argv: list[str]) -> tuple[list[str], list[str], list[str]]:
    """(Hydra flags with their values, overrides, --config-dir values)."""
    flags: list[str] = []
    overrides: list[str] = []
    config_dirs: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        i += 1
        if not arg.startswith("-"):
            overrides.append(arg)
            continue
        flags.append(arg)
        name, has_value, value = arg.partition("=")
        if not has_value and i < len(argv):
            following = argv[i]
            if name in _VALUE_FLAGS or (
                name in _OPTIONAL_VALUE_FLAGS and "=" not in following and not following.startswith("-")
            ):
                flags.append(following)
                value, i = following, i + 1
        if name in ("--config-dir", "-cd") and value:
            config_dirs.append(value)
    return flags, overrides, config_dirs


def main() -> None:
    if cli_help.handled(sys.argv[1:], _hydra_main):  # --help, --presets, --help-full, shell completion
        return
    flags, overrides, config_dirs = _split_argv(sys.argv[1:])
    try:
        overrides = implicit_overrides(overrides)
        check_choices(overrides, config_dirs)
    except (ChoiceError, RuntimeError, ModuleNotFoundError) as err:
        print(f"verl_qwen35: {err}", file=sys.stderr)
        sys.exit(2)
    sys.argv = [sys.argv[0], *flags, *overrides]
    _hydra_main()


if __name__ == "__main__":
    main()
