"""Hydra's merge of a defaults list, reused: keyed by the list, the search path and every file's content.

Composing a preset merges ~17 configs (verl's whole trainer among them) into one, ~35 ms of
every `--cfg`, dry run and launch, and of the mode check Hydra composes before each run. The
merge (`ConfigLoaderImpl._compose_config_from_defaults_list`) is a function of the defaults
list (which configs, under which packages), the search path and the configs' contents, so its
result is kept pickled like the parsed files (`config_cache`: memory, then
`$VERL_QWEN35_CACHE_DIR`; the same stamp of verl, Hydra, OmegaConf, PyYAML and Python).

Every entry must name its content: our cached sources give a digest of each file's text
(read, not parsed); Hydra's own structured configs (ConfigStore, provider hydra) are fixed by the
Hydra version.
Anything else (a plugin's structured config, a ConfigStore schema over one of our files) and
the merge runs as Hydra's, uncached. The defaults list, overrides, interpolation and validation
are Hydra's on every run; only the merged result of an identical list of identical files is
reused.
"""

import hashlib
from collections.abc import Callable
from typing import Any

from hydra._internal.config_loader_impl import ConfigLoaderImpl
from hydra.core.config_store import ConfigStore
from hydra.core.default_element import ResultDefault
from omegaconf import DictConfig

from verl_qwen35 import config_cache


def _content(repo: Any, config_path: str) -> str | None:
    """What the config at `config_path` is: a file digest, Hydra's own schema, or None (no reuse).

    The source is found as Hydra's repository finds it: the first on the search path that has it.
    """
    source = next((s for s in repo.get_sources() if s.is_config(config_path)), None)
    if source is None:
        return None
    if hasattr(source, "content_digest"):  # ours: the file's text
        if repo.get_schema_source().is_config(config_path):
            return None  # a ConfigStore schema would be merged under it: its content is not keyed
        return str(source.content_digest(config_path))
    if source is repo.get_schema_source() and _stored_by_hydra(config_path):
        return "hydra-structured"  # Hydra's own dataclasses: fixed by the Hydra version in the stamp
    return None


def _stored_by_hydra(config_path: str) -> bool:
    """True when Hydra itself put this config in its ConfigStore (provider "hydra")."""
    try:
        return ConfigStore.instance()._load(f"{config_path}.yaml").provider == "hydra"
    except Exception:  # not there, or a Hydra that stores configs otherwise: unknown, no reuse
        return False


def merge_key(defaults: list[ResultDefault], repo: Any) -> str | None:
    parts: list[Any] = [[(s.scheme(), s.path) for s in repo.get_sources()]]
    for d in defaults:
        content = _content(repo, d.config_path)
        if content is None:
            return None
        parts.append((d.config_path, d.parent, d.package, d.is_self, d.primary, d.override_key, content))
    return "merged-" + hashlib.sha256(f"{config_cache.stamp()}{parts!r}".encode()).hexdigest()


# Hydra's own merge, looked up at call time (tests count its calls).
_hydra_merge: Callable[..., DictConfig] | None = None


def _compose(self: ConfigLoaderImpl, defaults: list[ResultDefault], repo: Any) -> DictConfig:
    assert _hydra_merge is not None
    key = merge_key(defaults, repo)
    if key is None:
        return _hydra_merge(self, defaults=defaults, repo=repo)
    return config_cache.cached(key, lambda: _hydra_merge(self, defaults=defaults, repo=repo), DictConfig)


def install() -> bool:
    """Route Hydra's merge through the cache (idempotent); True when installed."""
    global _hydra_merge
    if ConfigLoaderImpl._compose_config_from_defaults_list is _compose:
        return True
    _hydra_merge = ConfigLoaderImpl._compose_config_from_defaults_list
    ConfigLoaderImpl._compose_config_from_defaults_list = _compose  # type: ignore[method-assign]
    return True
