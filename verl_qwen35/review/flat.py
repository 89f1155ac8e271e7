"""Flatten a resolved config to dotted keys: the unit of comparison for fidelity tests and diff."""

from typing import Any

from omegaconf import DictConfig, OmegaConf


def flatten(cfg: DictConfig | dict, prefix: str = "") -> dict[str, Any]:
    """{'a.b.c': leaf}; lists are leaves, empty dicts are kept as {} leaves."""
    tree = OmegaConf.to_container(cfg, resolve=True) if OmegaConf.is_config(cfg) else cfg
    out: dict[str, Any] = {}
    for key, value in tree.items():
        path = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            out.update(flatten(value, f"{path}."))
        else:
            out[path] = value
    return out
