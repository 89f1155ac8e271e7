"""The one builder of a `Run`: the composed config's edits, its resolution, what is derived from it, then frozen.

The Hydra job, the public API, `plan` and `estimate` all call `build_run` once and read the `Run` it returns;
nothing edits the config afterwards (it is read-only: an edit raises).
"""

import copy
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType

from omegaconf import DictConfig, OmegaConf

from verl_qwen35.checks.memory import estimable
from verl_qwen35.checks.problem import Problem
from verl_qwen35.checks.sections import structure_problems
from verl_qwen35.config.errors import resolve_naming_key
from verl_qwen35.config.patch import link_patch
from verl_qwen35.errors import UserError
from verl_qwen35.model.layout import Layout
from verl_qwen35.model.memory import InputError, estimate_layout, read_inputs
from verl_qwen35.model.pipeline import Split
from verl_qwen35.model.run import Mode, Run
from verl_qwen35.run.launch_record import absolute_checkpoint_dir
from verl_qwen35.run.sweep import in_multirun, job_tag
from verl_qwen35.run.tracking_files import absolute_tracking_env

MODES: dict[bool | str, Mode] = {False: "launch", True: "dry", "full": "full"}
# What a derived value raises when a value it reads has the wrong type; the preflight reports that value.
UNDEFINED_AFTER_ERRORS = (TypeError, ValueError, ZeroDivisionError, AttributeError, KeyError)


def mode_of(cfg: DictConfig) -> Mode:
    value = cfg.get("dry_run")
    if isinstance(value, bool | str) and value in MODES:
        return MODES[value]
    raise UserError(f"dry_run={value!r}: use dry_run=false (launch), true or full")


def separate_sweep_job(cfg: DictConfig, output_dir: str) -> None:
    """In a sweep, each job checkpoints into its own output directory under its own run name."""
    cfg.trainer.experiment_name = f"{cfg.trainer.experiment_name}_{job_tag()}"
    cfg.trainer.default_local_dir = str(Path(output_dir) / "checkpoints")


def build_run(
    composed: DictConfig,
    choices: Mapping[str, str] | None = None,
    output_dir: str | None = None,
    mode: Mode | None = None,
    keep_composed: bool = False,
) -> tuple[Run, list[Problem]]:
    """The `Run` of a composed config, and the sections it lacks (when any, nothing is derived: all None).

    `composed` is taken over (edited, resolved, made read-only): pass a copy to keep yours. `mode` defaults
    to the config's `dry_run`; `keep_composed` keeps the unresolved config too, for the planner, which
    varies `parallel.*` and resolves again."""
    mode = mode or mode_of(composed)
    link_patch(composed)  # before resolution: `megatron.<any key>` reaches actor and ref
    kept = None
    if keep_composed:
        kept = copy.deepcopy(composed)
        OmegaConf.set_readonly(kept, True)
    cfg = composed
    resolve_naming_key(cfg)
    broken = structure_problems(cfg)  # nothing below can read inside a section that is not there
    if not broken:
        if in_multirun() and output_dir:
            separate_sweep_job(cfg, output_dir)
        absolute_checkpoint_dir(cfg)
        absolute_tracking_env(cfg, output_dir)  # each run's (each sweep job's) logs under its own directory
    OmegaConf.set_readonly(cfg, True)
    derived = {} if broken else _derived(cfg)
    run = Run(
        config=cfg,
        choices=MappingProxyType(dict(choices or {})),
        output_dir=output_dir,
        mode=mode,
        layout=derived.get("layout"),
        split=derived.get("split"),
        facts=derived.get("facts"),
        settings=derived.get("settings"),
        hardware=cfg.get("hardware") if OmegaConf.is_dict(cfg.get("hardware")) else None,
        estimate=derived.get("estimate"),
        composed=kept,
    )
    return run, broken


def _derived(cfg: DictConfig) -> dict[str, object]:
    """Layout, split, facts, settings and the memory estimate, each computed once; one the values leave
    undefined is absent (the preflight names the value)."""
    out: dict[str, object] = {}
    try:
        out["layout"] = Layout.of(cfg)
        out["split"] = Split.of(OmegaConf.to_container(cfg.megatron.override_transformer_config))
    except UNDEFINED_AFTER_ERRORS:
        return out
    try:
        out["facts"], out["settings"] = read_inputs(cfg)
    except InputError:
        return out
    try:
        if estimable(cfg):
            out["estimate"] = estimate_layout(out["facts"], out["layout"], out["settings"])
    except UNDEFINED_AFTER_ERRORS:
        pass
    return out


def writable(cfg: DictConfig) -> DictConfig:
    """A copy that may be edited (verl's main_ppo and its config dataclasses edit what they are given)."""
    if not OmegaConf.is_readonly(cfg):
        return cfg
    thawed = copy.deepcopy(cfg)
    OmegaConf.set_readonly(thawed, False)
    return thawed
