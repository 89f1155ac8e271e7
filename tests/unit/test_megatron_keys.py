"""override_transformer_config keys are checked against megatron-core's TransformerConfig field data."""

import dataclasses
import enum
import json
import subprocess
import sys
import types
import typing
from pathlib import Path

from verl_qwen35.checks.megatron_keys import (
    MINDSPEED_KEYS,
    field_spec,
    override_ddp_problems,
    override_key_problems,
    patch_value_problems,
    transformer_config_fields,
)
from verl_qwen35.config import compose
from verl_qwen35.config.patch import link_patch
from verl_qwen35.data import UPSTREAM_DIR
from verl_qwen35.installed import installed_mcore

ROOT = Path(__file__).resolve().parents[2]


def test_shipped_field_data_equals_the_installed_dataclass():
    from megatron.core.transformer.transformer_config import TransformerConfig

    assert transformer_config_fields() == {f.name for f in dataclasses.fields(TransformerConfig)}
    hints = typing.get_type_hints(TransformerConfig)
    assert "bool" in field_spec()["moe_grouped_gemm"]["kinds"] and hints["moe_grouped_gemm"] is bool
    assert field_spec()["recompute_granularity"]["choices"] == list(
        typing.get_args(typing.get_args(hints["recompute_granularity"])[0])
    )


def test_shipped_ddp_fields_equal_the_installed_dataclass():
    from megatron.core.distributed.distributed_data_parallel_config import DistributedDataParallelConfig

    from verl_qwen35.checks.megatron_keys import ddp_field_spec

    assert set(ddp_field_spec()) == {f.name for f in dataclasses.fields(DistributedDataParallelConfig)}


