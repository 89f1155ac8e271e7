"""Pure speed-ups of OmegaConf and Hydra internals that every composition, dry run and sweep job pays for.

- Interpolation parsing is memoized. OmegaConf parses a `${...}` string with its ANTLR grammar
  every time the value is read or merged (no cache of its own), and verl's trainer config
  holds ~120 of them: a sweep job parsed ~200 strings, a third of its time. The parse tree is
  a pure function of the string and OmegaConf only reads it (its visitor does not mutate it,
  and nested parses already outlive the shared parser), so equal strings share one tree.
  A string that does not parse raises as before (exceptions are not cached).
- YAML is written by libyaml's emitter when PyYAML has it: the same representers as
  OmegaConf's own dumper (its quoting of bool/int/float-looking strings included), so the
  text is the same (tests compare both on every preset); only the emitter is C. This is
  what Hydra's `--cfg` print and its three `.hydra/*.yaml` files per job cost.
- Node metadata is deep-copied field by field. Hydra deep-copies every sweep job's config
  twice, and Python's generic deepcopy of OmegaConf's `Metadata` dataclass (one per node) was
  ~30% of it. The copy is the same: the two mutable fields (`flags`, `resolver_cache`) are
  deep-copied, every other field holds a type, a bool or a key, which deepcopy returns as is.
- Hydra's version checks are memoized. Hydra asks `version.base_at_least(...)` every time it
  normalizes a config file name, and each call parses two version strings with `packaging`
  (~20,000 parses in a 32-job sweep). `_get_version` is a pure function of its string.

All are installed once at import of verl_qwen35 and are no-ops if OmegaConf or Hydra change shape.
"""

import copy
import dataclasses
from collections import defaultdict
from functools import lru_cache
from typing import Any

import yaml
from omegaconf import _utils, base, grammar_parser
from omegaconf import omegaconf as omegaconf_module

# Distinct interpolation strings in a composed config are a few hundred; this bounds a
# long-lived process (a launched trainer) that keeps reading new ones.
PARSE_MEMO_SIZE = 4096


def memoized_interpolation_parsing() -> bool:
    """Route OmegaConf's two callers of `grammar_parser.parse` through one memo; True if installed."""
    original = grammar_parser.parse
    if getattr(original, "cache_info", None) is not None:
        return True  # already installed
    if base.parse is not original or _utils.parse is not original:
        return False  # OmegaConf no longer calls it by these names: leave it as it is
    memo = lru_cache(maxsize=PARSE_MEMO_SIZE)(original)
    base.parse = _utils.parse = grammar_parser.parse = memo
    return True


def _libyaml_dumper(python_dumper: type) -> type | None:
    """OmegaConf's dumper with libyaml's emitter; None when PyYAML was built without libyaml."""
    if not getattr(yaml, "__with_libyaml__", False):
        return None

    class OmegaConfCDumper(yaml.CDumper):  # type: ignore[misc,name-defined]
        """Same representers as OmegaConf's (copied tables, so later additions stay separate)."""

    OmegaConfCDumper.yaml_representers = dict(python_dumper.yaml_representers)
    OmegaConfCDumper.yaml_multi_representers = dict(python_dumper.yaml_multi_representers)
    return OmegaConfCDumper


def yaml_written_by_libyaml() -> bool:
    """Make `OmegaConf.to_yaml` (and so `OmegaConf.save`, Hydra's `--cfg` and `.hydra/`) use libyaml."""
    original = _utils.get_omega_conf_dumper
    if getattr(omegaconf_module.get_omega_conf_dumper, "libyaml", False):
        return True
    if omegaconf_module.get_omega_conf_dumper is not original:
        return False
    dumper = _libyaml_dumper(original())
    if dumper is None:
        return False

    def get_dumper() -> Any:
        return dumper

    get_dumper.libyaml = True  # type: ignore[attr-defined]
    omegaconf_module.get_omega_conf_dumper = get_dumper
    return True


# Every field of OmegaConf 2.3's node metadata; a release that adds one keeps the generic copy.
METADATA_FIELDS = {
    base.Metadata: {"ref_type", "object_type", "optional", "key", "flags", "flags_root", "resolver_cache"},
    base.ContainerMetadata: {
        *("ref_type", "object_type", "optional", "key", "flags", "flags_root", "resolver_cache"),
        *("key_type", "element_type"),
    },
}


