"""The resolved run: one immutable value that the job, the API, `plan`, `estimate` and the planner all read.

Built by `verl_qwen35.builder.build.build_run` from a copy of the composed config (once per command, once per
candidate of the planner); every edit the command makes (the Megatron patch links, a sweep job's names, absolute
directories) is a step of that builder, before the config is resolved and made read-only. What is derived from
the config (layout, pipeline split, model facts, settings, memory estimate) is computed there once and kept here;
a field is None when the config's values leave it undefined (the preflight names why).
"""

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from omegaconf import DictConfig

from verl_qwen35.model.layout import Layout, device_of
from verl_qwen35.model.memory import MemoryEstimate, ModelFacts, Settings
from verl_qwen35.model.pipeline import Split

Mode = Literal["launch", "dry", "full"]


@dataclass(frozen=True)
class Run:
    """A composed config, resolved and read-only, with what the checks, the plan and the planner derive from it."""

    config: DictConfig  # resolved, read-only (OmegaConf.set_readonly): editing it raises
    choices: Mapping[str, str]  # Hydra's group choices (model, device, parallel, verl_schema, ...); read-only
    output_dir: str | None  # the run's (or sweep job's) directory; None outside a Hydra run
    mode: Mode  # dry_run=false|true|full
    layout: Layout | None
    split: Split | None
    facts: ModelFacts | None
    settings: Settings | None
    hardware: DictConfig | None  # the `hardware` node of `config`
    estimate: MemoryEstimate | None  # None: inputs unusable or a layout whose groups are not whole
    composed: DictConfig | None = None  # the config as composed (interpolations kept), read-only; for the planner
    device: str = field(init=False)  # "gpu" or "npu" (model/layout.py device_of), read once

    def __post_init__(self) -> None:
        object.__setattr__(self, "device", device_of(self.config))  # frozen: set once, here
