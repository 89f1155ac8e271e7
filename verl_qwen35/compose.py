"""Compose the job config in-process, exactly as the entrypoint would (for diff and tests)."""

from collections.abc import Sequence

from hydra import compose as hydra_compose
from hydra import initialize_config_dir
from omegaconf import DictConfig

from verl_qwen35.choices import check_choices, implicit_overrides
from verl_qwen35.cmdline import parse_overrides
from verl_qwen35.paths import conf_dir
from verl_qwen35.secret_scan import check_overrides


def compose(overrides: Sequence[str] = (), announce: bool = False) -> DictConfig:
    """The job config (without the `hydra` node) for these command-line overrides."""
    full = implicit_overrides(parse_overrides(list(overrides)), announce=announce)
    check_choices(full)
    check_overrides(full)
    with initialize_config_dir(str(conf_dir()), version_base=None, job_name="verl_qwen35"):
        return hydra_compose("config", overrides=[o.input_line for o in full])
