"""What a person choosing a layout reads in `verl-qwen35 plan` (one stated tier order, claims that match the numbers
beside them, the reason the config's own layout is refused, rollouts no measured run used), and `plan --trial K`:
the first tier's most informative layouts written as trial runs with their cost, a launch line and a dry run."""

import csv
import re
import shlex
from pathlib import Path

import yaml

from verl_qwen35 import resolve
from verl_qwen35.config import compose
from verl_qwen35.planner.measured import measured_kinds
from verl_qwen35.planner.search import crossing_groups, headroom_step, search
from verl_qwen35.planner.trials import spread

H100_4x8 = ("plan", "model=35b", "device=gpu", "hardware=h100", "parallel.nnodes=4")
A3_2x16 = ("plan", "model=35b", "device=npu", "hardware=a3", "parallel.nnodes=2")


def rows_of(out: str) -> list[list[str]]:
    """The table's rows (rank or `current` first), split on runs of two or more spaces."""
    return [re.split(r" {2,}", line) for line in out.splitlines() if re.match(r"^(\d+|current) ", line)]


def test_tier_one_is_in_the_order_the_plan_states(cli):
    """The stated order: headroom at or above the floor, its 5% step (printed beside it), fewer node-crossing
    group kinds (x-node), then the rest; a person can check each row against the one above it."""
    run = cli(*H100_4x8, "--top", "10")
    assert run.code == 0, run.err
    head = next(line for line in run.out.splitlines() if line.startswith("rank"))
    columns = re.split(r" {2,}", head)
    rows = rows_of(run.out)
    listed = [dict(zip(columns, r, strict=True)) for r in rows if r[0] != "current"]
    keys = []
    for row in listed:
        assert row["tier"] == "equal"
        pct, step = re.fullmatch(r"(\d+)% \[(\d+)\+\]", row["headroom"]).groups()
        assert int(step) <= int(pct) < int(step) + 5, row["headroom"]
        keys.append((int(pct) < 10, -int(step), int(row["x-node"])))
    assert keys == sorted(keys), "tier 1 in the order the tiers line states"
    line = next(line for line in run.out.splitlines() if line.startswith("tiers:"))
    assert "(2) more memory headroom in 5% steps (the [N+] beside it: 26% and 29% are one step" in line
    assert "(3) fewer group kinds crossing a node (x-node" in line
    # The line under the table gives rank 1's own figures, not a rounding of them that differs from its row.
    rank1 = next(line for line in run.out.splitlines() if line.startswith("rank 1: "))
    point, band = re.fullmatch(r"~(\d+) \((\d+-\d+)\)", listed[0]["s/step (band)"]).groups()
    assert rank1.startswith(f"rank 1: ~{point} s a step ({band} s);"), rank1


def test_the_doc_states_the_same_tier_order():
    text = (Path(__file__).resolve().parents[2] / "docs" / "planning.md").read_text()
    assert "more memory headroom in 5% steps" in text and "fewer group kinds crossing a node" in text
    assert "then the larger memory headroom" not in text  # the third order the doc once described


def test_the_current_layout_is_compared_at_both_points_and_by_the_band(cli):
    """verl's own 35B layout on 2 x 16 A3 (rollout TP 8 engines) is slower at the point than rank 1's; the line
    says both points and how far apart, and that the band cannot tell them apart, never "as fast"."""
    run = cli(*A3_2x16, "--top", "3")
    assert run.code == 0, run.err
    line = next(line for line in run.out.splitlines() if line.startswith("current:"))
    found = re.search(r"~(\d+) s a step \((\d+)-(\d+)\) against rank 1's ~(\d+) s \((\d+)-(\d+)\), (\d+)% slower", line)
    assert found, line
    own, rank1, pct = int(found[1]), int(found[4]), int(found[7])
    assert own > rank1 and abs(pct - round(100 * (own - rank1) / rank1)) <= 1
    assert "as fast as" not in line and "so the model cannot tell them apart" in line
    current = next(r for r in rows_of(run.out) if r[0] == "current")
    assert current[1] == "equal"  # its tier by the same rule as the listed rows'


def test_a_refused_own_layout_says_why_and_the_command_to_see_every_reason(cli):
    run = cli(*H100_4x8, "parallel.ep=3", "trainer.experiment_name=a b", "--top", "2")
    assert run.code == 0, run.err
    line = next(line for line in run.out.splitlines() if line.startswith("current:"))
    assert "..." not in line
    reason, command = line.split("; every reason: ")
    assert "[parallel.ep" in reason and "is not divisible by etp*ep*pp=1*3*1=3" in reason
    words = shlex.split(command)
    assert words[:3] == ["python", "-m", "verl_qwen35"] and words[-1] == "dry_run=true"
    assert "parallel.ep=3" in words and "trainer.experiment_name=a b" in words


def test_a_rollout_no_measured_run_used_is_marked():
    """The published GPU rows timed TP engines only; Ascend's timed DP engines with and without EP."""
    assert measured_kinds("gpu") == {(False, False)}
    assert measured_kinds("npu") == {(True, True), (True, False)}


