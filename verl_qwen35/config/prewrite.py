"""The checks that must pass before Hydra writes `.hydra/` (a secret there is on disk for good).

One function, `check_before_writing`, called by the one composition function (`compose`) and, for
the command, by a Hydra callback on run and multirun start (Hydra's public hook that runs after
composition and before any output directory is made).
"""

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf

from verl_qwen35.config.choices import check_choices
from verl_qwen35.config.overrides import parse_overrides
from verl_qwen35.config.secrets import ADVICE, check_overrides, config_findings
from verl_qwen35.config.sections import TOP_LEVEL
from verl_qwen35.config.user_conf import check_config_dirs
from verl_qwen35.errors import UserError


def check_before_writing(overrides: Sequence[str], config_dirs: Sequence[Path], job: DictConfig | None) -> None:
    """Group choices, secrets in the overrides and in `--config-dir` files, whole sections kept;
    `job` (the composed config without its `hydra` node, None for a sweep) is scanned for secrets too."""
    parsed = parse_overrides(list(overrides))
    check_choices(parsed, config_dirs)
    check_overrides(parsed)
    check_config_dirs(parsed, list(config_dirs))
    for override in parsed:
        if override.key_or_group in TOP_LEVEL and not override.is_delete() and override.value() is None:
            raise UserError(
                f"{override.input_line}: removes the whole {override.key_or_group} section that the checks and verl "
                f"read; set keys inside it instead ({override.key_or_group}.KEY=VALUE)"
            )
    if job is not None:
        for key, why in config_findings(job):
            raise UserError(f"{key}: {why}; refused before anything was written. Instead, {ADVICE}.")


def user_config_dirs(config: DictConfig) -> list[Path]:
    """The `--config-dir` directories of a composed config (Hydra records them as `command-line` sources)."""
    return [
        Path(source.path)
        for source in config.hydra.runtime.config_sources
        if source.provider == "command-line" and source.schema == "file"
    ]


def without_hydra(config: DictConfig) -> DictConfig:
    job = OmegaConf.masked_copy(config, [k for k in config if k != "hydra"])
    return job


class PrewriteChecks(Callback):
    """conf/config.yaml's `hydra.callbacks`: the checks above, before Hydra makes a run or sweep directory."""

    def on_run_start(self, config: DictConfig, **kwargs: Any) -> None:
        check_before_writing(config.hydra.overrides.task, user_config_dirs(config), without_hydra(config))

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        # Each job's own config is composed later, job by job; the overrides hold every swept value.
        check_before_writing(config.hydra.overrides.task, user_config_dirs(config), None)