def test_the_generator_reproduces_the_shipped_file():
    """scripts/megatron_fields.py reads the installed megatron-core's source (no torch) into the shipped file."""
    script = ROOT / "scripts" / "megatron_fields.py"
    run = subprocess.run([sys.executable, str(script), "--check"], capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr


def test_mindspeed_keys_are_not_stock_megatron_fields():
    assert not MINDSPEED_KEYS & transformer_config_fields()
    for key in (
        "use_fused_swiglu",
        "use_fused_rotary_pos_emb",
        "use_fused_rmsnorm",
        "use_flash_attn",
        "use_naive_l2norm",
        "context_parallel_algo",
        "use_ascend_mc2",
        "swap_optimizer",
        "moe_alltoall_overlap_comm",
        "fused_permute_unpermute",
        "use_distributed_optimizer",
    ):
        assert key in MINDSPEED_KEYS


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


def test_an_older_megatron_core_falls_back_to_the_oldest_shipped_fields():
    assert field_spec((0, 1)) == field_spec((0, 16))


def test_override_keys_are_checked_against_the_installed_fields_unless_others_are_given():
    cfg = compose(["model=35b", "device=gpu"])
    assert override_key_problems(cfg, "gpu") == []
    older = transformer_config_fields() - {"moe_grouped_gemm"}  # a megatron-core without the field
    (problem,) = override_key_problems(cfg, "gpu", older)
    assert problem.keys == ("megatron.override_transformer_config.moe_grouped_gemm",)
    assert problem.message.startswith("is not a field of megatron-core ")


def test_ddp_keys_are_named_where_the_user_sets_them():
    cfg = compose(["model=35b", "device=gpu", "+megatron.override_ddp_config={bucket_sise: 40000000}"])
    link_patch(cfg)  # as the Run builder does: the patch reaches the actor's section, which the rule reads
    (problem,) = override_ddp_problems(cfg)
    assert problem.keys == ("megatron.override_ddp_config.bucket_sise",)
    assert (
        problem.message == "is not a field of megatron-core's DistributedDataParallelConfig; did you mean bucket_size?"
    )


def test_patch_values_name_their_key_and_what_verl_takes():
    cfg = compose(["model=35b", "device=gpu", "megatron.dtype=fp8", "megatron.use_mbridge=false"])
    assert [(p.level, p.keys, p.message) for p in patch_value_problems(cfg)] == [
        ("error", ("megatron.use_mbridge",), "must be true: verl's Megatron engine builds Qwen3.5 through mbridge"),
        ("error", ("megatron.dtype",), "='fp8': verl's Megatron engine takes one of ('bfloat16', 'float16')"),
    ]
    assert patch_value_problems(compose(["model=35b", "device=gpu", "megatron.dtype=float16"])) == []


def test_without_megatron_core_the_ascend_images_0_16_is_assumed_and_said(monkeypatch):
    """A config-only install has no megatron-core. importlib.metadata finds distributions on sys.path, so
    without site-packages on it megatron-core is not installed as far as installed_mcore() can tell."""
    from verl_qwen35.checks.megatron_keys import mcore_in_use
    from verl_qwen35.installed import installed_mcore

    cfg = compose(["model=35b", "device=gpu", "+megatron.override_transformer_config.recompute_granularty=full"])
    assert mcore_in_use() == ((0, 16), "0.16 (installed)")  # megatron-core 0.16.1 in both venvs
    monkeypatch.setattr(sys, "path", [p for p in sys.path if "site-packages" not in p])
    installed_mcore.cache_clear()
    try:
        assert installed_mcore() is None
        assert mcore_in_use() == ((0, 16), "0.16 (assumed: megatron-core is not installed here)")
        (typo,) = override_key_problems(cfg, "gpu")
        assert typo.message.startswith(
            "is not a field of megatron-core 0.16 (assumed: megatron-core is not installed here) TransformerConfig"
        )
    finally:
        installed_mcore.cache_clear()  # read again with the real sys.path by the next caller


def test_a_megatron_core_newer_than_every_shipped_list_gets_a_warning_not_a_refusal():
    """A megatron-core newer than 0.19 (the newest list shipped) may add fields: refusing them would refuse
    real settings; dry_run=full builds the installed TransformerConfig and judges them. 0.18's and 0.19's
    lists ship (read from their wheels' source): there an unknown key is an error, as on 0.16."""
    cfg = compose(["model=35b", "device=gpu", "+megatron.override_transformer_config.a_field_of_a_newer_release=1"])
    key = "megatron.override_transformer_config.a_field_of_a_newer_release"
    for listed_release in ((0, 16), (0, 18), (0, 19)):
        (listed,) = override_key_problems(cfg, "gpu", mcore=listed_release)
        assert (listed.level, listed.keys) == ("error", (key,))
    (newer,) = override_key_problems(cfg, "gpu", mcore=(0, 20))
    assert (newer.level, newer.keys) == ("warning", (key,))
    assert "0.19's TransformerConfig" in newer.message and "dry_run=full" in newer.message
    # 0.18 removed moe_extended_tp: a key 0.16 knows is refused on 0.18, named with the release.
    cfg = compose(["model=35b", "device=gpu", "+megatron.override_transformer_config.moe_extended_tp=true"])
    assert override_key_problems(cfg, "gpu", mcore=(0, 16)) == []
    (gone,) = override_key_problems(cfg, "gpu", mcore=(0, 18))
    assert gone.level == "error" and "0.18" in gone.message
    # A MindSpeed key on GPU stays an error whatever the release: stock megatron-core never has it.
    cfg = compose(["model=35b", "device=npu"])
    assert {p.level for p in override_key_problems(cfg, "gpu", mcore=(0, 18))} == {"error"}


# The live classes' annotations as value kinds: the oracle the generator's source reader must agree with.
SIMPLE = {bool: "bool", int: "int", float: "float", str: "str", list: "list", dict: "dict", type(None): "null"}


def _live_kinds(annotation: object) -> tuple[set[str], list | None]:
    origin = typing.get_origin(annotation)
    if annotation in SIMPLE:
        return {SIMPLE[annotation]}, None
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return {"str"}, sorted(annotation.__members__)  # verl maps names: AttnBackend[value]
    if origin is typing.Literal:
        values = list(typing.get_args(annotation))
        return {SIMPLE[type(v)] for v in values}, values
    if origin in (list, tuple) or annotation in (list, tuple):
        return {"list"}, None
    if origin in (typing.Union, types.UnionType):  # choices only where every non-null member lists them
        parts = [_live_kinds(arg) for arg in typing.get_args(annotation)]
        open_ended = any(choices is None and kinds - {"null"} for kinds, choices in parts)
        listed = [value for _, choices in parts for value in choices or ()]
        return set().union(*(kinds for kinds, _ in parts)), None if open_ended or not listed else listed
    return {"any"}, None


def test_the_shipped_file_is_what_the_installed_live_dataclasses_accept():
    """The generator reads source text (so it can read a wheel that does not install here); on the installed
    release its every field, kind and choice is what megatron-core's own classes say at run time."""
    from megatron.core.distributed.distributed_data_parallel_config import DistributedDataParallelConfig
    from megatron.core.optimizer.optimizer_config import OptimizerConfig
    from megatron.core.transformer.transformer_config import TransformerConfig

    major, minor = installed_mcore()
    shipped = json.loads((UPSTREAM_DIR / f"megatron_core_{major}.{minor}.json").read_text())
    for key, dataclass in (
        ("fields", TransformerConfig),
        ("ddp_fields", DistributedDataParallelConfig),
        ("optimizer_fields", OptimizerConfig),
    ):
        hints = typing.get_type_hints(dataclass)
        live = {}
        for field in sorted(dataclasses.fields(dataclass), key=lambda f: f.name):
            accepted, choices = _live_kinds(hints[field.name])
            live[field.name] = {"kinds": sorted(accepted), **({"choices": choices} if choices else {})}
        assert shipped[key] == live, key


def test_the_gpu_presets_megatron_keys_are_fields_of_the_megatron_core_verl_main_uses():
    """verl main pins megatron-core core_v0.18.0 (0.19 is the newest): its keys are checked there too."""
    cfg = compose(["model=35b", "device=gpu"])
    for release in ((0, 18), (0, 19)):
        assert override_key_problems(cfg, "gpu", set(field_spec(release))) == []
