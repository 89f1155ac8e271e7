"""Hydra config sources that reuse parsed YAML, keyed by the file's content and the installed stack.

Hydra parses every config file it composes, twice per run (it composes once to read
`hydra.mode`, once to run) and twice per sweep job (the sweeper validates each job, the
launcher runs it). verl's flattened trainer config alone takes ~80 ms to parse. These sources
do what Hydra's `file://` and `pkg://` sources do, except that the parsed config is pickled
under a key made of the file's text and the versions of verl, Hydra, OmegaConf and PyYAML:
in memory for the process, and on disk (`$VERL_QWEN35_CACHE_DIR`, default
`~/.cache/verl_qwen35`; empty disables it) across processes. A changed file or an upgraded
package simply misses. Composition itself (defaults list, merge, overrides) is Hydra's, unchanged.

Registered with Hydra's public plugin registry; `CachedSearchPath` moves the search path
(Hydra's own configs and ours) onto the cached schemes, and conf/config.yaml names verl's
directory as `cachedfile://`.
"""

import hashlib
import io
import os
import pickle
import sys
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import TypeVar

import yaml
from hydra import __version__ as hydra_version
from hydra._internal.core_plugins.file_config_source import FileConfigSource
from hydra._internal.core_plugins.importlib_resources_config_source import ImportlibResourcesConfigSource
from hydra.core.config_search_path import ConfigSearchPath
from hydra.core.plugins import Plugins
from hydra.plugins.config_source import ConfigLoadError, ConfigResult, ConfigSource
from hydra.plugins.search_path_plugin import SearchPathPlugin
from omegaconf import DictConfig, ListConfig, OmegaConf
from omegaconf import __version__ as omegaconf_version

from verl_qwen35.versions import installed_verl_version

CACHE_ENV = "VERL_QWEN35_CACHE_DIR"
# Bump when the pickled form changes.
_FORMAT = "1"
_memory: dict[str, bytes] = {}
T = TypeVar("T")


def _default_dir() -> Path | None:
    configured = os.environ.get(CACHE_ENV)
    if configured is not None:
        return Path(configured) if configured else None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "verl_qwen35" / "configs"


# Fixed at import, so a test that changes HOME later does not scatter caches.
CACHE_DIR = _default_dir()


@cache
def stamp() -> str:
    """What else the parsed result depends on besides the text."""
    versions = (_FORMAT, installed_verl_version(), hydra_version, omegaconf_version, yaml.__version__)
    return "|".join((*versions, sys.version.split()[0]))


def cache_key(text: str) -> str:
    return hashlib.sha256(f"{stamp()}\n{text}".encode()).hexdigest()


def _store(path: Path, blob: bytes) -> None:
    """Atomic write; a cache that cannot be written is only slower."""
    import tempfile  # only when writing: most runs only read

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp")
        with os.fdopen(fd, "wb") as out:
            out.write(blob)
        os.replace(tmp, path)
    except OSError:
        pass


def _stored(key: str) -> bytes | None:
    if (blob := _memory.get(key)) is not None:
        return blob
    try:
        return (CACHE_DIR / f"{key}.pickle").read_bytes() if CACHE_DIR else None
    except OSError:
        return None


def cached(key: str, make: Callable[[], T], kind: type | tuple[type, ...]) -> T:
    """What `make()` returns, kept pickled under `key` (memory, then disk); a fresh object every call.

    A stored blob that does not unpickle to `kind` (torn, foreign) is a miss and is replaced.
    """
    if (blob := _stored(key)) is not None:
        try:
            found = pickle.loads(blob)
        except Exception:  # a torn or unreadable file is a miss, not an error
            found = None
        if isinstance(found, kind):
            _memory[key] = blob
            return found
    made = make()
    try:
        blob = pickle.dumps(made, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:  # something in it does not pickle: only slower, never an error
        return made
    _memory[key] = blob
    if CACHE_DIR:
        _store(CACHE_DIR / f"{key}.pickle", blob)
    return made


def parse(text: str) -> DictConfig | ListConfig:
    """OmegaConf.load of this YAML text, a fresh object each call (Hydra mutates what it loads)."""
    return cached(cache_key(text), lambda: OmegaConf.load(io.StringIO(text)), (DictConfig, ListConfig))


def _result(source: ConfigSource, text: str) -> ConfigResult:
    return ConfigResult(
        config=parse(text),
        path=f"{source.scheme()}://{source.path}",
        provider=source.provider,
        header=ConfigSource._get_header_dict(text[:512]),
    )


class _CachedText:
    """What both cached sources add to Hydra's: a config's text parsed once, and its digest."""

    def text(self, config_path: str) -> str:
        raise NotImplementedError

    def content_digest(self, config_path: str) -> str:
        """What merge_cache keys this config on: its text (and the stack's versions)."""
        return cache_key(self.text(config_path))

    def load_config(self, config_path: str) -> ConfigResult:
        return _result(self, self.text(config_path))  # type: ignore[arg-type]


class CachedFileConfigSource(_CachedText, FileConfigSource):
    """Hydra's file:// source with parsed files cached."""

    @staticmethod
    def scheme() -> str:
        return "cachedfile"

    def text(self, config_path: str) -> str:
        full_path = os.path.realpath(os.path.join(self.path, self._normalize_file_name(config_path)))
        if not os.path.exists(full_path):
            raise ConfigLoadError(f"Config not found : {full_path}")
        return Path(full_path).read_text(encoding="utf-8")


class CachedPackageConfigSource(_CachedText, ImportlibResourcesConfigSource):
    """Hydra's pkg:// source (Hydra's own configs live there) with parsed files cached."""

    @staticmethod
    def scheme() -> str:
        return "cachedpkg"

    def text(self, config_path: str) -> str:
        from importlib import resources

        normalized = self._normalize_file_name(config_path)
        res = resources.files(self.path).joinpath(normalized)
        if not res.exists():
            raise ConfigLoadError(f"Config not found : {normalized}")
        return res.read_bytes().decode("utf-8")


_CACHED = {"file": CachedFileConfigSource.scheme(), "pkg": CachedPackageConfigSource.scheme()}


class CachedSearchPath(SearchPathPlugin):
    """Moves file:// and pkg:// entries of the search path onto the cached sources."""

    def manipulate_search_path(self, search_path: ConfigSearchPath) -> None:
        for element in search_path.get_path():
            scheme, sep, rest = element.path.partition("://")
            if not sep:  # Hydra reads a bare path (hydra.main's config_path) as file://
                scheme, rest = "file", element.path
            if scheme in _CACHED:
                element.path = f"{_CACHED[scheme]}://{rest}"


def register() -> None:
    """Make the cached schemes known to Hydra (idempotent)."""
    plugins = Plugins.instance()
    for plugin in (CachedFileConfigSource, CachedPackageConfigSource, CachedSearchPath):
        plugins.register(plugin)
