"""The step-time model: each part from the layout's real groups, fitted on published measurements."""

import dataclasses

import pytest
from omegaconf import OmegaConf

from verl_qwen35.config import compose
from verl_qwen35.model.layout import Layout
from verl_qwen35.model.memory import ModelFacts, Settings, estimate_layout
from verl_qwen35.model.pipeline import Split
from verl_qwen35.model.step_time import (
    PARTS,
    Rates,
    Recipe,
    fit,
    load_measurements,
    stage_imbalance,
    step_time,
    training_communication,
)


def resolved(model: str, device: str, *extra: str):
    cfg = compose([f"model={model}", f"device={device}", *extra])
    OmegaConf.resolve(cfg)
    return cfg


def inputs(model: str, device: str, *extra: str):
    cfg = resolved(model, device, *extra)
    return ModelFacts.of(cfg.model), Settings.of(cfg), Rates.of(cfg.hardware), cfg


def test_expert_all_to_all_and_data_parallel_are_both_counted_when_their_groups_have_one_shape():
    """The old traffic table keyed volumes by (size, stride): EP (ep, etp) = (8, 2) overwrote DP x CP
    (dp*cp, tp) = (8, 2). Keyed by kind, both are there, and EP's equals that of a layout where they differ."""
    m, s, rates, _ = inputs("122b", "npu")
    same = Layout(4, 16, 2, 4, 1, 8, 2, None, 16)  # dp*cp = 64/8 = 8, tp = 2: the shape of (ep, etp)
    assert (same.dp * same.cp, same.tp) == (same.ep, same.etp)
    comm = training_communication(m, same, s, rates, Recipe(), 1, 2)
    assert comm["ep"] > 0 and comm["dp"] > 0
    other = dataclasses.replace(same, cp=2)  # dp*cp still 8, but now a different TP x CP grid
    assert training_communication(m, other, s, rates, Recipe(), 1, 2)["ep"] == pytest.approx(comm["ep"])


def test_a_group_inside_one_node_uses_the_fast_link_and_one_across_nodes_the_slow_one():
    m, s, rates, _ = inputs("122b", "npu")
    inside = Layout(4, 16, 2, 4, 1, 8, 1, None, 16)  # EP 8 x ETP 1: ranks 0..7, one node
    across = dataclasses.replace(inside, nnodes=16, devices_per_node=4)  # the same group over two nodes
    slow = dataclasses.replace(rates, inter_node_gbps=rates.intra_node_gbps / 10, fast_domain_devices=4)
    assert (
        training_communication(m, across, s, slow, Recipe(), 1, 2)["ep"]
        > training_communication(m, inside, s, slow, Recipe(), 1, 2)["ep"]
    )


def test_uneven_stages_even_out_the_last_stage_that_holds_lm_head():
    m, s, _, _ = inputs("397b", "npu")
    lo = Layout(16, 16, 2, 4, 1, 64, 1, None, 16, 16, 1, 256)
    even = stage_imbalance(m, lo, Split(), 1, 1536)
    lighter_last = stage_imbalance(m, lo, Split(first=16, last=12), 1, 1536)
    assert even > 1.1 > lighter_last >= 1.0


def test_every_part_is_named_non_negative_and_the_bubble_shrinks_with_interleaving():
    m, s, rates, _ = inputs("122b", "npu")
    lo = Layout(4, 16, 2, 4, 1, 16, 1, None, 16)
    flat = step_time(m, lo, s, estimate_layout(m, lo, s), rates)
    assert tuple(flat.parts) == PARTS and all(v >= 0 for v in flat.parts.values())
    interleaved = dataclasses.replace(lo, vpp=3)
    vpp = step_time(m, interleaved, s, estimate_layout(m, interleaved, s), rates)
    assert 0 < vpp.parts["pipeline_bubble"] < flat.parts["pipeline_bubble"]
    assert flat.tokens_per_second_per_device == pytest.approx(flat.tokens / flat.seconds / lo.world)


def test_decode_is_bandwidth_bound_so_faster_memory_shortens_it():
    m, s, rates, _ = inputs("35b", "gpu")
    lo = Layout(1, 8, 2, 1, 1, 8, 1, None, 8)
    e = estimate_layout(m, lo, s)
    base = step_time(m, lo, s, e, rates).parts["rollout_decode"]
    faster = step_time(m, lo, s, e, dataclasses.replace(rates, hbm_gbps=2 * rates.hbm_gbps)).parts["rollout_decode"]
    assert faster < 0.75 * base


def test_the_fit_reproduces_each_published_row_within_its_residual():
    """Every fitted row has a source and what was measured; the fitted model lands within 25% of each."""
    result = fit()
    eff = result.efficiency
    assert 0 < eff.train_mfu < 1 and 0 < eff.decode_bandwidth < 1
    for row, own, residual in result.per_row:
        assert row["source"].startswith("https://") and row["measured"]
        if row.get("fit", True):
            assert own is not None and abs(residual) < 0.25, (row["id"], residual)
    assert {r["kind"] for r in load_measurements()} == {"pretrain", "grpo"}
