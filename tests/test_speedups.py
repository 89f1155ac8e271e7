"""The OmegaConf and Hydra speed-ups change nothing but time: each compared with the library's own path."""

import copy
import dataclasses
import enum
import pathlib
import typing

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf, _utils, base, grammar_parser, open_dict, read_write
from omegaconf import omegaconf as omegaconf_module
from omegaconf.errors import GrammarParseError

from verl_qwen35 import speedups
from verl_qwen35.paths import conf_dir

PRESETS = [(m, d) for m in ("35b", "122b", "397b") for d in ("gpu", "npu")]
# Strings OmegaConf quotes, escapes, folds or passes through as they are.
AWKWARD = {
    "bool_like": "true",
    "float_like": "1e3",
    "int_like": "0x1F",
    "colon": "x: y",
    "unicode": "ünïcode ☃",
    "newline": "line1\nline2",
    "leading_space": " lead",
    "long": "a b " * 60,
    "quote": "'q'",
    "hash": "#x",
    "empty": "",
    "none": None,
    "list": [1, "2", 3.0, None],
    "interpolation": "${empty}",
    "null_word": "null",
    "tilde": "~",
    "dash": "- a",
    "tab": "tab\there",
    "separator": "\u2028",
}


@pytest.fixture(scope="module")
def presets():
    with initialize_config_dir(config_dir=str(conf_dir()), version_base=None):
        return {p: compose("config", [f"model={p[0]}", f"device={p[1]}"], return_hydra_config=True) for p in PRESETS}


def test_all_are_installed_with_the_pinned_libraries():
    """If OmegaConf or Hydra change shape they switch themselves off; this says so instead of going slower."""
    assert speedups.memoized_interpolation_parsing()
    assert speedups.yaml_written_by_libyaml()
    assert speedups.metadata_copied_by_field()
    assert speedups.value_nodes_copied_by_field()
    assert speedups.memoized_hydra_version_parsing()


def test_hydra_version_answers_are_the_same_memoized():
    from hydra import version

    memo = version._get_version
    for ver in ("1.1", "1.2", "1.3", "1.3.2", "1.2.0.dev2", "2.0"):
        assert memo(ver) == memo.__wrapped__(ver)
    assert version.base_at_least("1.1") and memo.cache_info().hits > 0


def test_yaml_text_is_byte_identical_to_omegaconfs_own_dumper(presets, monkeypatch):
    fast = omegaconf_module.get_omega_conf_dumper
    assert fast is not _utils.get_omega_conf_dumper
    configs = [*presets.values(), OmegaConf.create(AWKWARD)]
    ours = [OmegaConf.to_yaml(c) for c in configs]
    monkeypatch.setattr(omegaconf_module, "get_omega_conf_dumper", _utils.get_omega_conf_dumper)
    assert ours == [OmegaConf.to_yaml(c) for c in configs]
    assert "'true'" in ours[-1] and "ünïcode" in ours[-1]  # quoting and unicode as OmegaConf writes them


def test_resolved_values_are_the_same_without_the_parse_memo(presets, monkeypatch):
    memo = grammar_parser.parse
    ours = {p: OmegaConf.to_container(_job(c), resolve=True) for p, c in presets.items()}
    assert memo.cache_info().hits > 0
    for module in (base, _utils, grammar_parser):
        monkeypatch.setattr(module, "parse", memo.__wrapped__)
    theirs = {p: OmegaConf.to_container(_job(c), resolve=True) for p, c in presets.items()}
    assert ours == theirs


def _job(cfg):
    """The task config as Hydra hands it to a job (no hydra node: its interpolations need a run)."""
    job = copy.deepcopy(cfg)
    with read_write(job), open_dict(job):
        del job["hydra"]
    return job


def test_a_string_that_does_not_parse_raises_every_time():
    for _ in range(2):  # the error is not remembered as an answer
        with pytest.raises(GrammarParseError):
            grammar_parser.parse("${foo:")


def test_deep_copies_are_equal_and_independent(presets, monkeypatch):
    cfg = presets[("122b", "npu")]
    ours = copy.deepcopy(cfg)
    monkeypatch.delattr(base.Metadata, "__deepcopy__")
    monkeypatch.delattr(base.ContainerMetadata, "__deepcopy__")
    theirs = copy.deepcopy(cfg)
    assert OmegaConf.to_yaml(ours) == OmegaConf.to_yaml(theirs) == OmegaConf.to_yaml(cfg)
    for copied in (ours, theirs):
        pairs = ((copied, cfg), (copied.parallel, cfg.parallel), (copied.hydra.runtime, cfg.hydra.runtime))
        for node, original in pairs:
            assert node._metadata == original._metadata
            assert node._metadata is not original._metadata
            assert node._metadata.flags is not original._metadata.flags
            assert node._metadata.resolver_cache is not original._metadata.resolver_cache
        assert copied.parallel._get_parent() is copied and copied._get_parent() is None
    OmegaConf.set_readonly(ours.parallel, True)  # a flag set on the copy stays on the copy
    assert not OmegaConf.is_readonly(cfg.parallel)


