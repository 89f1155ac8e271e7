"""The preflight: every rule of checks/ over one resolved config, in the order their findings depend on."""

from dataclasses import dataclass

from omegaconf import DictConfig, OmegaConf

from verl_qwen35.checks.algorithm import algorithm_problems
from verl_qwen35.checks.batches import batch_problems, uses_reference
from verl_qwen35.checks.bridges import bridge_of
from verl_qwen35.checks.device_features import device_feature_problems
from verl_qwen35.checks.files import data_problems, model_path_problems
from verl_qwen35.checks.hardware import hardware_problems
from verl_qwen35.checks.layout import layout_problems, positive_problems, sequence_parallel_problems
from verl_qwen35.checks.masked import key_of, masked_configs
from verl_qwen35.checks.megatron_keys import (
    field_spec,
    override_ddp_problems,
    override_key_problems,
    patch_value_problems,
    planned_mcore,
    rules_mcore,
    transformer_config_fields,
)
from verl_qwen35.checks.memory import memory_problems
from verl_qwen35.checks.optimizer import optimizer_problems
from verl_qwen35.checks.parity import layout_source_errors, parity_errors, unknown_patch_errors
from verl_qwen35.checks.problem import Level, Problem, error
from verl_qwen35.checks.rewrites import startup_rewrites
from verl_qwen35.checks.rollout import rollout_problems, rollout_setting_problems, weights_problems
from verl_qwen35.checks.schedule import schedule_problems, train_rows, training_steps
from verl_qwen35.checks.sections import structure_problems
from verl_qwen35.checks.sequences import length_problems, packing_problems
from verl_qwen35.checks.startup import startup_problems
from verl_qwen35.checks.submit import submit_problems
from verl_qwen35.checks.tracking import tracking_problems
from verl_qwen35.checks.trainer import trainer_problems
from verl_qwen35.checks.transformer import mtp_layers_built, mtp_problems, transformer_problems, type_problems
from verl_qwen35.checks.values import value_problems
from verl_qwen35.checks.verl_dataclasses import unknown_field_problems, unread_key_problems
from verl_qwen35.checks.verl_names import name_problems
from verl_qwen35.checks.verl_settings import verl_setting_problems
from verl_qwen35.checks.verl_types import verl_type_problems
from verl_qwen35.checks.vllm import vllm_problems
from verl_qwen35.checks.waste import waste_problems
from verl_qwen35.config.secrets import ADVICE, config_findings
from verl_qwen35.model.layout import Layout, device_of
from verl_qwen35.model.memory import MemoryEstimate
from verl_qwen35.model.pipeline import Split
from verl_qwen35.model.run import Run

__all__ = ["Problem", "preflight", "transformer_config_fields", "error"]


def override_dict(cfg: DictConfig) -> dict:
    """The resolved override_transformer_config as plain Python values."""
    return OmegaConf.to_container(cfg.megatron.override_transformer_config, resolve=True)


def bad_value_problems(cfg: DictConfig, otc: dict | None = None) -> list[Problem]:
    """Numbers that are not integers of the right sign and override values of the wrong type or enum,
    one message per key; nothing else (the plan, the estimate, the rules) can compute with them."""
    found = value_problems(cfg)
    named = {k for p in found for k in p.keys}
    otc = override_dict(cfg) if otc is None else otc
    found += [p for p in type_problems(otc, field_spec()) if not named & set(p.keys)]
    named = {k for p in found for k in p.keys}
    return found + [p for p in verl_type_problems(cfg) if not named & set(p.keys)]


def preflight(run: Run, machine_missing: Level = "error") -> list[Problem]:
    """All problems of a `Run` (its resolved config, read with the layout, pipeline split and memory estimate the
    builder derived from it once); `machine_missing` is the level of a missing local file.

    Its secret scan sees resolved values: `${oc.env:INNOCENT_NAME}` holding a token, which the pre-write scan
    of the composed config (interpolations as written) cannot see."""
    cfg = run.config
    if broken := structure_problems(cfg):
        return broken  # nothing else can read inside a section that is not there
    found = parity_errors(cfg) + unknown_patch_errors(cfg) + layout_source_errors(cfg)
    named = {k for p in found for k in p.keys}
    found += [p for p in unknown_field_problems(cfg) + unread_key_problems(cfg) if not named & set(p.keys)]
    found += [error(key, f"{why}. Instead, {ADVICE}.") for key, why in config_findings(cfg)]
    otc = override_dict(cfg)
    if bad_values := bad_value_problems(cfg, otc):
        return found + bad_values + rules_beside(cfg, bad_values, machine_missing)
    derived = Derived(run.device, run.layout or Layout.of(cfg), run.split or Split.of(otc), run.estimate)
    return found + rule_problems(cfg, otc, machine_missing, derived)


