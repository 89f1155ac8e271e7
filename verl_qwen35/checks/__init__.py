"""Preflight: every check is a pure function of the resolved config (and, for files, of this machine)."""

from omegaconf import DictConfig

from verl_qwen35.checks.batches import batch_problems, uses_reference
from verl_qwen35.checks.files import data_problems, model_path_problems
from verl_qwen35.checks.layout import Layout, layout_problems, positive_problems, sequence_parallel_problems
from verl_qwen35.checks.megatron_keys import (
    override_key_problems,
    patch_value_problems,
    transformer_config_fields,
)
from verl_qwen35.checks.memory import memory_problems
from verl_qwen35.checks.parity import layout_source_errors, parity_errors
from verl_qwen35.checks.problem import Level, Problem, error
from verl_qwen35.checks.rollout import rollout_problems, rollout_setting_problems
from verl_qwen35.checks.sequences import length_problems, megatron_core_version, packing_problems
from verl_qwen35.checks.submit import submit_problems
from verl_qwen35.environment import env_problems
from verl_qwen35.secret_scan import ADVICE, config_findings
from verl_qwen35.sections import structure_problems

__all__ = ["Problem", "preflight"]


def device_of(cfg: DictConfig) -> str:
    return "npu" if cfg.trainer.device == "npu" else "gpu"


def preflight(cfg: DictConfig, machine_missing: Level = "error") -> list[Problem]:
    """All problems of a resolved config; `machine_missing` is the level of a missing local file."""
    if broken := structure_problems(cfg):
        return broken  # nothing else can read inside a section that is not there
    device = device_of(cfg)
    found = parity_errors(cfg) + layout_source_errors(cfg)
    found += [error(key, message) for key, message in env_problems(cfg)]
    found += [error(key, f"{why}. Instead, {ADVICE}.") for key, why in config_findings(cfg)]
    layout = Layout.of(cfg)
    otc = cfg.megatron.override_transformer_config
    first_last = (otc.get("num_layers_in_first_pipeline_stage"), otc.get("num_layers_in_last_pipeline_stage"))
    if not_positive := positive_problems(layout):
        return found + not_positive  # nothing else can be computed from such a layout
    found += layout_problems(layout, cfg.model, device, first_last)
    found += sequence_parallel_problems(cfg, layout)
    found += rollout_problems(layout, cfg.model, cfg.actor_rollout_ref.rollout.name)
    found += rollout_setting_problems(cfg)
    if layout.world % (layout.tp * layout.pp * layout.cp) == 0:  # else DP is undefined
        found += batch_problems(cfg, layout, uses_reference(cfg))
    found += packing_problems(cfg, megatron_core_version())
    found += length_problems(cfg)
    found += memory_problems(cfg)
    found += patch_value_problems(cfg)
    found += override_key_problems(cfg, device, transformer_config_fields())
    found += data_problems(cfg, machine_missing)
    found += model_path_problems(cfg, machine_missing)
    found += submit_problems(cfg)  # before anything is written or submitted
    return found
