"""The bridge's own values for Qwen3.5 MoE (verl_qwen35/data/bridges/qwen35_moe.yaml) as megatron-core judges them.

verl's engine builds the TransformerConfig through mbridge (the GPU presets) or Megatron-Bridge (the NPU presets),
which set values of their own before the user's `override_transformer_config`. Each fast rule over those values
has a twin here against megatron-core's real TransformerConfig (`validators.real.real_transformer_problems` with
the same bridge); the table itself is held against the real bridge wherever one with Qwen3.5 installs.
"""

import dataclasses
import warnings
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from tests.commands import verl_qwen35
from tests.configs import config
from tests.runs import preflight
from verl_qwen35.checks.bridges import TABLE_NAME, bridge_of, bridges
from verl_qwen35.checks.transformer import transformer_problems
from verl_qwen35.installed import conf_dir
from verl_qwen35.model.layout import Layout
from verl_qwen35.validators.bridge import installed, mbridge_values
from verl_qwen35.validators.real import real_transformer_problems

OTC = "megatron.override_transformer_config"
ARCH = OmegaConf.load(Path(conf_dir()) / "model" / "35b.yaml").model
BASE = Layout(nnodes=1, devices_per_node=16, tp=2, pp=1, cp=1, ep=8, etp=1, vpp=None, gen_tp=2)
MB, MEGATRON_BRIDGE = bridges()["mbridge"], bridges()["megatron_bridge"]
FULL = {"recompute_granularity": "full", "recompute_method": "uniform", "recompute_num_layers": 1}
SELECTIVE = {"recompute_granularity": "selective"}


@dataclasses.dataclass(frozen=True)
class Row:
    name: str
    bridge: str  # mbridge | megatron_bridge
    otc: dict
    refused: tuple[str, ...]  # the override keys the fast rule names (without the prefix); () = accepted
    layout: dict = dataclasses.field(default_factory=dict)


ROWS = [
    # transformer_config.py: "moe_shared_expert_overlap only works with alltoall token dispatcher"; mbridge turns it on
    Row("flex-under-mbridge", "mbridge", {"moe_token_dispatcher_type": "flex"}, ("moe_shared_expert_overlap",)),
    Row("flex-under-megatron-bridge", "megatron_bridge", {"moe_token_dispatcher_type": "flex"}, ()),
    Row(
        "flex-with-overlap-off",
        "mbridge",
        {"moe_token_dispatcher_type": "flex", "moe_shared_expert_overlap": False},
        (),
    ),
    # transformer_config.py: "disable moe_shared_expert_overlap when enabling overlap_moe_expert_parallel_comm"
    Row(
        "ep-overlap-under-mbridge",
        "mbridge",
        {"overlap_moe_expert_parallel_comm": True},
        ("overlap_moe_expert_parallel_comm", "moe_shared_expert_overlap"),
    ),
    Row("ep-overlap-under-megatron-bridge", "megatron_bridge", {"overlap_moe_expert_parallel_comm": True}, ()),
    # "shared_experts recompute cannot work with --moe-shared-expert-overlap"
    Row(
        "shared-experts-recompute-under-mbridge",
        "mbridge",
        {**SELECTIVE, "recompute_modules": ["shared_experts"]},
        ("recompute_modules",),
    ),
    Row(
        "shared-experts-recompute-under-megatron-bridge",
        "megatron_bridge",
        {**SELECTIVE, "recompute_modules": ["shared_experts"]},
        (),
    ),
    # "moe_act in recompute_modules is only supported with moe_grouped_gemm": both bridges turn grouped GEMM on
    Row("moe-act-recompute-mbridge", "mbridge", {**SELECTIVE, "recompute_modules": ["moe_act"]}, ()),
    Row("moe-act-recompute-megatron-bridge", "megatron_bridge", {**SELECTIVE, "recompute_modules": ["moe_act"]}, ()),
    # "bias_activation_fusion and use_te_activation_func cannot be both true": both bridges fuse
    Row(
        "te-activation-mbridge",
        "mbridge",
        {"use_te_activation_func": True},
        ("bias_activation_fusion", "use_te_activation_func"),
    ),
    Row(
        "te-activation-megatron-bridge",
        "megatron_bridge",
        {"use_te_activation_func": True},
        ("bias_activation_fusion", "use_te_activation_func"),
    ),
    Row("te-activation-unfused", "mbridge", {"use_te_activation_func": True, "bias_activation_fusion": False}, ()),
    # "Batch invariant mode only supports attention_backend flash": mbridge sets no backend (megatron-core: auto)
    Row(
        "batch-invariant-mbridge",
        "mbridge",
        {"batch_invariant_mode": True},
        ("batch_invariant_mode", "attention_backend"),
    ),
    Row("batch-invariant-megatron-bridge", "megatron_bridge", {"batch_invariant_mode": True}, ()),
    # model_parallel_config.py / transformer_config.py: distribute_saved_activations with sequence parallelism;
    # mbridge turns sequence parallelism on at tp > 1 whatever megatron.sequence_parallel says
    Row(
        "distributed-activations-mbridge",
        "mbridge",
        {**FULL, "distribute_saved_activations": True},
        ("distribute_saved_activations",),
    ),
    Row(
        "distributed-activations-megatron-bridge",
        "megatron_bridge",
        {**FULL, "distribute_saved_activations": True},
        (),
    ),
    Row("allgather-mbridge", "mbridge", {"moe_token_dispatcher_type": "allgather"}, ("moe_shared_expert_overlap",)),
    Row(
        "allgather-megatron-bridge",
        "megatron_bridge",
        {"moe_token_dispatcher_type": "allgather"},
        ("moe_token_dispatcher_type",),
    ),
]