def rules_beside(cfg: DictConfig, bad_values: list[Problem], machine_missing: Level) -> list[Problem]:
    """The rule findings that hold whatever the bad values become (checks/masked.py): every problem at once,
    without a finding computed from a value the user has not given."""
    masked = masked_configs(cfg, bad_values)
    if masked is None:
        return []
    first, second, replaced = masked
    if bad_value_problems(first) or bad_value_problems(second):
        return []  # a bad value this module cannot stand in for: the rules would compute with it
    again = set(rule_problems(second, override_dict(second), machine_missing, Derived.of(second)))
    return [
        p
        for p in rule_problems(first, override_dict(first), machine_missing, Derived.of(first))
        if p in again and not replaced & {key_of(k) for k in p.keys}
    ]


@dataclass(frozen=True)
class Derived:
    """What the rules read besides the config: a `Run`'s (derived once by its builder), or a masked config's."""

    device: str
    layout: Layout
    split: Split
    estimate: MemoryEstimate | None = None

    @classmethod
    def of(cls, cfg: DictConfig) -> "Derived":
        """A masked config's (checks/masked.py): not a Run, its values differ from the Run's."""
        return cls(device_of(cfg), Layout.of(cfg), Split.of(override_dict(cfg)))


def rule_problems(cfg: DictConfig, otc: dict, machine_missing: Level, derived: Derived) -> list[Problem]:
    """The rules that compute with the config's values (all of them typed)."""
    found: list[Problem] = []
    device, layout, split = derived.device, derived.layout, derived.split
    if not_positive := positive_problems(layout):
        return found + not_positive  # nothing else can be computed from such a layout
    found += hardware_problems(cfg, layout)
    found += startup_rewrites(cfg)[1]
    found += device_feature_problems(cfg)  # formats and kernels the planned machine lacks
    planned, found_plan = planned_mcore(cfg)
    found += found_plan
    mcore = rules_mcore(cfg)
    mtp_enabled = bool(OmegaConf.select(cfg, "actor_rollout_ref.model.mtp.enable", default=False))
    model_mtp = cfg.model.get("mtp_num_layers", 0) or 0
    mtp = mtp_layers_built(otc, mtp_enabled, model_mtp)
    cp_algo = otc.get("context_parallel_algo")
    found += layout_problems(layout, cfg.model, device, split=split, mcore=mcore, mtp=mtp, cp_algo=cp_algo)
    found += sequence_parallel_problems(cfg, layout)
    found += transformer_problems(
        otc,
        cfg.model,
        layout,
        sequence_parallel=bool(cfg.actor_rollout_ref.actor.megatron.get("sequence_parallel")),
        dtype=cfg.megatron.dtype,
        mtp_layers=mtp,
        check_split=False,  # layout_problems judged the split
        bridge=bridge_of(cfg),
        split=split,
    )
    found += mtp_problems(otc, mtp_enabled, model_mtp, cfg.model.name)
    found += rollout_problems(layout, cfg.model, cfg.actor_rollout_ref.rollout.name)
    found += rollout_setting_problems(cfg)
    found += weights_problems(cfg)
    found += verl_setting_problems(cfg)
    unknown_names = name_problems(cfg)  # estimators, losses, KL types, loggers, ... (verl's registries)
    named = {k for p in unknown_names for k in p.keys}
    found += unknown_names
    # A key whose name is unknown gets that one message, not also the rules that read the name.
    family = algorithm_problems(cfg) + trainer_problems(cfg, machine_missing) + optimizer_problems(cfg)
    steps = training_steps(cfg, train_rows(cfg))
    family += schedule_problems(cfg, steps) + startup_problems(cfg, steps, machine_missing)
    family += waste_problems(cfg, steps)  # accepted by verl, but the run resumes, stops or trains wrongly
    found += [p for p in family if not named & set(p.keys)]
    found += tracking_problems(cfg)
    if layout.world % (layout.tp * layout.pp * layout.cp) == 0:  # else DP is undefined
        found += batch_problems(cfg, layout, uses_reference(cfg))
    found += packing_problems(cfg, mcore)
    found += length_problems(cfg)
    found += vllm_problems(cfg, device)
    found += memory_problems(cfg, derived.estimate, derived.layout)
    found += patch_value_problems(cfg)
    found += override_key_problems(cfg, device, transformer_config_fields(planned), planned)
    found += override_ddp_problems(cfg)
    found += data_problems(cfg, machine_missing)
    found += model_path_problems(cfg, machine_missing)
    found += submit_problems(cfg)  # before anything is written or submitted
    return found
