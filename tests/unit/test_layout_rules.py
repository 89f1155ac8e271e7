"""The layout checker against an independent statement of the rules, on reference and generated layouts.

The property test is derandomized (tests/conftest.py profile) and carries one `@example` per rule
that breaks only that rule, so a rule that goes missing fails the same case on every run.
"""

from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from omegaconf import OmegaConf

from verl_qwen35.checks.layout import layout_problems
from verl_qwen35.checks.rollout import rollout_problems
from verl_qwen35.config.choices import options
from verl_qwen35.installed import conf_dir
from verl_qwen35.model.layout import Layout

ARCH = {name: OmegaConf.load(Path(conf_dir()) / "model" / f"{name}.yaml").model for name in options("model")}
# Tiny made-up models, each with a tp that breaks exactly one head rule (the real ones break several).
for _name, (_heads, _kv, _lin_k, _lin_v) in {
    "heads_only": (12, 4, 8, 8),  # tp=8: 12 heads do not split; 4 KV heads replicate; 8/8 linear heads split
    "kv_only": (8, 3, 8, 8),  # tp=2: 3 KV heads neither split nor replicate
    "lin_k_only": (8, 2, 6, 8),  # tp=4: 6 linear key heads do not split
    "lin_v_only": (8, 2, 8, 6),  # tp=4: 6 linear value heads do not split
}.items():
    ARCH[_name] = OmegaConf.create(
        {
            "name": _name,
            "num_layers": 24,
            "num_attention_heads": _heads,
            "num_key_value_heads": _kv,
            "num_experts": 16,
            "linear_num_key_heads": _lin_k,
            "linear_num_value_heads": _lin_v,
        }
    )

# shared/reference/README.md "Parallel layouts in use": model, device, nnodes, per node, tp, pp, cp, ep, etp,
# rollout tp, rollout dp, rollout ep.
REFERENCE = [
    ("35b", "gpu", 1, 8, 2, 1, 1, 8, 1, 8, 1, 1),
    ("35b", "npu", 1, 16, 2, 2, 1, 8, 1, 8, 1, 1),
    ("122b", "gpu", 4, 8, 2, 2, 1, 8, 1, 8, 1, 1),
    ("122b", "npu", 4, 16, 2, 4, 1, 16, 1, 16, 1, 1),
    ("397b", "gpu", 16, 8, 2, 2, 1, 64, 1, 8, 16, 128),
    ("397b", "npu", 16, 16, 2, 4, 1, 64, 1, 16, 16, 256),
]


@pytest.mark.parametrize("row", REFERENCE, ids=lambda r: f"{r[0]}_{r[1]}")
def test_every_reference_layout_passes(row):
    model, device, nnodes, per_node, tp, pp, cp, ep, etp, gen_tp, gen_dp, gen_ep = row
    layout = Layout(nnodes, per_node, tp, pp, cp, ep, etp, None, gen_tp, gen_dp, 1, gen_ep)
    found = layout_problems(layout, ARCH[model], device) + rollout_problems(layout, ARCH[model], "vllm")
    assert [str(p) for p in found if p.level == "error"] == []


SIZES = ("nnodes", "devices_per_node", "tp", "pp", "cp", "ep", "etp", "gen_tp", "gen_dp", "gen_pp", "gen_ep")


