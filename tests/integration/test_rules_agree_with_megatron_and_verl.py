"""The fast rules (no megatron import) agree with megatron-core's real TransformerConfig on every draw.

Draws layouts, pipeline splits, VPP and override values for every model; the verdict of the fast
rules (`checks.layout` head/GDN/CP/pipeline rules + `checks.transformer`) must equal the verdict of
`validators.real.real_transformer_problems` (the real dataclass and layer split). World-size and expert-grid
rules are not TransformerConfig's, so draws keep them satisfied (tests/unit/test_layout_rules.py covers them).
"""

import warnings
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from omegaconf import OmegaConf

from verl_qwen35.checks.batches import share_problems
from verl_qwen35.checks.layout import layout_problems
from verl_qwen35.checks.transformer import transformer_problems
from verl_qwen35.installed import conf_dir
from verl_qwen35.model.layout import Layout
from verl_qwen35.model.pipeline import Split
from verl_qwen35.validators.real import micro_batch_refusal, real_transformer_problems

DRAWS = 2500
ARCH = {name: OmegaConf.load(Path(conf_dir()) / "model" / f"{name}.yaml").model for name in ("35b", "122b")}
# Qwen3.5-397B-A17B facts from shared/reference/README.md (its preset comes with another issue).
ARCH["397b"] = OmegaConf.merge(
    ARCH["122b"],
    {
        "name": "Qwen3.5-397B-A17B",
        "num_layers": 60,
        "hidden_size": 4096,
        "num_experts": 512,
        "num_experts_per_tok": 10,
        "linear_num_value_heads": 64,
    },
)
USER_KEYS = ("parallel.", "megatron.")

VALUES = {
    "recompute_granularity": st.sampled_from([None, "full", "selective"]),
    "recompute_method": st.sampled_from([None, "uniform", "block"]),
    "recompute_num_layers": st.sampled_from([None, 1, 2, 3, 4, 5]),
    "recompute_modules": st.sampled_from([["core_attn"], ["moe_act"], ["mlp", "moe"], ["shared_experts"], ["moe"]]),
    "moe_grouped_gemm": st.booleans(),
    "sequence_parallel": st.booleans(),
    "distribute_saved_activations": st.booleans(),
    "moe_token_dispatcher_type": st.sampled_from(["alltoall", "allgather", "flex"]),
    "moe_shared_expert_overlap": st.booleans(),
    "moe_router_load_balancing_type": st.sampled_from(["aux_loss", "seq_aux_loss", "none", "sinkhorn"]),
    "moe_expert_capacity_factor": st.sampled_from([None, -1.0, 1.0, 1.5]),
    "moe_pad_expert_input_to_capacity": st.booleans(),
    "moe_router_enable_expert_bias": st.booleans(),
    "moe_router_score_function": st.sampled_from(["softmax", "sigmoid"]),
    "moe_router_topk": st.sampled_from([1, 2, 8]),
    "moe_router_pre_softmax": st.booleans(),
    "fp8_param": st.booleans(),
    "cpu_offloading": st.booleans(),
    "defer_embedding_wgrad_compute": st.booleans(),
    "overlap_moe_expert_parallel_comm": st.booleans(),
    "delay_wgrad_compute": st.booleans(),
    "num_layers_in_first_pipeline_stage": st.sampled_from([None, 0, 2, 4, 8, 9, 10, 12]),
    "num_layers_in_last_pipeline_stage": st.sampled_from([None, 2, 4, 6, 8, 12]),
    "account_for_embedding_in_pipeline_split": st.booleans(),
    "account_for_loss_in_pipeline_split": st.booleans(),
    "tensor_model_parallel_size": st.sampled_from([1, 2, 4]),
    "context_parallel_size": st.sampled_from([1, 2]),
    "enable_cuda_graph": st.booleans(),
    "cuda_graph_impl": st.sampled_from(["none", "local", "transformer_engine"]),
    "cuda_graph_scope": st.sampled_from(
        [[], ["full_iteration"], ["attn"], ["moe_router"], ["moe", "moe_router"], ["moe_preprocess"], ["moe"]]
    ),
    "attention_dropout": st.sampled_from([0.0, 0.1]),
    "hidden_dropout": st.sampled_from([0.0, 0.1]),
    "moe_input_jitter_eps": st.sampled_from([None, 0.01]),
    "bias_activation_fusion": st.booleans(),
    "use_te_activation_func": st.booleans(),
    "fine_grained_activation_offloading": st.booleans(),
    "offload_modules": st.sampled_from([None, ["core_attn"], ["attn_proj"], ["expert_fc1", "moe_act"]]),
    "transformer_impl": st.sampled_from(["transformer_engine", "local", "inference_optimized"]),
    "fp16": st.booleans(),
}
PRESET = {"recompute_granularity": "full", "recompute_method": "uniform", "recompute_num_layers": 1}