def _copy_metadata(self: Any, memo: dict[int, Any]) -> Any:
    copied = object.__new__(type(self))
    fields = dict(self.__dict__)
    flags, cache = self.flags, self.resolver_cache
    # Flags hold True/False/None: a new dict is their deep copy. An empty resolver cache is a new one.
    if type(flags) is dict and all(v is None or type(v) is bool for v in flags.values()):
        fields["flags"] = dict(flags)
    else:
        fields["flags"] = copy.deepcopy(flags, memo)
    if type(cache) is defaultdict and cache.default_factory is dict and not cache:
        fields["resolver_cache"] = defaultdict(dict)
    else:
        fields["resolver_cache"] = copy.deepcopy(cache, memo)
    copied.__dict__.update(fields)
    return copied


def metadata_copied_by_field() -> bool:
    """Give OmegaConf's Metadata classes the field-by-field deepcopy; True if installed."""
    for cls, expected in METADATA_FIELDS.items():
        if {f.name for f in dataclasses.fields(cls)} != expected or "__slots__" in vars(cls):
            return False
        if "__deepcopy__" in vars(cls) and vars(cls)["__deepcopy__"] is not _copy_metadata:
            return False  # OmegaConf has its own now
    for cls in METADATA_FIELDS:
        cls.__deepcopy__ = _copy_metadata  # type: ignore[attr-defined]
    return True


def memoized_hydra_version_parsing() -> bool:
    """Memoize `hydra.version._get_version` (what `base_at_least` calls); True if installed."""
    from hydra import version

    current = getattr(version, "_get_version", None)
    if current is None or not callable(current):
        return False
    if getattr(current, "cache_info", None) is None:
        version._get_version = lru_cache(maxsize=64)(current)
    return True


# Value nodes: what each class's __init__ puts in __dict__, the only state OmegaConf's own
# __deepcopy__ (a fresh node, then `_deepcopy_impl`) carries over.
VALUE_NODE_STATE = {"_metadata", "_parent", "_flags_cache", "_val"}
VALUE_NODE_CLASSES = ("AnyNode", "StringNode", "PathNode", "IntegerNode", "BytesNode", "FloatNode", "BooleanNode")
ENUM_NODE_STATE = VALUE_NODE_STATE | {"fields", "enum_type"}


def _copy_value_node(self: Any, memo: dict[int, Any]) -> Any:
    """A fresh node with a deep copy of the metadata, the value and parent kept, flags cache empty."""
    state = dict(self.__dict__)
    if state.keys() != (ENUM_NODE_STATE if "enum_type" in state else VALUE_NODE_STATE):
        return _VALUE_NODE_COPIES[type(self)](self, memo)  # a node with more state: OmegaConf's own copy
    state["_metadata"] = copy.deepcopy(self._metadata, memo)
    state["_flags_cache"] = None
    if "fields" in state:
        state["fields"] = dict(state["fields"])  # EnumNode builds its own from the enum
    copied = object.__new__(type(self))
    copied.__dict__.update(state)
    return copied


_VALUE_NODE_COPIES: dict[type, Any] = {}


def value_nodes_copied_by_field() -> bool:
    """Give OmegaConf's value node classes the field-by-field deepcopy; True if installed."""
    from omegaconf import nodes

    classes = [getattr(nodes, name, None) for name in (*VALUE_NODE_CLASSES, "EnumNode")]
    if any(cls is None or "__deepcopy__" not in vars(cls) for cls in classes):
        return False
    for cls in classes:
        if vars(cls)["__deepcopy__"] is not _copy_value_node:
            _VALUE_NODE_COPIES[cls] = vars(cls)["__deepcopy__"]
            cls.__deepcopy__ = _copy_value_node  # type: ignore[method-assign]
    return True


def install() -> None:
    memoized_interpolation_parsing()
    yaml_written_by_libyaml()
    metadata_copied_by_field()
    value_nodes_copied_by_field()
    memoized_hydra_version_parsing()
