"""Device environment for the driver and for every Ray worker.

A Ray worker inherits the environment of its node's `ray start`, not the driver's,
so the same variables also go into `ray_kwargs.ray_init.runtime_env.env_vars`.
"""

import os
import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from functools import lru_cache

from omegaconf import DictConfig, OmegaConf, open_dict

# A name is split into words (`_`, `-`, `.`, camelCase); it looks secret when a word is one of
# these or ends in one of the long ones (HFTOKEN), unless its last word says it holds a path
# (HF_TOKEN_PATH, SSH_KEY_FILE, CREDENTIALS_DIR). TOKENIZERS_PARALLELISM has no such word.
SECRET_WORDS = frozenset(
    [
        "KEY",
        "KEYS",
        "APIKEY",
        "TOKEN",
        "SECRET",
        "SECRETS",
        "PASSWORD",
        "PASSWORDS",
        "PASSWD",
        "PASS",
        "PAT",
        "PASSPHRASE",
        "CREDENTIAL",
        "CREDENTIALS",
        "CRED",
        "CREDS",
        "AUTH",
        "AUTHTOKEN",
        "PRIVATEKEY",
        "COOKIE",
        "AUTHORIZATION",
        "BEARER",
        "DSN",
    ]
)
SECRET_SUFFIXES = ("APIKEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "PASSPHRASE", "CREDENTIAL", "CREDENTIALS")
PATH_WORDS = frozenset(["PATH", "FILE", "FILES", "DIR", "DIRS", "DIRECTORY", "FOLDER"])
# A last word that makes the name a setting about a secret, not the secret (RAY_AUTH_MODE, SSH_AUTH_SOCK).
SETTING_WORDS = frozenset(["MODE", "TYPE", "METHOD", "ENABLE", "ENABLED", "DISABLE", "DISABLED", "SOCK", "TIMEOUT"])
_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")


def name_words(name: str) -> list[str]:
    """`wandbApiKey` -> WANDB API KEY; `HF_TOKEN_PATH` -> HF TOKEN PATH."""
    return [w.upper() for w in _WORD.findall(name)]


@lru_cache(maxsize=4096)  # asked for every env name and string value of every config
def looks_secret(name: str) -> bool:
    """True for WANDB_API_KEY, HF_TOKEN, db_password, GITHUB_PAT, apiKey; False for HF_TOKEN_PATH, *_FILE, *_DIR."""
    words = name_words(name)
    if not words or words[-1] in PATH_WORDS or words[-1] in SETTING_WORDS:
        return False
    return any(w in SECRET_WORDS or (len(w) > 6 and w.endswith(SECRET_SUFFIXES)) for w in words)


def shell_secrets(environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """Secret-looking variables of the launching shell whose value looks like a secret too: 10+
    characters, not a plain word. `RAY_AUTH_MODE=disabled` would otherwise match every `disabled`."""
    return {
        name: value
        for name, value in environ.items()
        if looks_secret(name) and len(value) >= 10 and not value.isalpha() and " " not in value
    }


def effective_env(cfg: DictConfig, environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """Config defaults with the launching shell's values winning; `unset` names cleared to ''."""
    values = {name: environ.get(name, str(value)) for name, value in cfg.env.set.items()}
    values.update({name: "" for name in cfg.env.unset})
    return values


def from_shell(cfg: DictConfig, environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """Variables whose launching-shell value replaces the config's."""
    return {
        name: environ[name] for name in env_names(cfg) if name in environ and environ[name] != str(cfg.env.set[name])
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


def env_problems(cfg: DictConfig) -> list[tuple[str, str]]:
    """(key, why) when `env` is not what apply_env can export: names to scalar values, a list of names to clear."""
    env = cfg.get("env")
    if not OmegaConf.is_dict(env):
        return [("env", f"env={env!r}: env holds `set` (NAME: value) and `unset` (a list of names)")]
    found = []
    values = env.get("set")
    if not OmegaConf.is_dict(values):
        found.append(("env.set", f"env.set={values!r}: a mapping NAME: value; drop one variable with ~env.set.NAME"))
    else:
        found += [
            (f"env.set.{name}", f"env.set.{name}={value!r}: an environment variable needs a text or number value")
            for name, value in values.items()
            if value is None or OmegaConf.is_config(value)
        ]
    unset = env.get("unset")
    if not OmegaConf.is_list(unset) or any(OmegaConf.is_config(n) or n is None for n in unset):
        found.append(("env.unset", f"env.unset={unset!r}: a list of variable names, e.g. [http_proxy, https_proxy]"))
    return found


def env_names(cfg: DictConfig) -> list[str]:
    """Names in env.set; none when env.set is not a mapping (env_problems reports that)."""
    env = cfg.get("env")
    return [str(k) for k in env.set] if OmegaConf.is_dict(env) and OmegaConf.is_dict(env.get("set")) else []
