"""Resolved presets for rule tests: composed once per preset, copied for each change."""

import copy
from functools import cache

from omegaconf import OmegaConf

from verl_qwen35.config import compose


@cache
def resolved(preset: str):
    model, device = preset.rsplit("_", 1)
    cfg = compose([f"model={model}", f"device={device}"])
    OmegaConf.resolve(cfg)
    return cfg


def config(preset: str = "35b_gpu", **changes):
    """A resolved preset with `changes` ({"a.b.c": value}) applied, as preflight sees a config."""
    cfg = copy.deepcopy(resolved(preset))
    for key, value in changes.items():
        OmegaConf.update(cfg, key, value, merge=False, force_add=True)
    return cfg
