"""The planner ranks by predicted step time: warnings do not rank, uneven stages are proposed, and the
shipped presets land near the top or the plan says, in seconds, why its pick is faster."""

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import COMBOS
from verl_qwen35 import resolve
from verl_qwen35.cli.plan import compare_current
from verl_qwen35.config import compose
from verl_qwen35.model.layout import Layout
from verl_qwen35.model.step_time import PHASES
from verl_qwen35.planner.plan import overrides_of
from verl_qwen35.planner.search import judge, search, shape_of, verify

DOCS = Path(__file__).resolve().parents[2] / "docs" / "planning.md"


def composed(model: str, device: str, *extra: str):
    run = resolve(compose([f"model={model}", f"device={device}", *extra]))  # the one builder's Run
    return run, run.config


def planner(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "verl_qwen35.cli.plan", *args], capture_output=True, text=True, check=False, cwd=cwd
    )


def test_ties_are_one_tier_no_first_layout_is_under_the_floor_and_the_harmless_tp1_warning_does_not_rank():
    """Tier 1 is every layout within the band of the fastest, ordered with the headroom floor first; tier 2 by
    seconds. Every TP 1 layout carries "sequence_parallel has no effect at tp=1", which ranks nothing."""
    run, resolved = composed("35b", "gpu", "parallel.nnodes=2")
    found = search(run, "gpu", top=0).candidates
    warned = [c for c in found if c.layout.tp == 1]
    assert warned and all(any("sequence_parallel" in w for w in c.warnings) for c in warned)
    first = [c for c in found if c.tier == 1]
    fastest = min(c.time.total for c in first)
    high = next(c for c in first if c.time.total == fastest).time.high
    assert first == found[: len(first)] and all(c.time.total <= high for c in first)
    assert all(c.time.total > high for c in found[len(first) :])
    seconds = [round(c.time.seconds, 2) for c in found[len(first) :]]
    assert seconds == sorted(seconds)
    if any(c.headroom >= 0.10 for c in first):
        assert found[0].headroom >= 0.10
    strict = search(run, "gpu", top=0, min_headroom=0.5).candidates
    if any(c.headroom >= 0.5 for c in strict if c.tier == 1):
        assert strict[0].headroom >= 0.5


