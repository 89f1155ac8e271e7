"""verl's config directory is read through `verl-qwen35-file://`: Hydra's file source with each text parsed once.
It must compose exactly what Hydra's own `file://` source composes, and never serve a stale parse."""

import pytest
from hydra import compose as hydra_compose
from hydra import initialize_config_dir
from omegaconf import OmegaConf

from tests.conftest import COMBOS
from verl_qwen35.config.resolvers import register_resolvers
from verl_qwen35.config.schema import register_schema
from verl_qwen35.config.sources import SCHEME, ParsedOnceFileSource, register_sources
from verl_qwen35.installed import conf_dir, installed_verl_schema, verl_config_dir

# On every verl CI tests (-m each_verl): the installed verl's config directory.
pytestmark = pytest.mark.each_verl


def _composed(overrides: list[str]) -> dict:
    register_resolvers()
    register_schema()
    register_sources()
    with initialize_config_dir(str(conf_dir()), version_base=None):
        cfg = hydra_compose("config", overrides=overrides, return_hydra_config=True)
    plain = OmegaConf.to_container(cfg, resolve=False)
    hydra = plain.pop("hydra")
    return {"config": plain, "choices": hydra["runtime"]["choices"]}


@pytest.mark.parametrize(("model", "device"), COMBOS)
def test_every_preset_composes_as_with_hydras_own_file_source(model, device):
    base = [f"model={model}", f"device={device}", f"verl_schema={installed_verl_schema()}"]
    ours = _composed(base)
    again = _composed(base)  # the second time from the parsed texts
    hydras = _composed([*base, f"hydra.searchpath=[file://{verl_config_dir()}]"])
    assert ours == again == hydras


def test_a_changed_file_is_parsed_afresh(tmp_path):
    source = ParsedOnceFileSource(provider="test", path=f"{SCHEME}://{tmp_path}")
    (tmp_path / "a.yaml").write_text("# @package _global_\nx: 1\n")
    first = source.load_config("a")
    first.config.x = 5  # Hydra merges into what it loads: the next load must not see it
    assert source.load_config("a").config.x == 1 and first.header["package"] == "_global_"
    (tmp_path / "a.yaml").write_text("x: 2\n")
    assert source.load_config("a").config.x == 2
    assert source.list("", None) == ["a"] and source.is_config("a") and not source.is_group("a")
