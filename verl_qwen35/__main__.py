"""`python -m verl_qwen35 device=npu model=122b`: compose with Hydra, check, launch verl."""

import sys

import hydra
from omegaconf import DictConfig

from verl_qwen35.app import run
from verl_qwen35.choices import ChoiceError, check_choices, implicit_overrides
from verl_qwen35.paths import conf_dir


@hydra.main(config_path=str(conf_dir()), config_name="config", version_base=None)
def _hydra_main(cfg: DictConfig) -> None:
    run(cfg)


def _split_argv(argv: list[str]) -> tuple[list[str], list[str], list[str]]:
    """(hydra flags with their values, overrides, --config-dir values)."""
    flags, overrides, config_dirs = [], [], []
    takes_value = {
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
        "--info",
        "-i",
        "--experimental-rerun",
    }
    args = iter(argv)
    for arg in args:
        name = arg.split("=", 1)[0]
        if arg.startswith("-"):
            flags.append(arg)
            if name in takes_value and "=" not in arg:
                value = next(args, None)
                if value is not None:
                    flags.append(value)
                    if name in ("--config-dir", "-cd"):
                        config_dirs.append(value)
            elif name in ("--config-dir", "-cd"):
                config_dirs.append(arg.split("=", 1)[1])
        else:
            overrides.append(arg)
    return flags, overrides, config_dirs


def main() -> None:
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
