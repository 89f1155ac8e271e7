"""The memory estimate: published parameter counts, published layouts fit, hand-computed small cases."""

import dataclasses
import json
import subprocess
import sys

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from omegaconf import OmegaConf

from tests.runs import preflight
from verl_qwen35.checks.layout import layout_problems
from verl_qwen35.config import compose
from verl_qwen35.config.choices import options
from verl_qwen35.model.layout import Layout
from verl_qwen35.model.memory import GIB, ModelFacts, Settings, estimate, estimate_layout

# shared/reference/README.md, "Model architecture" and "397B facts" (no 397B preset ships in this branch).
QWEN35_397B = {
    "num_layers": 60,
    "hidden_size": 4096,
    "num_attention_heads": 32,
    "num_key_value_heads": 2,
    "head_dim": 256,
    "num_experts": 512,
    "num_experts_per_tok": 10,
    "moe_intermediate_size": 1024,
    "shared_expert_intermediate_size": 1024,
    "linear_num_key_heads": 16,
    "linear_num_value_heads": 64,
    "linear_key_head_dim": 128,
    "linear_value_head_dim": 128,
    "full_attention_interval": 4,
    "vocab_size": 248320,
}

# Published totals and active parameters (the model names: 35B-A3B, 122B-A10B, 397B-A17B).
PUBLISHED = {"35b": (35e9, 3e9), "36_35b": (35e9, 3e9), "122b": (122e9, 10e9), "397b": (397e9, 17e9)}


def resolved(overrides: list[str]):
    cfg = compose(overrides)
    OmegaConf.resolve(cfg)
    return cfg


def facts(model: str) -> ModelFacts:
    return ModelFacts.of(QWEN35_397B if model == "397b" else resolved([f"model={model}"]).model)


@pytest.mark.parametrize("model", sorted(PUBLISHED))
def test_parameter_totals_match_the_published_ones(model):
    total, active = PUBLISHED[model]
    m = facts(model)
    assert abs(m.params_total - total) / total < 0.04, m.params_total
    assert abs(m.params_active - active) / active < 0.20, m.params_active


def test_every_shipped_preset_fits_its_documented_hardware(combo):
    model, device = combo
    cfg = resolved([f"model={model}", f"device={device}"])
    e = estimate(cfg)
    # shared/reference/README.md layout table: each upstream script's hardware is its preset's default.
    tested_on = {"gpu": "H100", "npu": "A3"}[device] if (model, device) != ("122b", "gpu") else "H20"
    assert tested_on in cfg.hardware.name
    # What torch sees is below the datasheet's 80 / 96 / 64 GB.
    assert e.device_memory_gib < {"gpu": 80, "npu": 64}[device] + (16 if tested_on == "H20" else 0)
    assert e.fits, e.as_dict()
    assert e.train_gib < e.device_memory_gib and e.rollout_gib < e.device_memory_gib
    assert e.sequences_fit >= e.sequences_wanted and e.startup_fits  # the step's share is generated at once
    # No refusal; the 122B NPU preset's old-policy log-prob pass (micro-batch 4 of 7336 tokens at 12 bytes a
    # logit) is above 90% of an A3 die as torch sees it, which the preflight warns about.
    found = [p for p in preflight(cfg, machine_missing="warning") if "GiB" in p.message]
    assert [p.level for p in found] == (["warning"] if (model, device) == ("122b", "npu") else [])


def settings_397b(device: str) -> Settings:
    """The 397B script's recipe (seed_overrides/397b_*.txt) on the shared config's offload and recompute."""
    base = Settings.of(resolved(["model=35b", f"device={device}"]))
    return dataclasses.replace(
        base,
        prompt_length=1024,
        response_length=2048,
        max_model_len=None,
        mini_batch_sequences=32 * 5,
        step_sequences=64 * 5,
        uses_reference=True,  # use_kl_loss=True
        gpu_memory_utilization=0.6,
    )


