"""A reused merge gives exactly Hydra's own merge; anything whose content it cannot name is merged afresh."""

import copy
import pickle

import pytest
from hydra import compose, initialize_config_dir
from hydra._internal.config_loader_impl import ConfigLoaderImpl
from hydra.core.config_store import ConfigStore
from omegaconf import OmegaConf

from verl_qwen35 import config_cache, merge_cache
from verl_qwen35.paths import conf_dir

VARIANTS = [
    ["device=npu", "model=122b"],
    ["device=gpu", "model=35b"],
    ["device=gpu", "model=397b", "parallel=397b_gpu"],
    ["device=npu", "model=122b", "verl_schema=v0_8", "submit=slurm"],
    ["device=npu", "model=122b", "~tuning", "+megatron.use_distributed_optimizer=true"],
    ["device=npu", "model=122b", "hydra/job_logging=none", "parallel.tp=2"],
]


@pytest.fixture
def fresh_cache(monkeypatch, tmp_path):
    monkeypatch.setattr(config_cache, "CACHE_DIR", tmp_path)
    monkeypatch.setattr(config_cache, "_memory", {})
    return tmp_path


@pytest.fixture
def hydra_merges(monkeypatch):
    """Hydra's own merges (the cache's misses), counted."""
    calls: list[int] = []
    hydras = merge_cache._hydra_merge

    def counted(self, defaults, repo):
        calls.append(len(defaults))
        return hydras(self, defaults=defaults, repo=repo)

    monkeypatch.setattr(merge_cache, "_hydra_merge", counted)
    return calls


def _compose(overrides):
    with initialize_config_dir(config_dir=str(conf_dir()), version_base=None):
        cfg = compose("config", overrides, return_hydra_config=True)
    return cfg


def _flags(cfg):
    """Every node's struct/readonly flags, by key."""
    out = {}

    def walk(node, path):
        out[path] = (OmegaConf.is_struct(node), OmegaConf.is_readonly(node))
        for key in node.keys() if OmegaConf.is_dict(node) else range(len(node)):
            child = node._get_node(key)
            if OmegaConf.is_config(child):
                walk(child, f"{path}.{key}")

    walk(cfg, "")
    return out


def test_installed():
    assert merge_cache.install()
    assert ConfigLoaderImpl._compose_config_from_defaults_list is merge_cache._compose


@pytest.mark.parametrize("overrides", VARIANTS, ids=lambda o: " ".join(o))
def test_reused_merge_equals_hydras_own(overrides, fresh_cache, monkeypatch):
    first = _compose(overrides)  # fills the cache
    written = sorted(fresh_cache.glob("merged-*.pickle"))
    assert len(written) == 1
    monkeypatch.setattr(config_cache, "_memory", {})  # the next one comes from disk
    reused = _compose(overrides)
    monkeypatch.setattr(ConfigLoaderImpl, "_compose_config_from_defaults_list", merge_cache._hydra_merge)
    plain = _compose(overrides)
    assert OmegaConf.to_yaml(reused) == OmegaConf.to_yaml(plain) == OmegaConf.to_yaml(first)
    assert _flags(reused) == _flags(plain)
    assert sorted(fresh_cache.glob("merged-*.pickle")) == written


def test_each_list_has_its_own_entry_and_a_hit_does_not_merge(fresh_cache, hydra_merges):
    for overrides in VARIANTS[:3]:
        _compose(overrides)
    assert len(hydra_merges) == 3 and len(list(fresh_cache.glob("merged-*.pickle"))) == 3
    for overrides in VARIANTS[:3]:
        _compose([*overrides, "parallel.tp=2"])  # values only: the same list, the same files
    assert len(hydra_merges) == 3


def test_a_structured_config_of_another_provider_is_merged_afresh(fresh_cache, monkeypatch, hydra_merges):
    store = ConfigStore.instance()
    monkeypatch.setattr(store, "repo", copy.deepcopy(store.repo))
    store.store(group="submit", name="from_code", node={"backend": "none"}, provider="someone")
    cfg = _compose(["device=npu", "model=122b", "submit=from_code"])
    assert cfg.submit.backend == "none"
    _compose(["device=npu", "model=122b", "submit=from_code"])
    assert len(hydra_merges) == 2 and not list(fresh_cache.glob("merged-*.pickle"))


def test_a_schema_over_one_of_our_files_is_merged_afresh(fresh_cache, monkeypatch, hydra_merges):
    store = ConfigStore.instance()
    monkeypatch.setattr(store, "repo", copy.deepcopy(store.repo))
    store.store(group="submit", name="none", node={"backend": "none"}, provider="someone")
    _compose(["device=npu", "model=122b"])
    _compose(["device=npu", "model=122b"])
    assert len(hydra_merges) == 2 and not list(fresh_cache.glob("merged-*.pickle"))


def test_a_merge_that_does_not_pickle_is_used_uncached(fresh_cache, monkeypatch):
    """A config holding something pickle refuses: composition works, nothing is stored."""
    plain = OmegaConf.to_yaml(_compose(["device=npu", "model=122b"]))
    monkeypatch.setattr(config_cache, "_memory", {})
    for stored in fresh_cache.glob("*.pickle"):
        stored.unlink()

    def refuse(*args, **kwargs):
        raise pickle.PicklingError("not today")

    monkeypatch.setattr(config_cache.pickle, "dumps", refuse)
    assert OmegaConf.to_yaml(_compose(["device=npu", "model=122b"])) == plain
    assert not list(fresh_cache.glob("*.pickle")) and not config_cache._memory
