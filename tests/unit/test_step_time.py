"""The step-time model: each verl phase from the layout's real groups, fitted and banded on published measurements."""

import dataclasses

import pytest
from omegaconf import OmegaConf

from verl_qwen35.config import compose
from verl_qwen35.model.calibration import calibrate, calibration_of, fit_lines, leave_one_out, shipped, shipped_rows
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


def test_a_share_just_over_what_a_replica_runs_at_once_costs_a_little_more_not_a_second_pass():
    """vLLM admits a waiting sequence as soon as a running one ends (continuous batching): 10% more sequences than
    `max_num_seqs` lengthen decoding by about a tenth, not by a second whole wave."""
    m, s, rates, _ = inputs("35b", "gpu")
    lo = Layout(1, 8, 2, 1, 1, 8, 1, None, 8)
    share = s.step_sequences // (lo.world // lo.gen_tp)
    e = estimate_layout(m, lo, s)
    assert e.sequences_fit >= share  # the cache holds the whole share: max_num_seqs alone decides the batch

    def gen(max_num_seqs: int) -> float:
        return step_time(m, lo, dataclasses.replace(s, max_num_seqs=max_num_seqs), e, rates, shipped()).phases["gen"]

    assert gen(share) < gen(round(share / 1.1)) < 1.25 * gen(share)