@pytest.mark.parametrize(
    ("device", "layout"),
    [  # reference table: 16x8 TP2 PP2 EP64, rollout TP8 DP16 EP128; 16x16 TP2 PP4 EP64, rollout TP16 DP16 EP256
        ("gpu", Layout(16, 8, 2, 2, 1, 64, 1, None, 8, 16, 1, 128)),
        ("npu", Layout(16, 16, 2, 4, 1, 64, 1, None, 16, 16, 1, 256)),
    ],
)
def test_the_397b_layouts_fit_their_documented_hardware(device, layout):
    s = settings_397b(device)
    assert s.device_memory_gib < {"gpu": 80, "npu": 64}[device]  # h100 / a3 as torch sees them
    e = estimate_layout(QWEN35_397B, layout, s)
    assert e.fits, e.as_dict()


def test_122b_on_one_8_gpu_node_is_refused_for_memory():
    cfg = compose(["model=122b", "device=gpu", "parallel.nnodes=1", "parallel.pp=1"])
    assert not [p for p in layout_problems(Layout.of(cfg), cfg.model, "gpu") if p.level == "error"]
    found = [p for p in preflight(cfg, machine_missing="warning") if p.level == "error"]
    (memory,) = [p for p in found if "training needs" in p.message]
    assert "parallel.ep" in memory.keys[0] and "hardware.device_memory_gib" in memory.keys
    assert "of 95 GiB" in memory.message and "parallel.pp" in memory.message


def test_refusal_reaches_the_user_as_exit_2_without_traceback(tmp_path):
    run = subprocess.run(
        [sys.executable, "-m", "verl_qwen35", "model=122b", "device=gpu", "parallel.nnodes=1", "parallel.pp=1",
         "hardware.device_memory_gib=80", "dry_run=true", f"hydra.run.dir={tmp_path}"],
        capture_output=True, text=True, cwd=tmp_path,
    )  # fmt: skip
    assert run.returncode == 2
    assert "Traceback" not in run.stderr and "training needs" in run.stderr and "of 80 GiB" in run.stderr
    assert "memory     train" in run.stdout  # the plan shows the estimate next to the refusal


def test_estimate_command_prints_json_with_the_promised_keys(cli):
    run = cli("estimate", "device=npu", "model=122b", "--format", "json")
    assert run.code == 0, run.err
    data = json.loads(run.out)
    for key in ("params_total", "params_active", "device_memory_gib", "train_gib", "rollout_gib", "fits"):
        assert key in data
    assert data["host_per_node_gib"] > 0 and data["fits"] is True and data["device_memory_gib"] == pytest.approx(61.27)


def test_estimate_command_exits_2_when_it_does_not_fit(cli):
    run = cli("estimate", "device=gpu", "model=122b", "parallel.nnodes=1", "parallel.pp=1")
    assert run.code == 2 and "fits: NO" in run.out and "training needs" in run.err


# A tiny Qwen3.5-shaped model whose counts are worked out by hand below.
TINY = {
    "num_layers": 4,  # layers 0-2 Gated DeltaNet, layer 3 full attention
    "hidden_size": 8,
    "num_attention_heads": 2,
    "num_key_value_heads": 1,
    "head_dim": 4,
    "num_experts": 4,
    "num_experts_per_tok": 2,
    "moe_intermediate_size": 2,
    "shared_expert_intermediate_size": 2,
    "linear_num_key_heads": 2,
    "linear_num_value_heads": 2,
    "linear_key_head_dim": 2,
    "linear_value_head_dim": 2,
    "full_attention_interval": 4,
    "vocab_size": 16,
    "vision_depth": 0,  # text only
}
# attention: q_proj with gate 2*4*2*8=128, k 32, v 32, o 64, q/k norm 4+4, two layernorms 16 -> 280
# GDN: conv dim 2*2*2+2*2=12; in_proj_qkv 96, z 32, b 16, a 16, conv1d 12*4=48, dt_bias 2, A_log 2,
#      out_proj 32, norm 2, two layernorms 16 -> 262
# MoE: experts 4*3*8*2=192, shared 48, router 32 + shared gate 8 -> 280 (active: 2*48 + 48 + 40 = 184)
# embedding 128 + lm_head 128 + final norm 8 = 264
TINY_TOTAL = 280 + 3 * 262 + 4 * 280 + 264  # 2450
TINY_ACTIVE = 280 + 3 * 262 + 4 * 184 + 264  # 2066


