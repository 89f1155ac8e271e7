"""The layout planner lists what the preflight and the dry run accept; the published layouts are in it."""

import csv
import dataclasses
import json
import shlex

import pytest
from omegaconf import OmegaConf

from tests.conftest import REFERENCE_LAYOUTS
from verl_qwen35 import resolve
from verl_qwen35.checks import device_of
from verl_qwen35.cli.plan import main
from verl_qwen35.config import compose
from verl_qwen35.model.layout import Layout
from verl_qwen35.model.memory import ModelFacts, Settings, estimate_layout
from verl_qwen35.planner.plan import name_of
from verl_qwen35.planner.search import (
    Plain,
    rollout_layouts,
    search,
    shape_of,
    training_layouts,
    variant,
    verify,
)


def composed(model: str, device: str, *extra: str):
    run = resolve(compose([f"model={model}", f"device={device}", *extra]))  # the one builder's Run
    return run, run.config


def published(combo) -> Layout:
    nnodes, per_node, tp, pp, cp, ep, etp, gen_tp, gen_dp, gen_ep = REFERENCE_LAYOUTS[combo]
    return Layout(nnodes, per_node, tp, pp, cp, ep, etp, None, gen_tp, gen_dp, 1, gen_ep)


def test_published_layout_is_accepted_and_fits(combo):
    """The search space holds every published layout, accepted by the rules and fitting in memory."""
    model, device = combo
    run, resolved = composed(model, device)
    plain = Plain.of(OmegaConf.to_container(resolved))
    lo = published(combo)
    trainings = {t for t, *_ in training_layouts(plain, Layout.of(plain), device, [0])}
    rollouts = {(r.gen_tp, r.gen_dp, r.gen_ep) for r, _ in rollout_layouts(plain, Layout.of(plain), [0])}
    assert dataclasses.replace(lo, gen_tp=8, gen_dp=1, gen_ep=1) in {
        dataclasses.replace(t, gen_tp=8, gen_dp=1, gen_ep=1) for t in trainings
    }
    assert (lo.gen_tp, lo.gen_dp, lo.gen_ep) in rollouts
    assert estimate_layout(ModelFacts.of(plain.model), lo, Settings.of(plain)).fits


@pytest.mark.parametrize("combo", [("35b", "gpu"), ("122b", "npu")], ids=lambda c: "_".join(c))
def test_published_layout_is_among_all_fitting_ones(combo):
    model, device = combo
    run, resolved = composed(model, device)
    everything = search(run, device, top=0).candidates
    assert all(c.fits for c in everything)
    # One row per TP/PP/CP/EP/ETP shape (its best VPP, split and rollout layout): the shape is listed.
    assert shape_of(published(combo)) in [shape_of(c.layout) for c in everything]


def test_every_listed_layout_passes_the_whole_preflight_and_is_ranked():
    """Ranked by tier: the first tier (within the fastest's band) first, the rest by predicted seconds."""
    run, resolved = composed("122b", "gpu")
    found = search(run, "gpu", top=8).candidates
    assert len(found) == 8
    for c in found:
        assert c.fits
        assert [str(p) for p in verify(run, c.layout, c.split) if p.level == "error"] == []
    tiers = [c.tier for c in found]
    assert tiers == sorted(tiers) and tiers[0] == 1
    seconds = [c.time.seconds for c in found if c.tier == 2]
    assert seconds == sorted(seconds)


def test_a_variant_equals_the_command_line_override():
    """A candidate's Run (the composed config with parallel.* changed, built by the one builder) is the Run of
    Hydra's override (no second composition)."""
    run, _ = composed("122b", "npu")
    lo = Layout(4, 16, 4, 4, 1, 8, 1, 3, 8, 2, 1, 16)
    by_hand = variant(run, lo)
    overrides = [f"parallel.{k}={v}" for k, v in dict(tp=4, pp=4, ep=8, vpp=3, gen_tp=8, gen_dp=2, gen_ep=16).items()]
    by_hydra, _ = composed("122b", "npu", *overrides)
    assert OmegaConf.to_container(by_hand.config) == OmegaConf.to_container(by_hydra.config)
    assert (by_hand.layout, by_hand.split, by_hand.estimate) == (by_hydra.layout, by_hydra.split, by_hydra.estimate)


