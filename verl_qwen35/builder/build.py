"""The one builder of a `Run`: a copy of the composed config, its edits, its resolution, what is derived from
it, then frozen.

The Hydra job, the public API, `plan`, `estimate` and every candidate the planner judges call `build_run` and
read the `Run` it returns: the layout, the pipeline split, the model inputs and the memory estimate are derived
here once per Run; nothing edits the config afterwards (it is read-only: an edit raises). The caller's config
is never edited: the builder works on its own copy.
"""

import copy
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from omegaconf import DictConfig, OmegaConf

from verl_qwen35.checks.memory import applies, splits_evenly
from verl_qwen35.checks.problem import Problem
from verl_qwen35.checks.sections import structure_problems
from verl_qwen35.config.errors import resolve_naming_key
from verl_qwen35.config.patch import link_patch
from verl_qwen35.config.placement import absolute_checkpoint_dir, absolute_tracking_env, separate_sweep_job
from verl_qwen35.errors import UserError
from verl_qwen35.model.layout import Layout
from verl_qwen35.model.memory import InputError, estimate_layout, read_inputs
from verl_qwen35.model.pipeline import Split
from verl_qwen35.model.run import Mode, Run

MODES: dict[bool | str, Mode] = {False: "launch", True: "dry", "full": "full"}
# What a derived value raises when a value it reads has the wrong type; the preflight reports that value.
UNDEFINED_AFTER_ERRORS = (TypeError, ValueError, ZeroDivisionError, AttributeError, KeyError)


def mode_of(cfg: DictConfig) -> Mode:
    value = cfg.get("dry_run")
    if isinstance(value, bool | str) and value in MODES:
        return MODES[value]
    raise UserError(f"dry_run={value!r}: use dry_run=false (launch), true or full")


def build_run(
    composed: DictConfig,
    choices: Mapping[str, str] | None = None,
    output_dir: str | None = None,
    mode: Mode | None = None,
    keep_composed: bool = False,
    changes: Mapping[str, Any] | None = None,
    sweep_tag: str | None = None,
) -> tuple[Run, list[Problem]]:
    """The `Run` of a composed config, and the sections it lacks (when any, nothing is derived: all None).

    `composed` is copied, never edited. `changes` (dotted key -> value) are set on the copy first, as the
    overrides `key=value` would set them: a variant of the composed config (the planner's candidates, which vary
    `parallel.*`). `mode` defaults to the config's `dry_run`; `keep_composed` keeps the unresolved config too, for
    the planner, which builds its variants from it; `sweep_tag` (a sweep job's, run/sweep.py `job_tag`) gives the
    job its own run name and checkpoint directory under `output_dir`."""
    cfg = copy.deepcopy(composed)
    OmegaConf.set_readonly(cfg, False)  # a Run's kept composed config is read-only; this copy is the Run's own
    for key, value in (changes or {}).items():
        OmegaConf.update(cfg, key, value, merge=False, force_add=True)  # a value in place of the config's
    mode = mode or mode_of(cfg)
    link_patch(cfg)  # before resolution: `megatron.<any key>` reaches actor and ref
    kept = None
    if keep_composed:
        kept = copy.deepcopy(cfg)
        OmegaConf.set_readonly(kept, True)
    resolve_naming_key(cfg)
    broken = structure_problems(cfg)  # nothing below can read inside a section that is not there
    if not broken:
        if sweep_tag and output_dir:
            separate_sweep_job(cfg, sweep_tag, output_dir)
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
        if applies(cfg) and splits_evenly(cfg, out["layout"]):
            out["estimate"] = estimate_layout(out["facts"], out["layout"], out["settings"])
    except UNDEFINED_AFTER_ERRORS:
        pass
    return out
