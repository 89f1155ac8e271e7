"""Device environment for the driver and for every Ray worker.

A Ray worker inherits the environment of its node's `ray start`, not the driver's,
so the same variables also go into `ray_kwargs.ray_init.runtime_env.env_vars`.
"""

import os
import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from omegaconf import DictConfig, open_dict

# Whole name segments: HF_TOKEN and WANDB_API_KEY match, TOKENIZERS_PARALLELISM does not.
_SECRET = re.compile(r"(^|_)(KEY|TOKEN|SECRET|PASSWORD|CREDENTIALS?)(_|$)", re.IGNORECASE)


def effective_env(cfg: DictConfig, environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """Config defaults with the launching shell's values winning; `unset` names cleared to ''."""
    values = {name: environ.get(name, str(value)) for name, value in cfg.env.set.items()}
    values.update({name: "" for name in cfg.env.unset})
    return values


def from_shell(cfg: DictConfig, environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """Variables whose launching-shell value replaces the config's."""
    return {
        name: environ[name] for name, value in cfg.env.set.items() if name in environ and environ[name] != str(value)
    }


def apply_env(cfg: DictConfig) -> dict[str, str]:
    """Set the driver's environment and the Ray runtime_env from `cfg.env`; return what was set."""
    values = effective_env(cfg)
    for name, value in values.items():
        if name in cfg.env.unset:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
    runtime_env = cfg.ray_kwargs.ray_init.runtime_env
    with open_dict(runtime_env):
        runtime_env.env_vars = {**(runtime_env.get("env_vars") or {}), **values}
    return values


@contextmanager
def job_environment(cfg: DictConfig) -> Iterator[dict[str, str]]:
    """apply_env for one job, then the driver's environment as it was: the next job of a sweep starts clean."""
    saved = dict(os.environ)
    try:
        yield apply_env(cfg)
    finally:
        os.environ.clear()
        os.environ.update(saved)


def secret_errors(cfg: DictConfig) -> list[tuple[str, str]]:
    """Secrets must not enter a config that is printed, diffed and saved with every run."""
    return [
        (
            name,
            f"looks like a secret; the config is printed and saved with every run. Export {name} in "
            f"the shell of every node before `ray start` instead, and remove env.set.{name}.",
        )
        for name in cfg.env.set
        if _SECRET.search(name)
    ]