def fast(row: Row) -> list:
    lo = dataclasses.replace(BASE, **row.layout)
    return transformer_problems(row.otc, ARCH, lo, bridge=bridges()[row.bridge])


@pytest.mark.parametrize("row", ROWS, ids=[r.name for r in ROWS])
def test_the_fast_rule_judges_the_bridges_values(row):
    found = fast(row)
    if not row.refused:
        assert found == [], [str(p) for p in found]
        return
    assert found, row
    keys = {k.removeprefix(f"{OTC}.") for k in found[0].keys}
    assert set(row.refused) <= keys, str(found[0])
    by_bridge = [n for n in keys if n not in row.otc and n in bridges()[row.bridge].settings(BASE)]
    for name in by_bridge:  # a value the user did not type: the message says who set it, and where
        assert f"sets {name}=" in found[0].message and bridges()[row.bridge].short in found[0].message


@pytest.mark.each_verl
@pytest.mark.parametrize("row", ROWS, ids=[r.name for r in ROWS])
def test_megatrons_own_transformer_config_agrees_on_the_bridges_values(row):
    lo = dataclasses.replace(BASE, **row.layout)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        real = real_transformer_problems(row.otc, ARCH, lo, "gpu", bridge=bridges()[row.bridge])
    assert bool(real) == bool(row.refused), [str(p) for p in real]
    if real and row.refused:
        assert {f"{OTC}.{k}" for k in row.refused} & set(real[0].keys), str(real[0])


def test_every_value_is_cited_to_a_file_and_line_at_the_pinned_commit():
    for bridge in bridges().values():
        for setting in bridge.settings(BASE).values():
            where = setting.source.split()
            assert ":" in where[1] and where[1].split(":")[1][0].isdigit(), setting
            if setting.by != "verl":
                assert where[0] == f"{bridge.repository}@{bridge.commit[: len(where[0].split('@')[1])]}", setting


def test_the_bridge_follows_vanilla_mbridge():
    assert bridge_of(config("35b_gpu")) is MB
    assert bridge_of(config("35b_npu")) is MEGATRON_BRIDGE


def test_a_layout_mbridge_cannot_load_is_refused_naming_the_key():
    found = transformer_problems({"moe_grouped_gemm": False}, ARCH, BASE, bridge=MB)
    assert [p.keys for p in found] == [(f"{OTC}.moe_grouped_gemm",)]
    assert "qwen3_5_vl_bridge.py:284" in found[0].message
    assert transformer_problems({"moe_grouped_gemm": False}, ARCH, BASE, bridge=MEGATRON_BRIDGE) == []


