"""Device environment for the driver and for every Ray worker.

A Ray worker inherits the environment of its node's `ray start`, not the driver's,
so the same variables also go into `ray_kwargs.ray_init.runtime_env.env_vars`.
"""

import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from omegaconf import DictConfig, OmegaConf, open_dict

from verl_qwen35.config.secrets import shell_secrets


def effective_env(cfg: DictConfig, environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """Config defaults with the launching shell's values winning; `unset` names cleared to ''.

    A shell value that holds credentials (`HTTPS_PROXY=http://user:pass@proxy`) is left to the
    environment like any other secret: not set, recorded or exported by us, the driver and Ray's
    local workers inherit it (on a cluster, export it before `ray start`)."""
    secret = shell_secrets(environ)
    values = {name: environ.get(name, str(value)) for name, value in cfg.env.set.items() if name not in secret}
    values.update({name: "" for name in cfg.env.unset})
    return values


def from_shell(cfg: DictConfig, environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """Variables whose launching-shell value replaces the config's."""
    secret = shell_secrets(environ)  # left to the environment (effective_env), never shown
    return {
        name: environ[name]
        for name in env_names(cfg)
        if name in environ and name not in secret and environ[name] != str(cfg.env.set[name])
    }


def apply_env(cfg: DictConfig, use_shell_env: bool = True) -> dict[str, str]:
    """Set the driver's environment and the Ray runtime_env from `cfg.env`; return what was set.

    `use_shell_env=False` (a relaunch) uses the recorded values even where the shell differs."""
    values = effective_env(cfg, os.environ if use_shell_env else {})
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
def job_environment(cfg: DictConfig, use_shell_env: bool = True) -> Iterator[dict[str, str]]:
    """apply_env for one job, then the driver's environment as it was: the next job of a sweep starts clean."""
    saved = dict(os.environ)
    try:
        yield apply_env(cfg, use_shell_env)
    finally:
        os.environ.clear()
        os.environ.update(saved)


def env_names(cfg: DictConfig) -> list[str]:
    """Names in env.set; none when env.set is not a mapping (the schema refuses that)."""
    env = cfg.get("env")
    return [str(k) for k in env.set] if OmegaConf.is_dict(env) and OmegaConf.is_dict(env.get("set")) else []