def test_an_expected_mean_response_length_shortens_the_step_and_is_said():
    m, s, rates, _ = inputs("35b", "gpu")
    lo = Layout(1, 8, 2, 1, 1, 8, 1, None, 8)
    e = estimate_layout(m, lo, s)
    full = step_time(m, lo, s, e, rates, shipped())
    mean = step_time(m, lo, s, e, rates, shipped(), Recipe(response_length=s.response_length // 4))
    assert mean.total < 0.7 * full.total
    assert "data.max_response_length" in full.assumption() and "plan.response_length" in mean.assumption()


def test_a_rollout_waits_for_its_longest_response():
    """With one expected mean, a longer data.max_response_length leaves a longer tail to decode, up to twice the
    mean; a maximum at the mean is every response at it, and a rollout with a tail is still faster than one where
    every response runs to the maximum."""
    m, s, rates, _ = inputs("35b", "gpu")
    lo = Layout(1, 8, 2, 1, 1, 8, 1, None, 8)
    mean = s.response_length // 8

    def predicted(longest: int):
        settings = dataclasses.replace(s, response_length=longest)
        e = estimate_layout(m, lo, settings)
        return step_time(m, lo, settings, e, rates, shipped(), Recipe(response_length=mean))

    def gen(longest: int) -> float:
        return predicted(longest).phases["gen"]

    short = dataclasses.replace(s, response_length=mean)
    at_mean = step_time(m, lo, short, estimate_layout(m, lo, s), rates, shipped())
    assert gen(mean) == pytest.approx(at_mean.phases["gen"])
    assert gen(mean) < gen(3 * mean // 2) < gen(2 * mean) == pytest.approx(gen(4 * mean))
    said = predicted(4 * mean)
    assert said.as_dict()["longest_response"] == 2 * mean and f"the longest {2 * mean}" in said.assumption()
    everyone_at_the_maximum = dataclasses.replace(s, response_length=2 * mean)
    assert (
        gen(2 * mean)
        < step_time(
            m, lo, everyone_at_the_maximum, estimate_layout(m, lo, everyone_at_the_maximum), rates, shipped()
        ).phases["gen"]
    )


def test_the_gpu_bands_hold_at_least_8_of_10_held_out_published_runs_and_say_how_many():
    """Leave-one-out over the shipped rows: each GPU measurement is predicted by a fit that never saw it; the bands
    the plan prints (the 10th to 90th percentile of these ratios) hold at least 80% of them, and scripts/calibrate.py
    prints, per phase, how many its band holds."""
    rows = [r for r in shipped_rows() if r.fitted]
    cal = shipped("gpu")
    loo = leave_one_out(rows, device="gpu")
    assert loo and all(row.device == "gpu" and row.source.startswith("https://") for row, _, _ in loo)
    phase = {"step": "gen"}
    inside = [cal.band[phase.get(p, p)][0] <= ratio <= cal.band[phase.get(p, p)][1] for _, p, ratio in loo]
    assert sum(inside) >= 0.8 * len(loo), (sum(inside), len(loo))
    printed = "\n".join(fit_lines(cal, list(shipped_rows())))
    for p in PHASES:
        held = [ok for (_, q, _), ok in zip(loo, inside, strict=True) if phase.get(q, q) == p]
        if held:
            low, high = cal.band[p]
            assert f"{p} {low:.2f}-{high:.2f}: holds {sum(held)} of its {len(held)} gpu ratios" in printed


def test_an_npu_config_predicts_with_the_npu_fit_and_says_how_many_npu_runs_it_rests_on():
    """Every Ascend RL or rollout row's phases (the 235B GRPO run's, the DAPO update the fit never saw, the 30B
    run's step, the serving benchmark's decoding) under the calibration a `device=npu hardware=a3` config chooses
    lie within that calibration's band of what was measured; under a GPU config's calibration (NVIDIA's share of
    peak) the 235B GRPO step lies beyond the band. (MindSpeed-LLM's A2 pre-training row is printed below the
    band, as docs/planning.md says.)"""
    npu = calibration_of(resolved("122b", "npu", "hardware=a3"))
    gpu = calibration_of(resolved("122b", "gpu"))
    assert (npu.device, gpu.device) == ("npu", "gpu")
    ascend = [r for r in shipped_rows() if r.device == "npu"]
    fitted = sum(1 for r in ascend if r.fitted)
    assert f"{fitted} of them on npu" in npu.describe() and "on npu" not in gpu.describe()
    grpo = next(r for r in ascend if r.id == "cann-qwen3-235b-grpo-a3-128die")
    for row in (r for r in ascend if "gen" in r.terms):  # an RL step or a rollout, not a pre-training iteration
        phases = row.terms if "step" in row.measured else row.measured  # a published step: all its phases
        measured = row.measured.get("step", sum(row.measured.values()))
        predicted = {p: row.predict(npu.efficiency, p) for p in phases}
        low = sum(v * npu.band[p][0] for p, v in predicted.items())
        high = sum(v * npu.band[p][1] for p, v in predicted.items())
        assert low <= measured <= high, (row.id, low, measured, high)
    on_gpu = {p: grpo.predict(gpu.efficiency, p) for p in grpo.measured}
    assert sum(v * gpu.band[p][1] for p, v in on_gpu.items()) < sum(grpo.measured.values())


def test_a_gpu_prediction_is_not_changed_by_an_npu_row():
    """Fitted per device kind: another Ascend run, twice as slow, moves the NPU fit and leaves the GPU's as it was."""
    rows = [r for r in shipped_rows() if r.fitted]
    ascend = next(r for r in rows if r.device == "npu")
    slower = dataclasses.replace(ascend, id="another-a3-run", measured={p: 2 * v for p, v in ascend.measured.items()})
    before, after = calibrate(rows, "published", "gpu"), calibrate([*rows, slower], "published", "gpu")
    assert (after.efficiency, after.band, after.rows) == (before.efficiency, before.band, before.rows)
    assert calibrate([*rows, slower], "published", "npu").efficiency["update"] < shipped("npu").efficiency["update"]
    if not any(p in ("old_log_prob", "ref") for r in rows if r.device == "gpu" for p in r.fitted):
        assert before.efficiency["log_prob"] == before.efficiency["update"]  # no GPU row measures a log-prob pass


def test_an_npu_stack_slower_by_one_factor_in_every_phase_it_measures_is_taken_as_slower_in_the_others():
    """An Ascend run whose rollout, reference pass and update all run at half the GPU rows' share of peak: its
    weight sync, which it does not measure, is predicted at half the GPU's share too."""
    gpu_rows = [r for r in shipped_rows() if r.fitted and r.device == "gpu"]
    gpu = shipped("gpu").efficiency
    ascend = next(r for r in shipped_rows() if r.fitted and r.device == "npu")
    half = {c: v / 2 for c, v in gpu.items()}
    even = dataclasses.replace(ascend, measured={p: ascend.predict(half, p) for p in ascend.measured})
    npu = calibrate([*gpu_rows, even], "published", "npu").efficiency
    assert npu["update_weights"] == pytest.approx(gpu["update_weights"] / 2)
    assert npu["update"] == pytest.approx(gpu["update"] / 2)


def test_the_overlapped_expert_all_to_all_costs_less():
    m, s, rates, cfg = inputs("122b", "npu")
    lo = Layout(4, 16, 2, 4, 1, 16, 1, None, 16)
    plain = training_terms(m, lo, s, rates, Recipe())[0]["update_actor"][1]
    hidden = training_terms(m, lo, s, rates, Recipe(overlap_ep=True))[0]["update_actor"][1]
    assert hidden < plain


def test_a_logged_longest_response_past_twice_the_mean_is_waited_for_one_response_at_a_time():
    """A run that logged a longest response (verl's response_length/max) past the even spread's end (twice the
    mean) decodes to it: gen grows with it; a logged longest inside the spread changes nothing; the longest is said."""
    m, s, rates, _ = inputs("35b", "gpu")
    lo = Layout(1, 8, 2, 1, 1, 8, 1, None, 8)
    e = estimate_layout(m, lo, s)
    mean = s.response_length // 8

    def gen(longest: int | None) -> float:
        t = step_time(m, lo, s, e, rates, shipped(), Recipe(response_length=mean, longest_response=longest))
        return t.phases["gen"]

    assert gen(None) == pytest.approx(gen(2 * mean)) == pytest.approx(gen(3 * mean // 2))
    assert gen(2 * mean) < gen(4 * mean) < gen(8 * mean)
    said = step_time(m, lo, s, e, rates, shipped(), Recipe(response_length=mean, longest_response=6 * mean))
    assert said.longest_response == 6 * mean and f"the longest {6 * mean}" in said.assumption()


def test_a_weight_sync_past_the_models_it_was_fitted_on_is_said_and_its_band_reaches_down_to_the_links():
    """397B's sync is several times the largest model whose sync a published run measured: the prediction says it
    is an extrapolation, and the band's low end is the gathers over the links (what the sync cannot go below)."""
    m, s, rates, cfg = inputs("397b", "gpu")
    lo = Layout.of(cfg)
    t = step_time(m, lo, s, estimate_layout(m, lo, s), rates, shipped())
    assert t.sync_floor > 0 and t.band("update_weights")[0] == pytest.approx(t.sync_floor / t.phases["update_weights"])
    assert t.band("update_weights")[0] < shipped().band["update_weights"][0]
    assert "weight sync of a" in t.assumption() and "is not calibrated" in t.assumption()
    small = inputs("35b", "gpu")
    t35 = step_time(small[0], Layout.of(small[3]), small[1], estimate_layout(small[0], Layout.of(small[3]), small[1]),
                    small[2], shipped())  # fmt: skip
    assert "weight sync" not in t35.assumption() and t35.band("update_weights") == shipped().band["update_weights"]


def test_an_npu_prediction_says_its_log_prob_and_update_rest_on_one_run():
    m, s, rates, cfg = inputs("35b", "npu")
    lo = Layout.of(cfg)
    t = step_time(m, lo, s, estimate_layout(m, lo, s), rates, calibration_of(cfg))
    said = t.assumption()
    assert "npu old_log_prob/ref efficiency rests on one run (cann-qwen3-235b-grpo-a3-128die)" in said, said
    assert "npu update_actor efficiency rests on one run" in said, said
    gpu = inputs("35b", "gpu")
    assert (
        "rests on one run"
        not in step_time(
            gpu[0], Layout.of(gpu[3]), gpu[1], estimate_layout(gpu[0], Layout.of(gpu[3]), gpu[1]), gpu[2], shipped()
        ).assumption()
    )