def test_397b_at_pp8_is_expressible_with_uneven_stages_and_the_dry_run_accepts_it(tmp_path):
    """60 layers do not split over 8 stages evenly: the planner proposes first/last stage counts."""
    run, resolved = composed("397b", "npu")
    found = search(run, "npu", top=0).candidates
    pp8 = [c for c in found if c.layout.pp == 8]
    assert pp8 and all(c.split.first is not None and c.split.last is not None for c in pp8)
    c = pp8[0]
    assert [str(p) for p in verify(run, c.layout, c.split) if p.level == "error"] == []
    dry = subprocess.run(
        [
            sys.executable,
            "-m",
            "verl_qwen35",
            "model=397b",
            "device=npu",
            *overrides_of(c.layout, c.split),
            "dry_run=true",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert dry.returncode == 0, dry.stderr
    assert "verdict    OK" in dry.stdout
    assert f"first {c.split.first}," in dry.stdout and f"last {c.split.last}" in dry.stdout


@pytest.mark.parametrize("combo", COMBOS, ids=lambda c: "_".join(c))
def test_where_the_shipped_presets_land(combo, tmp_path):
    """verl's own training layout for each preset lies in the first tier of its cluster (as fast as the pick
    within the model's band), and the plan says so in words, not in seconds the model cannot tell apart."""
    model, device = combo
    run, resolved = composed(model, device)
    own = Layout.of(resolved)
    found = search(run, device, top=0).candidates
    shapes = [shape_of(c.layout) for c in found]
    assert shape_of(own) in shapes
    rank = shapes.index(shape_of(own)) + 1
    assert found[rank - 1].tier == 1, (rank, compare_current(found[0], found[rank - 1], None))
    run = planner(f"model={model}", f"device={device}", "--top", "5", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    line = next(line for line in run.stdout.splitlines() if line.startswith("current:"))
    if "is rank" in line or "so the model cannot tell them apart" in line:
        return
    # The training shape is in tier 1; only the preset's own rollout layout can be slower, and the line says so.
    assert "tier 2: slower than the fastest layout's band" in line and "rank 1 differs most in gen " in line, line


# Megatron-Bridge's published Qwen3.5 H100 layouts (TP, PP, CP, EP, ETP) and the cluster each runs on:
# src/megatron/bridge/perf_recipes/qwen_vl/h100/qwen35_vl.py at NVIDIA-NeMo/Megatron-Bridge 3564acfd
# (qwen35_vl_35b_a3b_pretrain_16gpu_h100_bf16_config: TP1 PP2 VP12 EP8; ..._122b_a10b_..._128gpu...:
# TP2 PP8 VP4 EP16; ..._397b_a17b_..._256gpu...: TP2 PP8 VP4 EP32). Their VPP and stage split are the
# planner's to choose (one row per shape); their pre-training batch is not our GRPO recipe.
BRIDGE = {"35b": (2, (1, 2, 1, 8, 1)), "122b": (16, (2, 8, 1, 16, 1)), "397b": (32, (2, 8, 1, 32, 1))}


@pytest.mark.parametrize("model", sorted(BRIDGE))
def test_where_megatron_bridge_qwen35_layouts_land(model):
    """In the first tier of their H100 cluster (as fast as the pick within the model's band)."""
    nodes, shape = BRIDGE[model]
    run, resolved = composed(model, "gpu", "hardware=h100", f"parallel.nnodes={nodes}", "parallel.devices_per_node=8")
    found = search(run, "gpu", top=0).candidates
    shapes = [shape_of(c.layout) for c in found]
    assert shape in shapes
    rank = shapes.index(shape) + 1
    theirs = found[rank - 1]
    assert theirs.tier == 1, (rank, compare_current(found[0], theirs, None))


# More layouts others publish for Qwen3.5 / Qwen3.6 MoE, by the cluster they run on (model, hardware, nodes x
# devices): (TP, PP, CP, EP, ETP) of training and, where the source gives it, the rollout's (TP, DP, EP) in verl's
# terms (vLLM's EP = TP x DP; an SGLang engine of N GPUs with its EP at N is TP N, DP 1, EP N). Sources:
# - miles: radixark/miles 31f1ca96 scripts/run_qwen3_5_35b_a3b_mtp.py (8 x H200, parallelism "tp1-ep8", engine of
#   8, SGLang's EP the engine's TP as its comment says) and scripts/run_qwen3_6_35b_a3b_mtp.py (8 x H200, TP1 EP8,
#   --sglang-ep-size 8).
# - Megatron-Bridge 067f987d src/megatron/bridge/perf_recipes/qwen_vl/b200/qwen35_vl.py: 35B-A3B on 8 B200 EP8,
#   122B-A10B on 32 (TP1 PP4 VP4 EP8), 397B-A17B on 64 (TP1 PP8 VP4 EP8); pre-training, VP the planner's to choose.
# - NeMo RL 7ea279ab examples/configs/recipes/: vlm/vlm_grpo-qwen3.5-35ba3b-geo3k-2n8g-megatron-ep16.yaml (EP16,
#   vLLM TP8) and llm/grpo-qwen3.5-35ba3b-2n8g-megatron-ep16tp2-fp8.yaml (TP2 CP1 EP16, vLLM TP2; FP8, judged in
#   BF16 here); llm/grpo-qwen3.5-397ba17b-32n8g-megatron.v2.yaml (TP8 PP8 EP32, first/last stage 6 layers; its
#   vLLM TP16 with EP64, i.e. DP4, spans two nodes, which verl's vLLM server refuses with rollout DP > 1:
#   vllm_async_server.py "gpus_per_node should be divisible by tensor_model_parallel_size", so the training
#   layout only). Sizes a recipe leaves unset are grpo_math_1B.yaml's defaults (1; vlm_grpo_3B.yaml inherits it);
#   the nightly and release suites run on DGX H100 (tests/test_suites/README.md).
# - verl 1dda039b: examples/sft/gsm8k/run_qwen3_5_397b_a17b_megatron.sh ("Tested parallelism config (128 GPUs /
#   16 nodes): TP=2 PP=4 EP=32 CP=1", 80 GB H100/H200); verl/experimental/fully_async_policy/shell/
#   grpo_qwen35_35b_megatron_async.sh (1 training node of 8: TP4 PP2 EP4) and run_qwen35_35b_a3b_math_dynamic_
#   megatron.sh (2 training nodes of 8: TP4 PP2 EP8), their rollout on nodes of its own (training layout only;
#   GPU type not stated: the 35B preset's H100).
# - slime THUDM/slime 624b824a examples/geo3k_vlm/run_geo3k_qwen35.sh (1 x 8, TP2 EP8, engine of 8 with EP8; GPU
#   type not stated: H100).
PUBLISHED = {
    ("35b", "h200", 1): [((1, 1, 1, 8, 1), (8, 1, 8))],
    ("36_35b", "h200", 1): [((1, 1, 1, 8, 1), (8, 1, 8))],
    ("35b", "b200", 1): [((1, 1, 1, 8, 1), None)],
    ("122b", "b200", 4): [((1, 4, 1, 8, 1), None)],
    ("397b", "b200", 8): [((1, 8, 1, 8, 1), None)],
    ("35b", "h100", 2): [((1, 1, 1, 16, 1), (8, 1, 1)), ((2, 1, 1, 16, 1), (2, 1, 1)), ((4, 2, 1, 8, 1), None)],
    ("397b", "h100", 32): [((8, 8, 1, 32, 1), None)],
    ("397b", "h100", 16): [((2, 4, 1, 32, 1), None)],
    ("35b", "h100", 1): [((2, 1, 1, 8, 1), (8, 1, 8)), ((4, 2, 1, 4, 1), None)],
}


@pytest.mark.parametrize("cluster", sorted(PUBLISHED), ids=lambda c: f"{c[0]}_{c[1]}_{c[2]}x8")
def test_where_other_published_qwen35_layouts_land(cluster):
    """Each published training layout lies in the first tier of its cluster, and with its published rollout layout
    the step still lies within the band of the fastest (the model cannot tell it from the pick)."""
    model, hardware, nodes = cluster
    run, resolved = composed(
        model, "gpu", f"hardware={hardware}", f"parallel.nnodes={nodes}", "parallel.devices_per_node=8"
    )
    found = search(run, "gpu", top=0).candidates
    shapes = [shape_of(c.layout) for c in found]
    fastest = min((c for c in found if c.tier == 1), key=lambda c: c.time.total)
    for shape, gen in PUBLISHED[cluster]:
        assert shape in shapes, shape
        theirs = found[shapes.index(shape)]
        assert theirs.tier == 1, (shape, shapes.index(shape) + 1, compare_current(found[0], theirs, None))
        if gen is None:
            continue
        lo = dataclasses.replace(theirs.layout, gen_tp=gen[0], gen_dp=gen[1], gen_ep=gen[2])
        paired, errors = judge(run, lo, theirs.split)
        assert paired is not None and paired.fits, (shape, gen, [str(e) for e in errors])
        assert paired.time.total <= fastest.time.high, (shape, gen, compare_current(fastest, paired, None))


# Published layouts with context parallelism, and what makes their stack run CP on Gated DeltaNet: megatron-core
# 0.18+ on GPU (0.16.1's transformer_config.py refuses it, "Gated delta net does not support context parallel for
# now"; `plan.megatron_core=0.18` plans such a machine), MindSpeed's context_parallel_algo on NPU. Sources:
# - NeMo RL 7ea279ab examples/configs/recipes/llm/grpo-qwen3.5-35ba3b-2n8g-megatron-ep16tp2cp2.yaml: 2 x 8 H100
#   (the suites' DGX H100), training TP2 CP2 EP16.
# - verl 1dda039b examples/ascend_extras/grpo_trainer/run_qwen3_5_122b_a10b_32k_megatron.sh: 4 x 16 A3 dies, TP2 PP4
#   CP4 EP16, override_transformer_config.context_parallel_algo=kvallgather_cp_algo.
CP_ALGO = "++megatron.override_transformer_config.context_parallel_algo=kvallgather_cp_algo"
CP_PUBLISHED = {
    "nemo_rl_35b_h100_cp2": (
        "35b",
        "gpu",
        ("hardware=h100", "parallel.nnodes=2", "plan.megatron_core=0.18"),
        (2, 1, 2, 16, 1),
    ),
    "verl_122b_a3_32k_cp4": ("122b", "npu", (CP_ALGO,), (2, 4, 4, 16, 1)),
}


@pytest.mark.parametrize("case", sorted(CP_PUBLISHED))
def test_published_context_parallel_layouts_land_in_the_first_tier_where_their_stack_runs_cp(case):
    """With what makes CP run on Gated DeltaNet set, the published CP layout is in the first tier; without it the
    same layout is refused on GPU (megatron-core 0.16) and, on NPU, ranked after the layouts that need no change."""
    model, device, enabling, shape = CP_PUBLISHED[case]
    cluster = [e for e in enabling if not e.startswith(("plan.megatron_core", CP_ALGO))]
    for extra, runs_cp in ((enabling, True), (cluster, False)):
        run, resolved = composed(model, device, *extra, "dry_run=true")
        found = search(run, device, top=0).candidates
        theirs = next((c for c in found if shape_of(c.layout) == shape), None)
        if runs_cp:
            assert theirs is not None and theirs.tier == 1, (case, theirs and compare_current(found[0], theirs, None))
        elif device == "gpu":
            assert theirs is None, case
        else:
            assert theirs is not None and theirs.actionable and theirs.tier == 2, case
            assert any("context_parallel_algo" in w for w in theirs.warnings)


def test_the_plan_command_plans_another_megatron_core_as_a_dry_run_does(tmp_path):
    """`plan` launches nothing: `plan.megatron_core` (refused for a launch on this machine's 0.16) plans a 0.18 one."""
    run = planner("model=35b", "device=gpu", "plan.megatron_core=0.18", "--top", "1", "--json", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert "plan.megatron_core" not in run.stderr and json.loads(run.stdout)[0]["fits"]


def test_the_step_time_of_the_plan_json_has_the_documented_keys_and_parts(tmp_path):
    run = planner("model=35b", "device=gpu", "--top", "2", "--json", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    rows = json.loads(run.stdout)
    text = DOCS.read_text()
    section = text.split("### `step_time` of `verl-qwen35 plan --json`", 1)[1].split("\n#", 1)[0]
    documented = {line.split("|")[1].strip(" `") for line in section.splitlines() if line.startswith("| `")}
    phases_section = text.split("\n## Step time\n", 1)[1].split("\n**", 1)[0]
    phases = [line.split("|")[1].strip(" `") for line in phases_section.splitlines() if line.startswith("| `")]
    for row in rows:
        step = row["step_time"]
        assert set(step) == documented
        assert list(step["phases"]) == phases == list(PHASES)
        assert step["seconds_per_step"] == pytest.approx(sum(step["phases"].values()), abs=0.05)
        assert all(isinstance(step[k], float) for k in ("low", "high"))
        assert step["low"] < step["seconds_per_step"] < step["high"]


def test_the_dry_run_plan_prints_the_step_time(tmp_path):
    run = subprocess.run(
        [sys.executable, "-m", "verl_qwen35", "model=122b", "device=npu", "dry_run=true"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("time "))
    for phase in (*PHASES, "tokens/s", " s a step ("):
        assert phase in lines[at]
    assert "data.max_response_length" in lines[at + 1] and "calibration" in lines[at + 1]
    # The hardware it is planned for, as the preset names it (122B NPU: verl's script ran on A3).
    assert any(line.startswith("hardware   Atlas 800T A3 (") and "61.27 GiB a device" in line for line in lines)
    # A fixed step count gives the run's device-hours, as the plan command prints them.
    fixed = subprocess.run(
        [sys.executable, "-m", "verl_qwen35", "model=122b", "device=npu", "dry_run=true",
         "trainer.total_training_steps=7"],
        cwd=tmp_path, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert fixed.returncode == 0, fixed.stderr
    assert "device-hours (" in fixed.stdout and ") for 7 steps" in fixed.stdout


def test_device_hours_count_the_steps_as_verl_does(tmp_path):
    """trainer.total_training_steps wins; otherwise rows of the readable train file // batch x epochs."""
    run = planner("model=35b", "device=gpu", "--top", "1", "--json", "trainer.total_training_steps=7", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    step = json.loads(run.stdout)[0]["step_time"]
    assert step["total_steps"] == 7
    assert step["device_hours"] == pytest.approx(7 * step["seconds_per_step"] * 8 / 3600, abs=0.06)  # to 0.1
    assert step["device_hours_low"] <= step["device_hours"] <= step["device_hours_high"]
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = {
        "prompt": [[{"role": "user", "content": "1+1?"}]] * 1000,
        "data_source": ["hiyouga/geometry3k"] * 1000,
        "reward_model": [{"style": "rule", "ground_truth": "2"}] * 1000,
    }  # the columns verl's RL dataset reads (tests/tiny_data.py), 1000 rows
    pq.write_table(pa.table(rows), tmp_path / "train.parquet")
    run = planner(
        "model=35b", "device=gpu", "--top", "1", "--json", f"data.train_files={tmp_path / 'train.parquet'}",
        "data.train_batch_size=64", "trainer.total_epochs=3", cwd=tmp_path,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)[0]["step_time"]["total_steps"] == 1000 // 64 * 3
