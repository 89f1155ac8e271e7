"""The step-time model: each verl phase from the layout's real groups, fitted and banded on published measurements."""

import dataclasses

import pytest
from omegaconf import OmegaConf

from verl_qwen35.config import compose
from verl_qwen35.model.calibration import leave_one_out, shipped, shipped_rows
from verl_qwen35.model.layout import Layout
from verl_qwen35.model.memory import ModelFacts, Settings, estimate_layout
from verl_qwen35.model.pipeline import Split
from verl_qwen35.model.step_time import (
    PHASES,
    Rates,
    Recipe,
    stage_imbalance,
    step_time,
    training_communication,
    training_terms,
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


def test_every_phase_is_verls_non_negative_and_interleaving_shortens_the_update():
    m, s, rates, _ = inputs("122b", "npu")
    lo = Layout(4, 16, 2, 4, 1, 16, 1, None, 16)
    cal = shipped()
    flat = step_time(m, lo, s, estimate_layout(m, lo, s), rates, cal)
    assert tuple(flat.phases) == PHASES and all(v >= 0 for v in flat.phases.values())
    interleaved = dataclasses.replace(lo, vpp=3)
    vpp = step_time(m, interleaved, s, estimate_layout(m, interleaved, s), rates, cal)
    assert vpp.phases["update_actor"] < flat.phases["update_actor"]
    assert flat.low < flat.total < flat.high


def test_decode_is_bandwidth_bound_so_faster_memory_shortens_it():
    m, s, rates, _ = inputs("35b", "gpu")
    lo = Layout(1, 8, 2, 1, 1, 8, 1, None, 8)
    e = estimate_layout(m, lo, s)
    base = step_time(m, lo, s, e, rates, shipped()).phases["gen"]
    faster = step_time(m, lo, s, e, dataclasses.replace(rates, hbm_gbps=2 * rates.hbm_gbps), shipped()).phases["gen"]
    assert faster < 0.75 * base


def test_an_expected_mean_response_length_shortens_the_step_and_is_said():
    m, s, rates, _ = inputs("35b", "gpu")
    lo = Layout(1, 8, 2, 1, 1, 8, 1, None, 8)
    e = estimate_layout(m, lo, s)
    full = step_time(m, lo, s, e, rates, shipped())
    mean = step_time(m, lo, s, e, rates, shipped(), Recipe(response_length=s.response_length // 4))
    assert mean.total < 0.7 * full.total
    assert "data.max_response_length" in full.assumption() and "plan.response_length" in mean.assumption()


def test_the_band_holds_each_held_out_published_measurement():
    """Leave-one-out over the shipped rows: each fitted measurement, predicted by a fit that never saw it, lies
    inside the band the plan prints for its phase (the band is made of exactly these errors)."""
    rows = [r for r in shipped_rows() if r.fitted]
    cal = shipped()
    for row, phase, ratio in leave_one_out(rows):
        if sum(1 for r in rows for p in r.fitted if p == phase) < 2:
            continue  # a phase one row measures has no held-out prediction to test
        low, high = cal.band["gen" if phase == "step" else phase]
        assert low <= ratio <= high, (row.id, phase, ratio)
        assert row.source.startswith("https://")


def test_the_overlapped_expert_all_to_all_costs_less():
    m, s, rates, cfg = inputs("122b", "npu")
    lo = Layout(4, 16, 2, 4, 1, 16, 1, None, 16)
    plain = training_terms(m, lo, s, rates, Recipe())[0]["update_actor"][1]
    hidden = training_terms(m, lo, s, rates, Recipe(overlap_ep=True))[0]["update_actor"][1]
    assert hidden < plain