def test_the_table_marks_the_unmeasured_rollouts_and_says_what_was_measured(cli):
    run = cli(*H100_4x8, "--top", "3")
    rows = rows_of(run.out)
    gen = {r[0]: r[9] for r in rows}
    assert gen["1"].endswith("*") and not gen["current"].endswith("*"), gen  # DP x EP vLLM vs verl's TP 8
    note = next(line for line in run.out.splitlines() if line.startswith("gen *:"))
    assert "no measured run on gpu used a rollout of TP x DP engines with EP" in note
    assert "timed: TP engines only" in note


def test_json_rows_say_whether_their_rollout_was_measured_and_the_current_tier(cli):
    import json

    run = cli(*A3_2x16, "--top", "2", "--json")
    out = json.loads(run.out)
    assert all(isinstance(r["rollout_measured"], bool) and isinstance(r["crossing_groups"], int) for r in out)
    own = out[-1]
    assert own["current"] and own["rank"] is None and own["tier"] == 1 and own["rollout_measured"] is False


def test_spread_picks_layouts_that_differ_in_pipeline_expert_and_tensor_parallelism():
    cfg = compose(["model=35b", "device=gpu", "hardware=h100", "parallel.nnodes=4"])
    found = search(resolve(cfg), "gpu", top=10)
    assert found.tier_size == len(found.tier_one) > 10
    picked = spread(found.tier_one, 3)
    assert picked[0] is found.tier_one[0]
    assert len({c.layout.pp for c in picked}) == 3 and len({c.layout.tp for c in picked}) >= 2
    first_three = found.tier_one[:3]
    assert len({(c.layout.pp, c.layout.ep, c.layout.tp) for c in first_three}) <= 3
    assert len({c.layout.pp for c in first_three}) < 3  # the tier's own order would have measured less
    assert crossing_groups(picked[0].layout) >= 0 and headroom_step(0.26) == 25 and headroom_step(0.30) == 30


def test_plan_trial_writes_the_trial_sweep_prices_it_and_the_dry_run_accepts_every_job(cli, tmp_path):
    out_dir = tmp_path / "trials"
    run = cli(*A3_2x16, "--trial", "3", "--sweep", str(out_dir), f"hydra.sweep.dir={tmp_path}/sweep")
    assert run.code == 0, run.err[-3000:]
    lines = run.out.splitlines()
    head = next(line for line in lines if line.startswith("trials:"))
    assert head.startswith("trials: 3 of the ") and "4 steps each (trial.steps; the first is warm-up)" in head
    jobs = [line.strip().split(":")[0] for line in lines if line.startswith("  t")]
    assert len(jobs) == 4 and jobs[2].endswith("_save") and jobs[3].endswith("_resume")
    assert jobs[2].removesuffix("_save") == jobs[3].removesuffix("_resume")
    cost = next(line for line in lines if line.startswith("cost:"))
    wall = re.search(
        r"~([\d.]+) \(([\d.]+)-([\d.]+)\) h wall, ~([\d.]+) \(([\d.]+)-([\d.]+)\) device-hours on 32", cost
    )
    assert wall and float(wall[2]) < float(wall[1]) < float(wall[3])
    assert abs(float(wall[4]) - 32 * float(wall[1])) <= 32 * 0.005 + 0.005  # both printed to 0.01
    # The launch line: paste-ready, no dry run, the trial options in the order the sweep runs them.
    launch = shlex.split(next(line for line in lines if line.startswith("launch:")).removeprefix("launch:  "))
    assert launch[:4] == ["python", "-m", "verl_qwen35", "-m"] and "dry_run=true" not in launch
    assert launch[-1] == "trial=" + ",".join(jobs)
    # The files: a trial option each, the drill's two jobs sharing one absolute checkpoint folder.
    save = yaml.safe_load((out_dir / "trial" / f"{jobs[2]}.yaml").read_text())
    resume = yaml.safe_load((out_dir / "trial" / f"{jobs[3]}.yaml").read_text())
    assert save["defaults"] == ["drill_save", "_self_"] and resume["defaults"] == ["drill_resume", "_self_"]
    assert save["trial"]["checkpoint_dir"] == resume["trial"]["checkpoint_dir"] == str(out_dir / "resume_drill")
    assert save["parallel"] == resume["parallel"]
    # The dry run of the sweep accepted every job; its summary has each job's step time.
    assert "sweep: 4 job(s), 4 valid, 0 refused" in run.out
    summary = list(csv.DictReader((tmp_path / "sweep" / "summary.csv").open()))
    assert [r["trial"] for r in summary] == jobs and all(float(r["step_s"]) > 0 for r in summary)


def test_trial_needs_a_directory_and_a_positive_count(cli):
    run = cli(*A3_2x16, "--trial", "3")
    assert run.code == 2 and "--trial K writes the trial sweep into a directory: add --sweep DIR" in run.err
    run = cli(*A3_2x16, "--trial", "0", "--sweep", "x")
    assert run.code == 2 and "--trial K: K must be >= 1" in run.err