def tiny_settings(**changes) -> Settings:
    base = Settings(
        device_memory_gib=1.0,
        host_memory_gib=1.0,
        reserved_gib=0.0,
        prompt_length=3,
        response_length=5,
        max_model_len=None,
        micro_batch=1,
        max_token_len=None,
        mini_batch_sequences=4,
        step_sequences=8,
        param_offload=False,
        grad_offload=False,
        optimizer_offload=False,
        optimizer_cpu_offload=False,
        optimizer_offload_fraction=1.0,
        grad_bytes=4,
        optimizer_bytes=12,
        recompute_granularity=None,
        recompute_method=None,
        recompute_num_layers=None,
        sequence_parallel=True,
        uses_reference=False,
        mtp_layers=0,
        gpu_memory_utilization=0.5,
    )
    return dataclasses.replace(base, **changes)


def test_tiny_model_parameter_counts_by_hand():
    m = ModelFacts.of(TINY)
    assert (m.params_total, m.params_active) == (TINY_TOTAL, TINY_ACTIVE)


def test_tiny_training_bytes_by_hand():
    # 1 node x 4 devices, tp1 pp1 ep4: DP 4, expert-DP 1.
    e = estimate_layout(TINY, Layout(1, 4, 1, 1, 1, 4, 1, None, 1), tiny_settings())
    dense = 280 + 3 * 262 + 4 * (48 + 40) + 264  # everything but the routed experts: 1682
    expert = 4 * 1 * 48  # one expert per rank in each of 4 layers: 192
    assert e.params_per_rank == dense + expert
    b = {k: v * GIB for k, v in e.train_breakdown.items()}
    assert b["weights"] == pytest.approx(2 * 1874)
    assert b["gradients"] == pytest.approx(4 * 1874)
    # Distributed optimizer: 12 bytes per parameter, dense sharded over DP 4, experts over expert-DP 1.
    assert b["optimizer"] == pytest.approx(12 * (dense / 4 + expert / 1))
    # No recompute, 8 tokens: per layer s*b*h*(18 + 4*ffn/h + 2*topk*2) with ffn = 2 experts * 2 + shared 2 = 6
    # and the top-2 routed copies of each token at the experts (their input and output, bf16).
    assert b["activations"] == pytest.approx(4 * 8 * 8 * (18 + 4 * 6 / 8 + 2 * 2 * 2))
    # Logits: 8 tokens x 16 vocab x 8 bytes (verl's path: the fp32 upcast kept for backward and its gradient).
    assert b["logits"] == pytest.approx(8 * 16 * 8)
    assert e.train_gib * GIB == pytest.approx(sum(v for k, v in b.items() if k != "log_prob_pass"))
    # The forward-only old-policy log-prob pass: weights, gradients and optimizer stay (no offload), one layer's
    # activations and 12 bytes per logit of one micro-batch (fp32 logits, their clone, entropy's copy).
    log_prob = 3748 + 7496 + b["optimizer"] + 8 * 8 * (18 + 4 * 6 / 8 + 2 * 2 * 2) + 8 * 16 * 12
    assert b["log_prob_pass"] == pytest.approx(log_prob)


def test_tiny_offload_moves_the_optimizer_to_the_host():
    lo = Layout(1, 4, 1, 1, 1, 4, 1, None, 1)
    on_device = estimate_layout(TINY, lo, tiny_settings())
    offloaded = estimate_layout(TINY, lo, tiny_settings(optimizer_cpu_offload=True, optimizer_offload_fraction=1.0))
    assert offloaded.train_breakdown["optimizer"] == 0
    optimizer = on_device.train_breakdown["optimizer"] * GIB
    # Host per node: 4 ranks x (master + m + v, plus an fp32 gradient copy) of their shard.
    assert offloaded.host_breakdown["training_offload"] * GIB == pytest.approx(4 * optimizer * 16 / 12)
    half = estimate_layout(TINY, lo, tiny_settings(optimizer_cpu_offload=True, optimizer_offload_fraction=0.5))
    assert half.train_breakdown["optimizer"] * GIB == pytest.approx(optimizer / 2)


