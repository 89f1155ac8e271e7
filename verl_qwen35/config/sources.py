"""Hydra's file config source for verl's config directory, each file parsed once per process.

A sweep composes every job twice (Hydra's basic sweeper checks the batch, its launcher composes
again), and verl's flattened trainer config takes ~70 ms to parse each time. This source is Hydra's
public `ConfigSource` plugin API: it reads the file on every load, as `file://` does, and reuses the
parse of the same text (kept in memory only, keyed by the text itself, so an edited file is parsed
afresh); each load returns its own deep copy, because Hydra merges into what it loads.
"""

import copy
import io
import os
from typing import ClassVar

from hydra.core.object_type import ObjectType
from hydra.core.plugins import Plugins
from hydra.plugins.config_source import ConfigLoadError, ConfigResult, ConfigSource
from omegaconf import DictConfig, ListConfig, OmegaConf

SCHEME = "verl-qwen35-file"


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
            self.parsed[text] = OmegaConf.load(io.StringIO(text))
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
