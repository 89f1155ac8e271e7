"""verl_qwen35's Hydra sweeper: Hydra's basic sweeper, composing each job once instead of twice.

Hydra's BasicSweeper composes every job of a batch to prove it composes (`validate_batch_is_legal`),
then Hydra's basic launcher composes each again to run it; Hydra's own comment on the check says it
exists for launchers that run jobs in another process or machine. With the in-process basic
launcher this sweeper hands the launcher the very config the check composed (each used once, for
the same overrides and sweep config); with any other launcher it behaves exactly as BasicSweeper.

During the batch check, jobs with the same group choices share one defaults list (see
shared_composition.py); value overrides and validation stay per job.
Selected in conf/config.yaml (`override hydra/sweeper: verl_qwen35`); Hydra finds it here because
plugins live in the `hydra_plugins` namespace package.
"""

from collections.abc import Sequence
from typing import Any

from hydra._internal.core_plugins.basic_launcher import BasicLauncher
from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
from hydra.types import HydraContext, TaskFunction
from omegaconf import DictConfig

from hydra_plugins.verl_qwen35_sweeper.shared_composition import defaults_lists_shared


class _ComposedOnce:
    """Hydra's config loader, except that a job's config composed by the batch check is served once."""

    def __init__(self, loader: Any) -> None:
        self.loader = loader
        self.ready: dict[tuple[int, tuple[str, ...]], DictConfig] = {}

    def __getattr__(self, name: str) -> Any:
        return getattr(self.loader, name)

    def load_sweep_config(self, master_config: DictConfig, sweep_overrides: list[str]) -> DictConfig:
        composed = self.ready.pop((id(master_config), tuple(sweep_overrides)), None)
        if composed is not None:
            return composed
        return self.loader.load_sweep_config(master_config, sweep_overrides)


class ComposeOnceSweeper(BasicSweeper):
    """BasicSweeper whose batch check composes the configs the in-process launcher then runs."""

    def setup(self, *, hydra_context: HydraContext, task_function: TaskFunction, config: DictConfig) -> None:
        self.composed = _ComposedOnce(hydra_context.config_loader)
        context = HydraContext(config_loader=self.composed, callbacks=hydra_context.callbacks)
        super().setup(hydra_context=context, task_function=task_function, config=config)

    def validate_batch_is_legal(self, batch: Sequence[Sequence[str]]) -> None:
        keep = type(self.launcher) is BasicLauncher
        with defaults_lists_shared():
            for overrides in batch:
                composed = self.composed.loader.load_sweep_config(self.config, list(overrides))
                if keep:
                    self.composed.ready[(id(self.config), tuple(overrides))] = composed
