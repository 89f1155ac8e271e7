"""override_transformer_config keys are checked against the real megatron-core TransformerConfig."""

import dataclasses

from verl_qwen35.checks.megatron_keys import MINDSPEED_KEYS, override_key_problems, transformer_config_fields
from verl_qwen35.compose import compose


def test_source_reading_equals_the_real_dataclass():
    from megatron.core.transformer.transformer_config import TransformerConfig

    assert transformer_config_fields() == {f.name for f in dataclasses.fields(TransformerConfig)}


def test_mindspeed_keys_are_not_stock_megatron_fields():
    assert not MINDSPEED_KEYS & transformer_config_fields()


def test_every_shipped_key_is_valid_on_its_device(combo):
    model, device = combo
    cfg = compose([f"model={model}", f"device={device}"])
    assert override_key_problems(cfg, device, transformer_config_fields()) == []


def test_npu_keys_on_gpu_and_typos_are_errors():
    cfg = compose(["model=35b", "device=npu", "+megatron.override_transformer_config.recompute_granularty=full"])
    found = override_key_problems(cfg, "gpu", transformer_config_fields())
    by_key = {p.keys[0].rsplit(".", 1)[1]: p.message for p in found}
    assert set(by_key) == {"use_flash_attn", "use_naive_l2norm", "recompute_granularty"}
    assert "MindSpeed" in by_key["use_flash_attn"]
    assert "did you mean recompute_granularity" in by_key["recompute_granularty"]


def test_without_megatron_core_it_warns_instead_of_guessing():
    (problem,) = override_key_problems(compose(["device=gpu"]), "gpu", None)
    assert problem.level == "warning"
