"""A `Run`'s config handed to verl: a thawed copy, since verl's code edits the config it is given."""

import copy

from omegaconf import DictConfig, OmegaConf


def writable(cfg: DictConfig) -> DictConfig:
    """A copy that may be edited (verl's main_ppo and its config dataclasses edit what they are given)."""
    if not OmegaConf.is_readonly(cfg):
        return cfg
    thawed = copy.deepcopy(cfg)
    OmegaConf.set_readonly(thawed, False)
    return thawed
