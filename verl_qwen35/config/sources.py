"""Hydra's file config source for verl's config directory, each file parsed once per process.

A sweep composes every job twice (Hydra's basic sweeper checks the batch, its launcher composes
again), and verl's flattened trainer config takes ~70 ms to parse each time. This source is Hydra's
public `ConfigSource` plugin API: it reads the file on every load, as `file://` does, and reuses the
parse of the same text (kept in memory only, keyed by the text itself, so an edited file is parsed
afresh); each load returns its own deep copy, because Hydra merges into what it loads.

The text is parsed by libyaml where PyYAML has it (PyYAML's `CSafeLoader`, ~10x faster than the pure-Python
loader `OmegaConf.load` uses) with OmegaConf's reading of YAML: 1.2 floats (`1e-6`), no timestamps, a
duplicate key refused. Anything that loader does not take is left to `OmegaConf.load` itself.
"""

import copy
import io
import os
from typing import Any, ClassVar

import yaml
from hydra.core.object_type import ObjectType
from hydra.core.plugins import Plugins
from hydra.plugins.config_source import ConfigLoadError, ConfigResult, ConfigSource
from omegaconf import DictConfig, ListConfig, OmegaConf

from verl_qwen35.config.yaml_files import ConfigLoader

SCHEME = "verl-qwen35-file"
TIMESTAMP = "tag:yaml.org,2002:timestamp"


class _FastLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """libyaml's safe loader reading YAML as OmegaConf does (its loader: omegaconf `get_yaml_loader`)."""

    yaml_implicit_resolvers = {
        first: [(tag, pattern) for tag, pattern in resolvers if tag != TIMESTAMP]
        for first, resolvers in ConfigLoader.yaml_implicit_resolvers.items()
    }

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        keys = [k.value for k, _ in node.value if k.tag == yaml.resolver.BaseResolver.DEFAULT_SCALAR_TAG]
        if len(keys) != len(set(keys)):
            raise yaml.constructor.ConstructorError("while constructing a mapping", node.start_mark, "duplicate key")
        return super().construct_mapping(node, deep=deep)


def parse_config(text: str) -> DictConfig | ListConfig:
    """What `OmegaConf.load` gives for this text, parsed by libyaml when it can be."""
    try:
        data = yaml.load(text, Loader=_FastLoader)  # noqa: S506 - a safe loader (CSafeLoader or SafeLoader)
    except yaml.YAMLError:
        return OmegaConf.load(io.StringIO(text))  # OmegaConf's own loader says what is wrong, or takes it
    if data is None:
        return OmegaConf.create()
    if not isinstance(data, dict | list):
        return OmegaConf.load(io.StringIO(text))  # OmegaConf's own error for a scalar document
    return OmegaConf.create(data)


class ParsedOnceFileSource(ConfigSource):
    """`verl-qwen35-file://DIR`: what `file://DIR` loads, with each distinct text parsed once."""

    parsed: ClassVar[dict[str, DictConfig | ListConfig]] = {}

    @staticmethod
    def scheme() -> str:
        return SCHEME

    def _full(self, config_path: str) -> str:
        return os.path.realpath(os.path.join(self.path, config_path))

    def load_config(self, config_path: str) -> ConfigResult:
        full_path = self._full(self._normalize_file_name(config_path))
        if not os.path.exists(full_path):
            raise ConfigLoadError(f"Config not found : {full_path}")
        with open(full_path, encoding="utf-8") as file:
            text = file.read()
        if text not in self.parsed:
            self.parsed[text] = parse_config(text)
        return ConfigResult(
            config=copy.deepcopy(self.parsed[text]),
            path=f"{self.scheme()}://{self.path}",
            provider=self.provider,
            header=self._get_header_dict(text[:512]),  # the base class's header grammar, as file:// reads it
        )

    def available(self) -> bool:
        return self.is_group("")

    def is_group(self, config_path: str) -> bool:
        return os.path.isdir(self._full(config_path))

    def is_config(self, config_path: str) -> bool:
        return os.path.isfile(self._full(self._normalize_file_name(config_path)))

    def list(self, config_path: str, results_filter: ObjectType | None) -> list[str]:
        files: list[str] = []
        for name in os.listdir(self._full(config_path)):
            self._list_add_result(files, os.path.join(config_path, name), name, results_filter)
        return sorted(set(files))


def register_sources() -> None:
    """Make the scheme known to Hydra (its public plugin registry; registering twice is harmless)."""
    Plugins.instance().register(ParsedOnceFileSource)