def test_a_filled_resolver_cache_and_odd_flags_are_deep_copied(monkeypatch):
    OmegaConf.register_new_resolver("verl_qwen35_test_cached", lambda: [1, 2], use_cache=True)
    try:
        cfg = OmegaConf.create({"a": "${verl_qwen35_test_cached:}", "b": {"c": 1}})
        assert cfg.a == [1, 2]
        cfg.b._metadata.flags["custom"] = ["not", "a", "bool"]  # whatever a flag may ever hold
        ours = copy.deepcopy(cfg)
        monkeypatch.delattr(base.Metadata, "__deepcopy__")
        monkeypatch.delattr(base.ContainerMetadata, "__deepcopy__")
        theirs = copy.deepcopy(cfg)
        for copied in (ours, theirs):
            assert copied._metadata.resolver_cache == cfg._metadata.resolver_cache
            assert copied._metadata.resolver_cache is not cfg._metadata.resolver_cache
            cached = next(iter(copied._metadata.resolver_cache.values()))
            assert next(iter(cached.values())) is not next(
                iter(next(iter(cfg._metadata.resolver_cache.values())).values())
            )
            assert copied.b._metadata.flags == cfg.b._metadata.flags
            assert copied.b._metadata.flags["custom"] is not cfg.b._metadata.flags["custom"]
    finally:
        OmegaConf.clear_resolver("verl_qwen35_test_cached")


class Colour(enum.Enum):
    RED = 1
    BLUE = 2


@dataclasses.dataclass
class Typed:
    colour: Colour = Colour.RED
    count: int = 3
    ratio: float = 0.5
    name: str = "x"
    flag: bool = True
    path: pathlib.Path = pathlib.Path("/tmp")
    raw: bytes = b"ab"
    anything: typing.Any = None


def _own_copies(monkeypatch):
    """OmegaConf's own deepcopy on every class the speed-ups replaced."""
    monkeypatch.delattr(base.Metadata, "__deepcopy__")
    monkeypatch.delattr(base.ContainerMetadata, "__deepcopy__")
    for cls, own in speedups._VALUE_NODE_COPIES.items():
        monkeypatch.setattr(cls, "__deepcopy__", own)


def _nodes(cfg):
    """(path, node) for every node under cfg."""
    out = [("", cfg)]
    for key in cfg.keys() if OmegaConf.is_dict(cfg) else range(len(cfg)):
        child = cfg._get_node(key)
        out += [
            (f"{key}{'.' if p else ''}{p}", n)
            for p, n in (_nodes(child) if OmegaConf.is_config(child) else [("", child)])
        ]
    return out


def test_every_value_node_copies_like_omegaconfs_own(presets, monkeypatch):
    typed = OmegaConf.structured(Typed)
    typed.colour = "BLUE"
    configs = [presets[("122b", "npu")], typed, OmegaConf.create({"l": [1, "a", None, {"b": 2.5}]})]
    odd = OmegaConf.create({"v": 1})
    odd._get_node("v").__dict__["extra"] = ["state"]  # more than __init__ sets: OmegaConf's own copy is used
    configs.append(odd)
    ours = [copy.deepcopy(c) for c in configs]
    _own_copies(monkeypatch)
    theirs = [copy.deepcopy(c) for c in configs]
    for mine, own, original in zip(ours, theirs, configs, strict=True):
        pairs = zip(_nodes(mine), _nodes(own), _nodes(original), strict=True)
        for (path, a), (_, b), (_, o) in pairs:
            assert type(a) is type(b), path
            assert a._metadata == b._metadata and a._metadata is not o._metadata, path
            if not OmegaConf.is_config(a):
                assert {k: v for k, v in vars(a).items() if k not in ("_metadata", "_parent")} == {
                    k: v for k, v in vars(b).items() if k not in ("_metadata", "_parent")
                }, path
                assert (a._get_parent() is None) == (b._get_parent() is None), path
    assert "extra" not in vars(ours[-1]._get_node("v"))  # as OmegaConf's own copy: a fresh node
    assert ours[1].colour is Colour.BLUE and OmegaConf.get_type(ours[1]) is Typed