def test_megatron_bridge_refuses_tp_above_the_kv_heads():
    lo = dataclasses.replace(BASE, tp=4)
    found = [p for p in transformer_problems({}, ARCH, lo, bridge=MEGATRON_BRIDGE) if p.keys == ("parallel.tp",)]
    assert found and "qwen35_vl_provider.py:373" in found[0].message
    assert not [p for p in transformer_problems({}, ARCH, lo, bridge=MB) if p.keys == ("parallel.tp",)]


def test_a_field_of_the_bridges_own_config_class_is_not_an_unknown_key():
    cfg = config("35b_gpu", **{f"{OTC}.rotary_percent": 0.25})
    assert not [p for p in preflight(cfg, "warning") if f"{OTC}.rotary_percent" in p.keys]


@pytest.mark.parametrize("preset", ["35b_gpu", "35b_npu", "122b_gpu", "122b_npu"])
def test_every_shipped_preset_passes_its_bridge(preset):
    cfg = config(preset)
    from verl_qwen35.checks import override_dict

    otc = override_dict(cfg)
    found = transformer_problems(otc, cfg.model, Layout.of(cfg), bridge=bridge_of(cfg))
    assert found == [], [str(p) for p in found]


@pytest.mark.each_verl
@pytest.mark.parametrize("preset", ["35b_gpu", "35b_npu"])
def test_every_shipped_preset_passes_megatron_core_through_its_bridge(preset):
    from verl_qwen35.checks import override_dict

    cfg = config(preset)
    device = preset.rsplit("_", 1)[1]
    otc = {**override_dict(cfg), "mtp_num_layers": None}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        found = real_transformer_problems(
            otc, cfg.model, Layout.of(cfg), device, sequence_parallel=True, bridge=bridge_of(cfg)
        )
    assert found == [], [str(p) for p in found]


@pytest.mark.parametrize("mode", ["true", "full"])
def test_a_user_sees_the_bridges_value_refused_with_exit_2(tmp_path, mode):
    """What a user types: the dispatcher the bridge's shared-expert overlap forbids; refused before anything runs."""
    run = verl_qwen35(tmp_path, "device=gpu", "model=35b", f"dry_run={mode}", f"+{OTC}.moe_token_dispatcher_type=flex")
    assert run.returncode == 2, run.stderr[-2000:]
    out = run.stdout + run.stderr
    assert f"{OTC}.moe_token_dispatcher_type" in out and "mbridge 641a5a0 sets moe_shared_expert_overlap=true" in out
    assert "Traceback" not in out


@pytest.mark.each_verl
@pytest.mark.skipif(
    not installed(MB),
    reason="mbridge at verl's pinned commit 641a5a0 is not installed (PyPI's mbridge 0.15.1 has no Qwen3.5): "
    "pip install git+https://github.com/ISEEKYAN/mbridge.git@641a5a0 (it also needs einops)",
)
@pytest.mark.parametrize("layout", [{}, {"tp": 1}, {"pp": 2, "vpp": 2}])
def test_the_table_matches_what_mbridge_itself_sets(layout):
    lo = dataclasses.replace(BASE, **layout)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        real = mbridge_values(ARCH, lo, "bfloat16", {})
    for name, setting in MB.settings(lo).items():
        assert real[name] == setting.value, f"{name}: mbridge sets {real[name]!r}, {TABLE_NAME} says {setting.value!r}"
    assert MB.extra_fields <= set(real) | {"rotary_base"}  # mbridge leaves rotary_base at its class default


@pytest.mark.skipif(
    not installed(MEGATRON_BRIDGE),
    reason="Megatron-Bridge is not installed (0.6.x needs Python 3.12 and transformer-engine): the table's "
    "Megatron-Bridge values are read from its source at de93536e",
)
def test_megatron_bridge_is_importable_where_installed():
    import importlib

    importlib.import_module(MEGATRON_BRIDGE.module)
