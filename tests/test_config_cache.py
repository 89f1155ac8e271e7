"""Parsed config files are reused by content; composition stays Hydra's and gives the same config."""

import pickle
import shutil

import pytest
from omegaconf import OmegaConf

from verl_qwen35 import config_cache
from verl_qwen35.compose import compose
from verl_qwen35.paths import conf_dir


def test_cached_composition_equals_a_fresh_parse(monkeypatch, tmp_path):
    """The same config whether the parsed files come from disk, memory, or a first parse."""
    monkeypatch.setattr(config_cache, "CACHE_DIR", tmp_path)
    monkeypatch.setattr(config_cache, "_memory", {})
    first = OmegaConf.to_container(compose(["model=397b", "device=npu"]))
    written = sorted(tmp_path.glob("*.pickle"))
    assert len(written) >= 8  # verl's trainer, ours, Hydra's own
    monkeypatch.setattr(config_cache, "_memory", {})

    def no_parsing(*args, **kwargs):
        raise AssertionError("a cached file was parsed again")

    monkeypatch.setattr(config_cache.OmegaConf, "load", no_parsing)
    assert OmegaConf.to_container(compose(["model=397b", "device=npu"])) == first
    assert sorted(tmp_path.glob("*.pickle")) == written


def test_a_changed_file_is_parsed_again(monkeypatch, tmp_path):
    """The key is the content: editing a file (same path) gives its new value, not the cached one."""
    monkeypatch.setattr(config_cache, "CACHE_DIR", tmp_path / "cache")
    conf = tmp_path / "conf"
    shutil.copytree(conf_dir(), conf)
    monkeypatch.setattr("verl_qwen35.compose.conf_dir", lambda: conf)
    monkeypatch.setattr("verl_qwen35.choices.conf_dir", lambda: conf)
    assert compose(["model=35b", "device=gpu"]).trainer.total_epochs == 15
    model_file = conf / "model" / "35b.yaml"
    model_file.write_text(model_file.read_text().replace("total_epochs: 15", "total_epochs: 3"))
    assert compose(["model=35b", "device=gpu"]).trainer.total_epochs == 3


@pytest.mark.parametrize("blob", [b"not a pickle", pickle.dumps(["a foreign pickle"]), b""])
def test_a_torn_or_foreign_cache_file_is_a_miss(monkeypatch, tmp_path, blob):
    monkeypatch.setattr(config_cache, "CACHE_DIR", tmp_path)
    monkeypatch.setattr(config_cache, "_memory", {})
    text = "a: ${b}\nb: 1\n"
    (tmp_path / f"{config_cache.cache_key(text)}.pickle").write_bytes(blob)
    assert OmegaConf.to_container(config_cache.parse(text), resolve=True) == {"a": 1, "b": 1}
    assert pickle.loads((tmp_path / f"{config_cache.cache_key(text)}.pickle").read_bytes()) == {"a": "${b}", "b": 1}


def test_a_cache_dir_that_is_a_file_only_costs_speed(monkeypatch, tmp_path):
    """VERL_QWEN35_CACHE_DIR pointing to a file: nothing read or written there, the parse still works."""
    afile = tmp_path / "afile"
    afile.write_text("keep")
    monkeypatch.setattr(config_cache, "CACHE_DIR", afile)
    monkeypatch.setattr(config_cache, "_memory", {})
    assert OmegaConf.to_container(config_cache.parse("x: 1\n")) == {"x": 1}
    assert afile.read_text() == "keep"


def test_each_parse_is_a_fresh_object(monkeypatch):
    """Hydra mutates what a source returns, so a cached parse must never be shared."""
    monkeypatch.setattr(config_cache, "_memory", {})
    one, two = config_cache.parse("x: {y: 1}\n"), config_cache.parse("x: {y: 1}\n")
    one.x.y = 2
    assert two.x.y == 1


def test_search_path_uses_the_cached_sources(tmp_path):
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-m", "verl_qwen35", "device=gpu", "model=35b", "--info", "searchpath"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=True,
    ).stdout
    assert "cachedpkg://hydra.conf" in out
    assert f"cachedfile://{conf_dir()}" in out
    assert "verl/trainer/config" in out.split("cachedfile://", 2)[2]
