"""The layout checker against an independent statement of the rules, on reference and random layouts."""

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from omegaconf import OmegaConf

from verl_qwen35.checks.layout import Layout, layout_problems
from verl_qwen35.checks.rollout import rollout_problems
from verl_qwen35.paths import conf_dir

ARCH = {name: OmegaConf.load(Path(conf_dir()) / "model" / f"{name}.yaml").model for name in ("35b", "122b", "397b")}

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


def direct_rules(lo: Layout, a, device: str) -> bool:
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
        and a.num_layers % lo.pp == 0
        and (lo.vpp is None or (lo.pp > 1 and (a.num_layers // lo.pp) % lo.vpp == 0))
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


sizes = st.sampled_from([1, 2, 3, 4, 5, 6, 8, 12, 16, 32, 64])
layouts = st.builds(
    Layout,
    nnodes=st.integers(1, 16),
    devices_per_node=st.sampled_from([4, 8, 16]),
    tp=sizes,
    pp=st.sampled_from([1, 2, 3, 4, 5, 6, 8]),
    cp=st.sampled_from([1, 2, 4]),
    ep=sizes,
    etp=st.sampled_from([1, 2, 4]),
    vpp=st.sampled_from([None, 1, 2, 3, 4]),
    gen_tp=sizes,
    gen_dp=st.sampled_from([1, 2, 4, 16]),
    gen_pp=st.sampled_from([1, 2]),
    gen_ep=st.sampled_from([1, 8, 16, 64, 128]),
)


@settings(max_examples=3000, deadline=None)
@given(lo=layouts, model=st.sampled_from(sorted(ARCH)), device=st.sampled_from(["gpu", "npu"]))
def test_checker_verdict_equals_the_direct_rules(lo, model, device):
    arch = ARCH[model]
    layout_ok = not [p for p in layout_problems(lo, arch, device) if p.level == "error"]
    rollout_ok = not [p for p in rollout_problems(lo, arch, "vllm") if p.level == "error"]
    assert layout_ok == direct_rules(lo, arch, device)
    assert rollout_ok == direct_rollout_rules(lo, arch)