def test_tiny_full_recompute_keeps_only_layer_inputs():
    lo = Layout(1, 4, 1, 1, 1, 4, 1, None, 1)
    s = tiny_settings(recompute_granularity="full", recompute_method="uniform", recompute_num_layers=1)
    e = estimate_layout(TINY, lo, s)
    per_layer = 8 * 8 * (18 + 4 * 6 / 8 + 2 * 2 * 2)
    # 4 layer inputs in bf16 kept, plus one layer's activations while it is recomputed.
    assert e.train_breakdown["activations"] * GIB == pytest.approx(4 * 2 * 8 * 8 + per_layer)


def test_tiny_rollout_kv_and_state_by_hand():
    e = estimate_layout(TINY, Layout(1, 4, 1, 1, 1, 4, 1, None, 1), tiny_settings())
    r = e.rollout_breakdown
    assert r["kv_per_token_kib"] * 1024 == 2 * 1 * 4 * 2 * 1  # K and V, 1 head of 4, bf16, 1 attention layer
    # Per GDN layer: conv 12 x (4-1) bf16 = 72 bytes, recurrent 2 heads x 2 x 2 fp32 = 32 bytes.
    assert r["gdn_state_per_sequence_mib"] * 2**20 == 3 * (72 + 32)
    assert e.rollout_params_per_rank == TINY_TOTAL
    # vLLM's hybrid page: the attention block is the smallest multiple of 16 tokens whose page (16 bytes a token
    # for the one attention layer) holds a 104-byte GDN state: 16 tokens, 256 bytes; GDN pages padded to that.
    assert r["attention_block_tokens"] == 16 and r["gdn_state_padded_per_sequence_mib"] * 2**20 == 3 * 256
    # Groups of one layer (3 GDN layers are not under 1.5 x 1 attention layer): a sequence of 8 tokens takes one
    # block in the attention group and one in each of the 3 GDN groups.
    cache = 0.5 * GIB - 2 * TINY_TOTAL - r["vllm_workspace"] * GIB
    assert e.sequences_fit == int(cache // 256) // (1 + 3) and e.startup_fits


@pytest.mark.parametrize(("model", "kib"), [("35b", 20), ("122b", 24)])
def test_kv_per_token_matches_the_reference(model, kib):
    # shared/reference/README.md: bf16 KV per token before TP is 20 KiB (35B) and 24 KiB (122B).
    cfg = resolved([f"model={model}", "device=gpu"])
    lo = dataclasses.replace(Layout.of(cfg), gen_tp=1)
    e = estimate_layout(cfg.model, lo, Settings.of(cfg))
    assert e.rollout_breakdown["kv_per_token_kib"] == kib


LAYOUT_FIELDS = st.fixed_dictionaries(
    {
        "model": st.sampled_from(options("model")),
        "nnodes": st.sampled_from([1, 2, 4, 16]),
        "per_node": st.sampled_from([8, 16]),
        "tp": st.sampled_from([1, 2, 4]),
        "pp": st.sampled_from([1, 2, 4]),
        "ep": st.sampled_from([1, 2, 4, 8, 16, 32, 64]),
        "etp": st.sampled_from([1, 2]),
        "sp": st.booleans(),
        "recompute": st.sampled_from([None, "selective", "full"]),
    }
)


@settings(max_examples=300, deadline=None)
@given(case=LAYOUT_FIELDS)
def test_more_tensor_parallelism_never_raises_the_training_estimate(case):
    m = facts_cache(case["model"])
    recompute = {"recompute_granularity": case["recompute"], "recompute_method": "uniform"}
    s = dataclasses.replace(base_settings(), sequence_parallel=case["sp"], **recompute)
    world = case["nnodes"] * case["per_node"]

    def train(tp: int) -> float | None:
        lo = Layout(case["nnodes"], case["per_node"], tp, case["pp"], 1, case["ep"], case["etp"], None, 8)
        if world % (tp * lo.pp) or world % (lo.etp * lo.ep * lo.pp) or m.num_layers % lo.pp:
            return None
        return estimate_layout(m, lo, s).train_gib

    smaller, larger = train(case["tp"]), train(case["tp"] * 2)
    assume(smaller is not None and larger is not None)
    assert larger <= smaller + 1e-9


_FACTS: dict[str, ModelFacts] = {}
_SETTINGS: list[Settings] = []


def facts_cache(model: str) -> ModelFacts:
    if model not in _FACTS:
        _FACTS[model] = facts(model)
    return _FACTS[model]


def base_settings() -> Settings:
    if not _SETTINGS:
        _SETTINGS.append(Settings.of(resolved(["model=122b", "device=npu"])))
    return _SETTINGS[0]


def test_tiny_mtp_layer_sits_on_the_last_stage_with_its_own_logits():
    lo = Layout(1, 4, 1, 1, 1, 4, 1, None, 1)
    plain, mtp = (estimate_layout(TINY, lo, tiny_settings(mtp_layers=n)) for n in (0, 1))
    # attention layer 280 + shared 48 + router 40 + eh_proj 2*8*8 + 3 norms of 8, and one routed expert of 48.
    assert mtp.params_per_rank - plain.params_per_rank == 280 + 48 + 40 + 128 + 24 + 48
    assert mtp.train_breakdown["logits"] == pytest.approx(2 * plain.train_breakdown["logits"])


def test_a_large_log_prob_micro_batch_sets_the_training_peak():
    lo = Layout(1, 4, 1, 1, 1, 4, 1, None, 1)
    offload = {"param_offload": True, "grad_offload": True, "optimizer_offload": True}
    small, large = (estimate_layout(TINY, lo, tiny_settings(log_prob_micro_batch=n, **offload)) for n in (1, 64))
    assert small.train_gib * GIB == pytest.approx(
        sum(v for k, v in small.train_breakdown.items() if k != "log_prob_pass") * GIB
    )
    # 64 sequences of 8 tokens: weights + one layer's activations + 12 bytes per logit, + reserved 0.
    expected = 2 * 1874 + 64 * 8 * 8 * (18 + 4 * 6 / 8 + 2 * 2 * 2) + 64 * 8 * 16 * 12
    assert large.train_gib * GIB == pytest.approx(expected)


def test_tiny_verl_offload_frees_the_rollout_phase_but_not_training():
    # verl loads weights, gradients and optimizer back for training (verl/workers/engine/base.py).
    lo = Layout(1, 4, 1, 1, 1, 4, 1, None, 1)
    resident = estimate_layout(TINY, lo, tiny_settings())
    offloaded = estimate_layout(TINY, lo, tiny_settings(param_offload=True, grad_offload=True, optimizer_offload=True))
    assert offloaded.train_gib == pytest.approx(resident.train_gib)
    t = resident.train_breakdown
    assert resident.rollout_breakdown["actor_residue"] == pytest.approx(t["weights"] + t["gradients"] + t["optimizer"])
    assert offloaded.rollout_breakdown["actor_residue"] == 0
    assert offloaded.host_breakdown["training_offload"] > 0 == resident.host_breakdown["training_offload"]


def test_a_log_prob_micro_batch_too_large_is_refused_naming_it():
    rollout = "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu"
    cfg = compose(["model=122b", "device=npu", f"{rollout}=16"])
    (memory,) = [p for p in preflight(cfg, machine_missing="warning") if "training needs" in p.message]
    assert memory.level == "error" and rollout in memory.message and "log-prob pass" in memory.message


@pytest.mark.parametrize("module", ["verl_qwen35.model.memory", "verl_qwen35.checks.memory", "verl_qwen35.cli.plan"])
def test_each_module_imports_first(module: str) -> None:
    """The estimate, its checks and the plan command each import first, in a fresh interpreter (no import circle)."""
    done = subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