@st.composite
def cases(draw):
    model = draw(st.sampled_from(sorted(ARCH)))
    tp = draw(st.sampled_from([1, 2, 2, 4, 8, 16, 32, 3]))
    pp = draw(st.sampled_from([1, 2, 2, 3, 4, 4, 5, 6, 8]))
    cp = draw(st.sampled_from([1] * 7 + [2]))
    ep = draw(st.sampled_from([1, 2, 8, 16]))
    vpp = draw(st.sampled_from([None] * 4 + [1, 2, 3, 5]))
    etp = draw(st.sampled_from([1, 1, 2]))
    # One node holding exactly both grids: the world rules (not TransformerConfig's) always hold.
    lo = Layout(1, tp * pp * cp * ep * etp, tp, pp, cp, ep, etp, vpp, 1)
    otc = dict(PRESET) if draw(st.booleans()) else {}
    for key in draw(st.lists(st.sampled_from(sorted(VALUES)), max_size=3, unique=True)):
        otc[key] = draw(VALUES[key])
    if draw(st.integers(0, 9)) == 0:
        layers = ARCH[model].num_layers
        otc = {"pipeline_model_parallel_layout": draw(st.sampled_from([f"Et*{layers}|L", f"E|t*{layers}L", "Et|tL"]))}
    return model, lo, otc, draw(st.booleans())


def fast_verdict(model, lo, otc, sp) -> list:
    arch = ARCH[model]
    found = layout_problems(lo, arch, "gpu", split=Split.of(otc), mcore=(0, 16))
    found += transformer_problems(otc, arch, lo, sequence_parallel=sp, check_split=False)
    return [p for p in found if p.level == "error"]


compared = {"draws": 0, "refused": 0}


@settings(max_examples=DRAWS, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(case=cases())
def check_a_draw(case):
    model, lo, otc, sp = case
    fast = fast_verdict(model, lo, otc, sp)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        real = real_transformer_problems(otc, ARCH[model], lo, "gpu", sequence_parallel=sp)
    compared["draws"] += 1
    compared["refused"] += bool(fast or real)
    assert bool(fast) == bool(real), f"fast={[str(p) for p in fast]} real={[str(p) for p in real]}"
    for problem in fast + real:
        assert any(k.startswith(USER_KEYS) for k in problem.keys), problem


def test_fast_rules_agree_with_the_real_transformer_config(capsys):
    check_a_draw()
    with capsys.disabled():
        print(f"\ndifferential: {compared['draws']} draws compared, {compared['refused']} refused by either side")
    assert compared["draws"] >= DRAWS // 2


BATCH_DRAWS = 1000
batches = {"draws": 0, "refused": 0}


@settings(max_examples=BATCH_DRAWS, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(
    prompts=st.sampled_from([8, 16, 32, 64, 96, 128, 256]),
    n=st.integers(1, 8),
    dp=st.sampled_from([1, 2, 3, 4, 8, 16, 32]),
    micro=st.integers(1, 16),
)
def check_a_batch(prompts, n, dp, micro):
    fast, _ = share_problems(prompts * n, dp, micro, pp=1, vpp=None, group=None)
    real = micro_batch_refusal(prompts * n, dp, micro)
    batches["draws"] += 1
    batches["refused"] += bool(fast or real)
    assert bool(fast) == bool(real), (fast, real)


def test_micro_batch_rule_agrees_with_verls_prepare_micro_batches(capsys):
    check_a_batch()
    with capsys.disabled():
        print(f"\ndifferential: {batches['draws']} batch draws compared with verl, {batches['refused']} refused")
    assert batches["draws"] >= BATCH_DRAWS // 2
