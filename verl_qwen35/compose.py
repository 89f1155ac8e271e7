"""Compose the job config in-process, exactly as the entrypoint would (for diff and tests)."""

from collections.abc import Sequence
from pathlib import Path

from hydra import compose as hydra_compose
from hydra import initialize_config_dir
from omegaconf import DictConfig

from verl_qwen35.checks.parity import link_patch
from verl_qwen35.choices import check_choices, implicit_overrides
from verl_qwen35.cmdline import parse_overrides
from verl_qwen35.paths import conf_dir, verl_config_dir
from verl_qwen35.secret_scan import check_overrides
from verl_qwen35.user_conf import check_config_dirs


def compose(overrides: Sequence[str] = (), announce: bool = False, config_dirs: Sequence[Path] = ()) -> DictConfig:
    """The job config (without the `hydra` node) for these command-line overrides.

    `config_dirs`: what `--config-dir DIR` adds on the entrypoint's command line, checked the same
    way (user_conf) and put on Hydra's search path after ours and verl's."""
    full = implicit_overrides(parse_overrides(list(overrides)), announce=announce)
    dirs = [Path(d) for d in config_dirs]
    check_choices(full, dirs)
    check_overrides(full)
    lines = [o.input_line for o in full]
    if dirs:
        check_config_dirs(full, dirs)
        # conf/config.yaml's searchpath (verl's configs), then the user's directories.
        paths = [f"cachedfile://{verl_config_dir()}", *(f"file://{d.resolve()}" for d in dirs)]
        lines.append(f"hydra.searchpath=[{','.join(paths)}]")
    with initialize_config_dir(str(conf_dir()), version_base=None, job_name="verl_qwen35"):
        cfg = hydra_compose("config", overrides=lines)
    link_patch(cfg)  # `megatron.<any key>` reaches actor and ref, as in the entrypoint
    return cfg