def test_122b_on_4x16_npu_lists_the_published_layout_and_its_top_five_pass_the_real_dry_run(cli):
    run = cli("plan", "model=122b", "device=npu", "--top", "5", "--format", "json")
    assert run.code == 0, run.err
    rows = json.loads(run.out)
    # The preset itself is the appended `current` row when the time model ranks others faster.
    want = dict(tp=2, pp=4, cp=1, ep=16, etp=1, vpp=None, gen_tp=16, gen_dp=1, gen_ep=1)
    assert want.items() <= next(r for r in rows if r["current"])["layout"].items()
    assert {"rank", "current", "layout", "overrides", "fits", "estimate", "step_time"} <= set(rows[0])
    top = [r for r in rows if r["rank"] is not None]
    assert len(top) == 5 and all(r["fits"] and r["estimate"]["fits"] for r in top)
    for row in top:
        dry = cli(*row["overrides"], "dry_run=true")
        assert dry.code == 0, (row["overrides"], dry.err)
        assert "verdict    OK" in dry.out and "\nrun        ? training steps (unknown: " in dry.out
        assert "\nsaves      " in dry.out and "GiB a save" in dry.out
        # Each row carries the warnings the dry run of its layout prints, word for word: above 90% of the
        # device (the dry run's floor) a "little headroom" one (verl's own 122B NPU layout needs 92%).
        assert row["warnings"] == [line for line in dry.err.splitlines() if line.startswith("WARNING")]
        tight = any("little headroom" in w for w in row["warnings"])
        assert tight == (row["memory_headroom"] < 0.1), (row["memory_headroom"], row["warnings"])
        assert type(row["memory_headroom"]) is float and type(row["step_time"]["seconds_per_step"]) is float


def test_table_shows_the_override_line_and_the_sweep_command(cli):
    run = cli("plan", "model=35b", "device=gpu", "--top", "3")
    assert run.code == 0, run.err
    lines = run.out.splitlines()
    assert lines[1].split()[:4] == ["rank", "tier", "tp", "pp"]
    assert lines[2].startswith("1 ") and "parallel.tp=" in lines[2] and "parallel.gen_ep=" in lines[2]
    assert "--sweep DIR" in run.out


def test_the_printed_sweep_command_is_safe_to_paste(cli):
    """A value with a space, a `;` and a `$(...)` comes back from the shell as the same word, never run."""
    value = "trainer.experiment_name='a b; touch pwned $(id)'"
    run = cli("plan", "model=35b", "device=gpu", value, "--top", "2")
    assert run.code == 0, run.err
    line = next(line for line in run.out.splitlines() if line.startswith("sweep:   "))
    words = shlex.split(line.removeprefix("sweep:   ").split("  (writes")[0])
    assert words[:2] == ["verl-qwen35", "plan"] and value in words and words[-2:] == ["--sweep", "DIR"]


def test_sweep_over_the_top_layouts_is_one_command(cli, tmp_path):
    run = cli(
        "plan", "model=35b", "device=gpu", "--top", "2", "--sweep", str(tmp_path / "plans"),
        f"hydra.sweep.dir={tmp_path}/sweep",
    )  # fmt: skip
    assert run.code == 0, run.err
    assert "sweep: 2 job(s), 2 valid, 0 refused" in run.out
    rows = list(csv.DictReader((tmp_path / "sweep" / "summary.csv").open()))
    assert [r["parallel"] for r in rows] == sorted(p.stem for p in (tmp_path / "plans" / "parallel").glob("*.yaml"))


@pytest.mark.parametrize(
    ("args", "why"),
    [
        (["model=397b", "device=gpu", "parallel.nnodes=1"], "[parallel.ep, parallel.pp, hardware.device_memory_gib]"),
        # the closest layout's device peak (92 of 95 GiB) is under the device's size: host memory is what fails
        (["model=122b", "device=gpu", "parallel.nnodes=1"], "[hardware.host_memory_gib,"),
    ],
    ids=["device-memory", "host-memory"],
)
def test_no_fitting_layout_exits_2_and_says_why_and_what_to_change(cli, args, why):
    run = cli("plan", *args, "--top", "3")
    assert run.code == 2 and "Traceback" not in run.err
    assert "nothing fits: no accepted layout" in run.err and "tier 1" not in run.out
    assert f"does not fit: {why}" in run.err
    assert "to change: more devices (parallel.nnodes)" in run.err


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["model=480b"], "model=480b"),
        (["model=35b", "parallel.nnodes=0"], "parallel.nnodes"),
        (["model=35b", "--top", "-1"], "--top"),
        (["model=35b", "megatron.use_remove_padding=true"], "megatron.use_remove_padding"),
    ],
)
def test_usage_errors_exit_2_naming_what_to_change(cli, args, named):
    run = cli("plan", *args)
    assert run.code == 2
    assert named in run.err and "Traceback" not in run.err


def test_option_names_say_the_layout():
    assert name_of(3, Layout(16, 16, 2, 4, 1, 64, 1, None, 16, 16, 1, 256)) == "r03_tp2_pp4_ep64_gtp16_gdp16_gep256"
    assert main(["model=35b", "device=gpu", "--top", "1", "--format", "json"]) == 0


def test_device_of_the_composed_config_is_used():
    run, resolved = composed("35b", "npu")
    assert device_of(resolved) == "npu"