def direct_split_ok(layers: int, pp: int, vpp: int | None, first: int | None, last: int | None) -> bool:
    """megatron-core 0.16.1 transformer_config.py `__post_init__` ("Uneven PP") and
    transformer_block.py `get_num_layers_to_build`, restated; VPP needs PP > 1 (parallel_state.py)."""
    if vpp is not None and (pp == 1 or vpp < 1):
        return False
    if first is None and last is None:
        return layers % pp == 0 and (vpp is None or (layers // pp) % vpp == 0)
    if pp == 1:  # first/last stage settings with one stage: refused (nothing to split)
        return False
    middle, stages = layers, pp
    for count in (first, last):
        if count is None:
            continue
        if count <= 0 or (vpp is not None and count % vpp):
            return False
        middle, stages = middle - count, stages - 1
    if bool(middle) != bool(stages):
        return False
    return not stages or (middle % stages == 0 and (vpp is None or (middle // stages) % vpp == 0))


def direct_rules(lo: Layout, a, device: str, first_last=(None, None)) -> bool:
    """The constraints, written out once more from the reference, independently of the checker."""
    world = lo.nnodes * lo.devices_per_node
    kv = a.num_key_value_heads
    return (
        world % (lo.tp * lo.pp * lo.cp) == 0
        and world % (lo.etp * lo.ep * lo.pp) == 0
        and a.num_experts % lo.ep == 0
        and a.num_attention_heads % lo.tp == 0
        and (kv % lo.tp == 0 if kv >= lo.tp else lo.tp % kv == 0)
        and a.linear_num_key_heads % lo.tp == 0
        and a.linear_num_value_heads % lo.tp == 0
        and (lo.cp == 1 or device == "npu")
        and direct_split_ok(a.num_layers, lo.pp, lo.vpp, *first_last)
    )


def direct_rollout_rules(lo: Layout, a) -> bool:
    world, kv = lo.nnodes * lo.devices_per_node, a.num_key_value_heads
    t = lo.gen_tp
    return (
        world % (t * lo.gen_dp * lo.gen_pp) == 0
        and a.num_attention_heads % t == 0
        and (kv % t == 0 if kv >= t else t % kv == 0)
        and a.linear_num_key_heads % t == 0
        and a.linear_num_value_heads % t == 0
        and (lo.gen_ep == 1 or lo.gen_ep == t * lo.gen_dp)
        and lo.gen_pp == 1
    )


def L(nnodes=1, per_node=8, tp=2, pp=1, cp=1, ep=8, etp=1, vpp=None, gen_tp=8, gen_dp=1, gen_pp=1, gen_ep=1):
    """A layout by keyword; the defaults are the 35B GPU reference layout, which passes."""
    return Layout(nnodes, per_node, tp, pp, cp, ep, etp, vpp, gen_tp, gen_dp, gen_pp, gen_ep)


# Non-positive sizes are drawn too: preflight refuses them before any division.
sizes = st.sampled_from([1, 2, 3, 4, 5, 6, 8, 12, 16, 32, 64]) | st.sampled_from([0, -1])
layouts = st.builds(
    Layout,
    nnodes=st.integers(1, 16) | st.just(0),
    devices_per_node=st.sampled_from([4, 8, 16]),
    tp=sizes,
    pp=st.sampled_from([1, 2, 3, 4, 5, 6, 8]) | st.just(0),
    cp=st.sampled_from([1, 2, 4]),
    ep=sizes,
    etp=st.sampled_from([1, 2, 4]),
    vpp=st.sampled_from([None, 1, 2, 3, 4]),
    gen_tp=sizes,
    gen_dp=st.sampled_from([1, 2, 4, 16]),
    gen_pp=st.sampled_from([1, 2]),
    gen_ep=st.sampled_from([1, 8, 16, 64, 128]),
)
# Pipeline stage splits: the first and/or last stage given, from one layer to all of them.
stage = st.none() | st.integers(-1, 60)
first_last_splits = st.tuples(stage, stage)

# One example per rule, each breaking only that rule (model 35b: 40 layers, 16/2 heads, 256 experts,
# 16/32 linear heads), and the boundaries that must pass.
RULE_EXAMPLES = [
    (L(), "35b", "gpu", (None, None)),  # the reference layout: passes
    (L(tp=0), "35b", "gpu", (None, None)),  # non-positive tp
    (L(nnodes=-1), "35b", "gpu", (None, None)),  # non-positive nnodes
    (L(gen_ep=0), "35b", "gpu", (None, None)),  # non-positive rollout ep
    (L(per_node=12, tp=8, ep=4, gen_tp=4), "35b", "gpu", (None, None)),  # world 12 % tp*pp*cp 8
    (L(ep=16), "35b", "gpu", (None, None)),  # world 8 % etp*ep*pp 16
    (L(nnodes=3, ep=3), "35b", "gpu", (None, None)),  # 256 experts % ep 3
    (L(per_node=16, tp=8, ep=2, gen_tp=8), "heads_only", "gpu", (None, None)),  # attention heads
    (L(tp=2, ep=2, gen_tp=1), "kv_only", "gpu", (None, None)),  # KV heads
    (L(tp=4, ep=2, gen_tp=1), "lin_k_only", "gpu", (None, None)),  # linear key heads
    (L(tp=4, ep=2, gen_tp=1), "lin_v_only", "gpu", (None, None)),  # linear value heads
    (L(cp=2), "35b", "gpu", (None, None)),  # cp > 1 on GPU: error
    (L(cp=2), "35b", "npu", (None, None)),  # cp > 1 on NPU: a warning only
    (L(vpp=2), "35b", "gpu", (None, None)),  # vpp needs pp > 1
    (L(nnodes=3, pp=3, ep=8), "35b", "gpu", (None, None)),  # 40 layers % pp 3
    (L(pp=2, ep=4, vpp=3), "35b", "gpu", (None, None)),  # 20 layers a stage % vpp 3
    (L(pp=2, ep=4, vpp=4), "35b", "gpu", (None, None)),  # 20 % 4: passes
    (L(nnodes=3, pp=3, ep=8), "35b", "gpu", (14, 13)),  # uneven: 14 + 13 + 13 over pp 3 passes
    (L(pp=4, ep=2), "35b", "gpu", (3, None)),  # 37 middle layers over 3 stages
    (L(pp=4, ep=2), "35b", "gpu", (4, None)),  # 36 over 3: passes
    (L(pp=4, ep=2), "35b", "gpu", (None, 4)),  # the last stage alone: passes
    (L(pp=4, ep=2), "35b", "gpu", (None, 5)),  # 35 over 3
    (L(pp=4, ep=2), "35b", "gpu", (0, None)),  # a first stage of 0 layers
    (L(pp=2, ep=4), "35b", "gpu", (10, 10)),  # 20 layers left with no middle stage
    (L(pp=2, ep=4), "35b", "gpu", (20, 20)),  # exactly all layers on first and last: passes
    (L(pp=4, ep=2, vpp=2), "35b", "gpu", (4, 4)),  # 16 a middle stage, chunks of 2: passes
    (L(pp=4, ep=2, vpp=2), "35b", "gpu", (3, 5)),  # first stage 3 % vpp 2
    (L(), "35b", "gpu", (20, None)),  # first/last with pp=1
    # rollout
    (L(gen_dp=2), "35b", "gpu", (None, None)),  # world 8 % rollout tp*dp 16
    (L(gen_dp=2, nnodes=2), "35b", "gpu", (None, None)),  # 16 % 16: passes
    (L(per_node=16, tp=4, ep=2, gen_tp=8), "heads_only", "gpu", (None, None)),  # rollout attention heads
    (L(tp=1, ep=2, gen_tp=4), "lin_k_only", "gpu", (None, None)),  # rollout linear key heads
    (L(tp=1, ep=2, gen_tp=4), "lin_v_only", "gpu", (None, None)),  # rollout linear value heads
    (L(gen_ep=8), "35b", "gpu", (None, None)),  # rollout ep = tp*dp: passes
    (L(gen_ep=16), "35b", "gpu", (None, None)),  # rollout ep 16 != 8
    (L(gen_tp=4, gen_pp=2), "35b", "gpu", (None, None)),  # rollout pp 2 with vLLM
]


def _with_examples(test):
    for lo, model, device, first_last in reversed(RULE_EXAMPLES):
        test = example(lo=lo, model=model, device=device, first_last=first_last)(test)
    return test


@settings(max_examples=3000)
@given(
    lo=layouts,
    model=st.sampled_from(sorted(ARCH)),
    device=st.sampled_from(["gpu", "npu"]),
    first_last=st.none() | first_last_splits,
)
@_with_examples
def test_checker_verdict_equals_the_direct_rules(lo, model, device, first_last):
    arch, first_last = ARCH[model], first_last or (None, None)
    layout_errors = [p for p in layout_problems(lo, arch, device, first_last) if p.level == "error"]
    not_positive = [n for n in SIZES if getattr(lo, n) < 1]
    if not_positive:  # refused naming each such size, before any rule divides by it (preflight stops here)
        named = " ".join(" ".join(p.keys) + " " + p.message for p in layout_errors)
        assert len(layout_errors) == len(not_positive), [str(p) for p in layout_errors]
        for name in not_positive:
            assert f"{name}={getattr(lo, name)} must be a positive integer" in named
        return
    rollout_ok = not [p for p in rollout_problems(lo, arch, "vllm") if p.level == "error"]
    assert (not layout_errors) == direct_rules(lo, arch, device, first_last), [str(p) for p in layout_errors]
    assert rollout_ok == direct_rollout_rules(lo, arch)


# Each refusal names every key that can fix it and lists the values that would fit (the property test
# above checks only the verdict). (layout, model, device, level, short keys, message)
REFUSALS = [
    (
        L(per_node=12, tp=8, ep=4, gen_tp=4),
        "35b",
        "gpu",
        "error",
        ["parallel.tp", "parallel.pp", "parallel.cp", "parallel.nnodes", "parallel.devices_per_node"],
        "world 1x12=12 is not divisible by tp*pp*cp=8*1*1=8; tp*pp*cp must divide 12 (one of [1, 2, 3, 4, 6, 12])",
    ),
    (
        L(ep=16),
        "35b",
        "gpu",
        "error",
        ["parallel.ep", "parallel.etp", "parallel.pp", "parallel.nnodes", "parallel.devices_per_node"],
        "world 8 is not divisible by etp*ep*pp=1*16*1=16 (the expert grid); with etp=1 pp=1, ep may be one of "
        "[1, 2, 4, 8]",
    ),
    (  # no ep fits at all: said, with why, instead of an empty list
        L(tp=1, etp=3, ep=8),
        "35b",
        "gpu",
        "error",
        ["parallel.ep", "parallel.etp", "parallel.pp", "parallel.nnodes", "parallel.devices_per_node"],
        "world 8 is not divisible by etp*ep*pp=3*8*1=24 (the expert grid); with etp=3 pp=1, no ep fits: etp*pp=3 "
        "does not divide world 8; change pp or etp first",
    ),
    (
        L(nnodes=3, ep=3),
        "35b",
        "gpu",
        "error",
        ["parallel.ep"],
        "ep=3 does not divide num_experts=256 of Qwen3.5-35B-A3B; ep may be one of [1, 2, 4, 8] (they divide 256 "
        "and fit world 24)",
    ),
    (
        L(per_node=16, tp=8, ep=2, gen_tp=8),
        "heads_only",
        "gpu",
        "error",
        ["parallel.tp"],
        "tp=8 does not split 12 attention heads / 4 KV heads (heads % tp == 0, and KV heads a multiple or a "
        "divisor of tp); valid tp here: [1, 2, 4]",
    ),
    (
        L(tp=4, ep=2, gen_tp=1),
        "lin_v_only",
        "gpu",
        "error",
        ["parallel.tp"],
        "tp=4 does not divide Gated DeltaNet linear_num_value_heads=6; valid tp here: [1, 2]",
    ),
    (
        L(cp=2),
        "35b",
        "gpu",
        "error",
        ["parallel.cp"],
        "cp=2: megatron-core 0.16 (assumed: not installed here) requires cp=1 for Gated DeltaNet layers "
        "(supported from 0.18); set parallel.cp=1",
    ),
    (
        L(cp=2),
        "35b",
        "npu",
        "warning",
        ["parallel.cp"],
        "cp=2: stock megatron-core has no context parallelism for Gated DeltaNet; on NPU this relies on MindSpeed "
        "(set override_transformer_config.context_parallel_algo)",
    ),
]


@pytest.mark.parametrize(("lo", "model", "device", "level", "keys", "message"), REFUSALS)
def test_each_layout_refusal_names_its_keys_and_the_values_that_fit(lo, model, device, level, keys, message):
    (problem,) = layout_problems(lo, ARCH[model], device)
    assert (problem.level, [k.split(" ")[0] for k in problem.keys], problem.message) == (level, keys, message)
