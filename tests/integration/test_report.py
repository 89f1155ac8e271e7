"""`verl-qwen35 report`: metrics written by verl's own Tracking backends (file, tensorboard), with names and values
from verl's own metric functions, read back, damaged, rotated, swept, and beside the plan's predictions."""

import io
import json
import os
import re
import statistics
import subprocess
import sys
from contextlib import redirect_stdout
from pathlib import Path

import pytest
import torch
from omegaconf import OmegaConf

from tests.commands import REPO
from verl_qwen35.config import compose
from verl_qwen35.review.quantities import QUANTITIES
from verl_qwen35.run.launch_record import write_launch_file

verl = pytest.importorskip("verl")
from verl import DataProto  # noqa: E402
from verl.trainer.ppo import core_algos  # noqa: E402
from verl.trainer.ppo.metric_utils import (  # noqa: E402
    compute_data_metrics,
    compute_throughout_metrics,
    compute_timing_metrics,
)
from verl.utils.metric import reduce_metrics  # noqa: E402
from verl.utils.py_functional import rename_dict  # noqa: E402
from verl.utils.tracking import Tracking  # noqa: E402
from verl.workers.config import ActorConfig  # noqa: E402

VERL_DIR = Path(verl.__file__).parent
PROMPT, RESPONSE, BATCH = 32, 128, 8


def step_metrics(step: int, step_seconds: float = 400.0, peak_gib: float = 40.0) -> dict[str, float]:
    """One step's metrics as verl's trainer builds them: a small batch through verl's own metric functions on CPU,
    the actor's update metrics through verl's policy loss and KL, renamed and reduced as the trainer does."""
    g = torch.Generator().manual_seed(step)
    lengths = torch.randint(RESPONSE // 4, RESPONSE + 1, (BATCH,), generator=g)
    mask = (torch.arange(RESPONSE)[None, :] < lengths[:, None]).long()
    attention = torch.cat([torch.ones(BATCH, PROMPT, dtype=torch.long), mask], 1)
    scores = torch.zeros(BATCH, RESPONSE)
    scores[torch.arange(BATCH), lengths - 1] = torch.rand(BATCH, generator=g)
    batch = DataProto.from_dict(
        tensors={
            "prompts": torch.zeros(BATCH, PROMPT, dtype=torch.long),
            "responses": torch.zeros(BATCH, RESPONSE, dtype=torch.long),
            "attention_mask": attention,
            "response_mask": mask,
            "token_level_scores": scores,
            "token_level_rewards": scores,
            "advantages": torch.randn(BATCH, RESPONSE, generator=g),
            "returns": torch.randn(BATCH, RESPONSE, generator=g),
        },
        meta_info={"global_token_num": attention.sum(-1).tolist()},
    )
    gen = 0.6 * step_seconds
    timing = {"gen": gen, "old_log_prob": 0.1 * step_seconds, "update_actor": 0.3 * step_seconds, "step": step_seconds}
    metrics = compute_data_metrics(batch, use_critic=False)
    metrics.update(compute_timing_metrics(batch, timing))
    metrics.update(compute_throughout_metrics(batch, timing, n_gpus=8))
    actor_cfg = ActorConfig(strategy="megatron", ppo_mini_batch_size=4, ppo_micro_batch_size_per_gpu=1, rollout_n=1)
    log_prob = torch.randn(BATCH, RESPONSE, generator=g)
    old = log_prob + 0.01 * torch.randn(BATCH, RESPONSE, generator=g)
    advantages = torch.randn(BATCH, RESPONSE, generator=g)
    _, pg = core_algos.compute_policy_loss_vanilla(old, log_prob, advantages, mask.float(), "token-mean", actor_cfg)
    kl = core_algos.agg_loss(core_algos.kl_penalty(log_prob, old, "low_var_kl"), mask.float(), "token-mean").item()
    # The engine worker's update metrics (workers/engine_workers.py _postprocess_output), one list entry a
    # mini-batch; the trainer prefixes them with actor/ and reduces them (max for a name holding "max").
    actor = {
        "kl_loss": [kl],
        **{k: [v] for k, v in pg.items()},
        "perf/max_memory_allocated_gb": [peak_gib - 1.0, peak_gib],
        "perf/max_memory_reserved_gb": [peak_gib + 5.0],
        "perf/cpu_memory_used_gb": [300.0],
    }
    metrics.update(reduce_metrics(rename_dict(actor, "actor/")))
    entropy = core_algos.agg_loss(torch.rand(BATCH, RESPONSE, generator=g), mask.float(), "token-mean")
    metrics["actor/entropy"] = entropy.item()
    return metrics


def log_steps(
    run_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
    steps: dict[int, dict[str, float]],
    backends: tuple[str, ...] = ("file",),
    metrics_file: Path | None = None,
    tensorboard: Path | None = None,
) -> None:
    """Log through verl's real Tracking, its file logger at <run_dir>/metrics.jsonl as the logger contract puts it."""
    run_dir.mkdir(parents=True, exist_ok=True)
    monkeypatch.setenv("VERL_FILE_LOGGER_PATH", str(metrics_file or run_dir / "metrics.jsonl"))
    monkeypatch.setenv("TENSORBOARD_DIR", str(tensorboard or run_dir / "tensorboard"))
    with redirect_stdout(io.StringIO()):  # verl prints where it logs; the report's own output is what tests read
        tracking = Tracking(project_name="report", experiment_name="test", default_backend=list(backends))
        for step, data in steps.items():
            tracking.log(data=data, step=step)
        for logger in tracking.logger.values():
            if hasattr(logger, "finish"):
                logger.finish()


def launched(run_dir: Path, monkeypatch: pytest.MonkeyPatch, *overrides: str):
    """A launch record as a launch writes it (run/launch_record.py write_launch_file), for a preset."""
    run_dir.mkdir(parents=True, exist_ok=True)
    monkeypatch.chdir(run_dir)
    cfg = compose(["model=35b", "device=gpu", *overrides])
    OmegaConf.resolve(cfg)
    write_launch_file(cfg, run_dir)
    return cfg


def report_json(cli, *args) -> dict:
    done = cli("report", *map(str, args), "--json")
    assert done.code == 0, done.err
    return json.loads(done.out)


def not_blank(path: Path, width: int, height: int) -> None:
    from matplotlib.image import imread

    pixels = imread(path)[..., :3]
    assert pixels.shape[:2] == (height, width), pixels.shape
    ink = (pixels < 0.9).any(axis=-1).mean()
    assert 0.005 < ink < 0.6, f"{path}: {ink:.3f} of the pixels drawn"
    # Axes, ticks and text are black or grey: coloured pixels are the data lines.
    coloured = (pixels.max(axis=-1) - pixels.min(axis=-1) > 0.3).mean()
    assert coloured > 0.001, f"{path}: no line drawn ({coloured:.4f} coloured)"


# -- one run -------------------------------------------------------------------------------------------------


@pytest.mark.each_verl
def test_a_run_logged_by_verls_file_backend_is_summed_up_beside_the_plans_predictions(cli, tmp_path, monkeypatch):
    plan = cli("model=35b", "device=gpu", "dry_run=true", f"hydra.run.dir={tmp_path / 'plan'}")
    assert plan.code == 0, plan.err
    planned_seconds = float(re.search(r"time\s+~(\d+) s a step", plan.out).group(1))
    planned_train = float(re.search(r"memory\s+train ([\d.]+) GiB", plan.out).group(1))
    run = tmp_path / "run"
    launched(run, monkeypatch)
    # Step time at the prediction (within the band), the training peak at 3x the prediction (far from it).
    peak = 3 * (planned_train - 4.0)  # conf/hardware/h100.yaml reserved_gib 4, no HCCL buffers on GPU
    steps = {s: step_metrics(s, planned_seconds * (2.0 if s == 1 else 1.0), peak) for s in range(1, 7)}
    log_steps(run, monkeypatch, steps)
    text = cli("report", str(run))
    assert text.code == 0, text.err
    assert "far from the prediction: training peak (torch)" in text.out and "3.00 FAR" in text.out
    (plot,) = [Path(line.split(maxsplit=1)[1]) for line in text.out.splitlines() if line.startswith("plot")]
    assert plot == run / "report" / "report.png"
    not_blank(plot, 1200, 1300)
    data = report_json(cli, run, "--no-plots")
    q = data["quantities"]
    assert q["reward"]["key"] == "critic/score/mean"
    assert q["reward"]["last"] == pytest.approx(steps[6]["critic/score/mean"])
    assert q["kl"]["key"] == "actor/kl_loss" and q["kl"]["first"] == pytest.approx(steps[1]["actor/kl_loss"])
    assert q["entropy"]["key"] == "actor/entropy" and q["tokens_per_second"]["key"] == "perf/throughput"
    lengths = [steps[s]["response_length/mean"] for s in range(2, 7)]
    assert q["response_length"]["median"] == pytest.approx(statistics.median(lengths)), "step 1 is warm-up"
    assert data["steps"] == {"first": 1, "last": 6, "count": 6, "warm_up": [1]}
    by = {p["name"]: p for p in data["predictions"]}
    step, train = by["step time"], by["training peak (torch)"]
    assert round(step["predicted"]) == planned_seconds and step["measured"] == pytest.approx(planned_seconds)
    assert step["ratio"] == pytest.approx(planned_seconds / step["predicted"]) and not step["far"]
    assert train["predicted"] + 4.0 == pytest.approx(planned_train, abs=0.06) and train["measured"] == peak
    assert train["far"] and train["key"] == "actor/perf/max_memory_allocated_gb"
    assert by["rollout peak (device)"]["measured"] is None


def test_a_half_written_last_line_is_skipped_with_a_note(cli, tmp_path, monkeypatch):
    log_steps(tmp_path, monkeypatch, {s: step_metrics(s) for s in (1, 2, 3)})
    path = tmp_path / "metrics.jsonl"
    raw = path.read_bytes()
    path.write_bytes(raw[: len(raw) - 40])  # the writer stopped inside step 3's record
    data = report_json(cli, tmp_path, "--no-plots")
    assert data["steps"]["last"] == 2 and data["steps"]["count"] == 2
    assert any("half-written" in n for n in data["notes"])


def test_a_damaged_line_in_the_middle_is_skipped_and_counted(cli, tmp_path, monkeypatch):
    log_steps(tmp_path, monkeypatch, {s: step_metrics(s) for s in (1, 2, 3, 4)})
    path = tmp_path / "metrics.jsonl"
    lines = path.read_bytes().split(b"\n")
    lines[1] = lines[1][: len(lines[1]) // 2] + b"\x00\xff garbage"
    path.write_bytes(b"\n".join(lines))
    done = cli("report", str(tmp_path), "--no-plots")
    assert done.code == 0, done.err
    assert "metrics.jsonl: 1 damaged line(s) skipped (line 2)" in done.out
    assert "1..4, 3 step(s)" in done.out


def test_a_diverged_runs_huge_values_keep_the_table_readable(cli, tmp_path, monkeypatch):
    log_steps(tmp_path, monkeypatch, {s: {**step_metrics(s), "actor/kl_loss": 1e30 * s} for s in (1, 2, 3)})
    done = cli("report", str(tmp_path), "--no-plots")
    assert done.code == 0, done.err
    (kl,) = [line for line in done.out.splitlines() if line.startswith("KL ")]
    assert "3e+30" in kl and len(kl) < 200


def test_rotated_files_are_read_in_order_and_a_resume_replaces_the_steps_it_recomputed(cli, tmp_path, monkeypatch):
    first = {s: step_metrics(s, 400.0) for s in range(1, 6)}
    log_steps(tmp_path, monkeypatch, first)
    os.rename(tmp_path / "metrics.jsonl", tmp_path / "metrics.1.jsonl")  # what each start does (the contract)
    # Resumed from the checkpoint of step 3: verl's val_before_train record at step 3, then steps 4.. again.
    second = {3: {"val-core/reward/mean@1": 0.5}, **{s: step_metrics(s + 100, 500.0) for s in range(4, 9)}}
    log_steps(tmp_path, monkeypatch, second)
    data = report_json(cli, tmp_path, "--no-plots")
    assert data["steps"] == {"first": 1, "last": 8, "count": 8, "warm_up": [1, 4]}
    step_time = data["quantities"]["step_time"]
    assert step_time["last"] == 500.0 and step_time["median"] == 500.0  # steps 2, 3 at 400; 5..8 at 500
    reward = data["quantities"]["reward"]
    assert reward["first"] == pytest.approx(first[1]["critic/score/mean"])
    assert reward["steps"] == 8, "the validation record at step 3 keeps that step's training metrics"
    assert data["logs"][:2] == ["metrics.1.jsonl (5 record(s))", "metrics.jsonl (6 record(s))"]


def test_rotated_files_are_ordered_by_their_number_not_their_name(cli, tmp_path, monkeypatch):
    for k, seconds in ((2, 200.0), (10, 1000.0)):
        log_steps(tmp_path, monkeypatch, {1: step_metrics(1, seconds)})
        os.rename(tmp_path / "metrics.jsonl", tmp_path / f"metrics.{k}.jsonl")
    data = report_json(cli, tmp_path, "--no-plots")
    assert data["quantities"]["step_time"]["last"] == 1000.0, "metrics.10.jsonl is later than metrics.2.jsonl"


@pytest.mark.each_verl
def test_tensorboard_events_written_by_verl_are_read_where_the_launch_record_says(cli, tmp_path, monkeypatch):
    events = tmp_path / "run" / "logs" / "tb"
    launched(tmp_path / "run", monkeypatch, f"++env.set.TENSORBOARD_DIR={events}")
    steps = {s: step_metrics(s, 100.0 + s) for s in (1, 2, 3)}
    log_steps(tmp_path / "run", monkeypatch, steps, backends=("tensorboard",), tensorboard=events)
    assert not (tmp_path / "run" / "metrics.jsonl").exists()
    data = report_json(cli, tmp_path / "run", "--no-plots")
    assert data["logs"] == ["tb/ (tensorboard, 3 step(s))"]
    q = data["quantities"]
    assert q["step_time"]["last"] == 103.0 and q["step_time"]["median"] == 102.5
    # SummaryWriter keeps float32.
    assert q["kl"]["last"] == pytest.approx(steps[3]["actor/kl_loss"], rel=1e-6)
    assert {p["name"] for p in data["predictions"]} >= {"step time", "training peak (torch)"}


def test_the_file_logger_path_in_the_launch_record_is_followed(cli, tmp_path, monkeypatch):
    elsewhere = tmp_path / "run" / "logs" / "steps.jsonl"
    elsewhere.parent.mkdir(parents=True)
    launched(tmp_path / "run", monkeypatch, f"++env.set.VERL_FILE_LOGGER_PATH={elsewhere}")
    log_steps(tmp_path / "run", monkeypatch, {1: step_metrics(1), 2: step_metrics(2)}, metrics_file=elsewhere)
    data = report_json(cli, tmp_path / "run", "--no-plots")
    assert data["logs"] == ["steps.jsonl (2 record(s))"] and data["steps"]["count"] == 2


def test_a_run_directory_without_launch_yaml_gets_the_summary_and_a_note(cli, tmp_path, monkeypatch):
    log_steps(tmp_path, monkeypatch, {1: step_metrics(1), 2: step_metrics(2)})
    data = report_json(cli, tmp_path, "--no-plots")
    assert data["predictions"] == [] and any("no launch.yaml" in n for n in data["notes"])
    assert data["quantities"]["reward"]["steps"] == 2


def test_a_run_still_writing_its_first_step_is_answered(cli, tmp_path, monkeypatch):
    log_steps(tmp_path, monkeypatch, {1: step_metrics(1)})
    path = tmp_path / "metrics.jsonl"
    path.write_bytes(path.read_bytes()[:100])
    done = cli("report", str(tmp_path))
    assert done.code == 2 and "no step logged completely yet" in done.err and "half-written" in done.err


# -- a sweep -------------------------------------------------------------------------------------------------


def test_a_sweep_compares_its_runs_a_row_and_a_line_each(cli, tmp_path, monkeypatch):
    sweep = tmp_path / "sweep"
    done = subprocess.run(
        [sys.executable, "-m", "verl_qwen35", "-m", "device=gpu", "model=35b", "parallel.tp=1,2", "dry_run=true",
         f"hydra.sweep.dir={sweep}"],
        cwd=tmp_path, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(REPO)},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert (sweep / "multirun.yaml").is_file() and (sweep / "summary.json").is_file()
    for job, tp in ((0, 1), (1, 2)):  # what a launched sweep job adds to its directory
        launched(sweep / str(job), monkeypatch, f"parallel.tp={tp}")
        log_steps(sweep / str(job), monkeypatch, {s: step_metrics(s + 10 * job, 300.0 + 100 * job) for s in (1, 2, 3)})
    text = cli("report", str(sweep), "--out", str(tmp_path / "plots"))
    assert text.code == 0, text.err
    rows = [line for line in text.out.splitlines() if line.startswith("parallel.tp=")]
    assert [r.split()[0] for r in rows] == ["parallel.tp=1", "parallel.tp=2"]
    assert rows[0].split()[1] == "1..3" and "300" in rows[0] and "400" in rows[1]
    plots = [Path(line.split(maxsplit=1)[1]) for line in text.out.splitlines() if line.startswith("plot")]
    assert {p.name for p in plots} >= {"reward.png", "kl.png", "step_time.png", "memory.png"}
    for plot in plots:
        assert plot.parent == tmp_path / "plots"
        not_blank(plot, 900, 500)
    data = report_json(cli, sweep, "--no-plots")
    assert [r["name"] for r in data["runs"]] == ["parallel.tp=1", "parallel.tp=2"]
    assert [r["quantities"]["step_time"]["median"] for r in data["runs"]] == [300.0, 400.0]


def test_a_sweep_of_dry_runs_says_which_logger_to_turn_on(cli, tmp_path):
    done = cli("-m", "device=gpu", "model=35b", "parallel.tp=1,2", "dry_run=true", f"hydra.sweep.dir={tmp_path / 's'}")
    assert done.code == 0, done.err
    answer = cli("report", str(tmp_path / "s"))
    assert answer.code == 2 and "no job of this sweep logged metrics" in answer.err
    assert "logger=[console,file]" in answer.err


# -- bad input: one message, exit 2 --------------------------------------------------------------------------


def test_a_path_that_is_not_a_directory_is_refused(cli, tmp_path):
    (tmp_path / "metrics.jsonl").write_text("{}\n")
    for target, said in ((tmp_path / "metrics.jsonl", "is not a directory"), (tmp_path / "gone", "does not exist")):
        done = cli("report", str(target))
        assert done.code == 2 and said in done.err and "Traceback" not in done.err
        assert done.err.count("\n") == 1


def test_a_dry_runs_directory_says_which_logger_to_turn_on(cli, tmp_path):
    run = tmp_path / "dry"
    assert cli("model=35b", "device=gpu", "dry_run=true", f"hydra.run.dir={run}").code == 0
    done = cli("report", str(run))
    assert done.code == 2 and done.err.count("\n") == 1
    assert "a dry run: nothing was launched" in done.err and "logger=[console,file]" in done.err


def test_a_launched_run_without_a_file_logger_names_what_it_logged_to(cli, tmp_path, monkeypatch):
    launched(tmp_path, monkeypatch)
    done = cli("report", str(tmp_path))
    assert done.code == 2 and "this run logged to trainer.logger=['console'" in done.err
    assert "logger=[console,file]" in done.err


@pytest.mark.parametrize(
    "content",
    [b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 8, b"step,reward\n1,0.5\n2,0.6\n", b'["step", 1]\n{"step": "one"}\n'],
    ids=["binary", "csv", "json-but-not-records"],
)
def test_a_metrics_file_that_is_not_jsonl_is_refused(cli, tmp_path, content):
    (tmp_path / "metrics.jsonl").write_bytes(content)
    done = cli("report", str(tmp_path))
    assert done.code == 2 and "not verl's file-logger output" in done.err and done.err.count("\n") == 1


def test_a_metrics_path_that_is_a_directory_is_refused(cli, tmp_path):
    (tmp_path / "metrics.jsonl").mkdir()
    done = cli("report", str(tmp_path))
    assert done.code == 2 and "not a regular file" in done.err


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a mode-000 file")
def test_an_unreadable_metrics_file_is_refused(cli, tmp_path, monkeypatch):
    log_steps(tmp_path, monkeypatch, {1: step_metrics(1)})
    (tmp_path / "metrics.jsonl").chmod(0)
    done = cli("report", str(tmp_path))
    assert done.code == 2 and "cannot be read" in done.err


def test_without_matplotlib_the_plots_extra_is_named_and_no_plots_still_works(tmp_path, monkeypatch):
    log_steps(tmp_path / "run", monkeypatch, {1: step_metrics(1), 2: step_metrics(2)})
    shadow = tmp_path / "shadow" / "matplotlib"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError(\"No module named 'matplotlib'\")\n")
    env = {**os.environ, "PYTHONPATH": f"{shadow.parent}:{REPO}"}

    def report(*args: str) -> subprocess.CompletedProcess:
        command = [sys.executable, "-m", "verl_qwen35", "report", str(tmp_path / "run"), *args]
        return subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, env=env)

    refused = report()
    assert refused.returncode == 2 and "pip install 'verl-qwen35[plots]'" in refused.stderr
    assert refused.stdout == "" and not (tmp_path / "run" / "report").exists()
    summary = report("--no-plots")
    assert summary.returncode == 0 and "critic/score/mean" in summary.stdout, summary.stderr


def test_a_directory_without_metrics_says_so_before_asking_for_matplotlib(cli, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # not installed: `import matplotlib` raises ImportError
    done = cli("report", str(tmp_path))
    assert done.code == 2 and "no metrics" in done.err and "matplotlib" not in done.err


def test_event_files_tensorboard_cannot_read_are_a_note_beside_the_file_logger_else_the_answer(cli, tmp_path):
    events = tmp_path / "tensorboard"
    events.mkdir()
    (events / "events.out.tfevents.1796139421.host.1.0").write_bytes(bytes(range(256)) * 20)
    done = cli("report", str(tmp_path), "--no-plots")
    assert done.code == 2 and "hold no scalar tensorboard can read" in done.err and done.err.count("\n") == 1


def test_without_tensorboard_its_events_are_named_with_what_to_install(tmp_path, monkeypatch):
    run = tmp_path / "run"
    log_steps(run, monkeypatch, {1: step_metrics(1)}, backends=("tensorboard",))
    shadow = tmp_path / "shadow" / "tensorboard"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError(\"No module named 'tensorboard'\")\n")
    env = {**os.environ, "PYTHONPATH": f"{shadow.parent}:{REPO}"}
    command = [sys.executable, "-m", "verl_qwen35", "report", str(run), "--no-plots"]
    only_events = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, env=env)
    assert only_events.returncode == 2 and "pip install tensorboard" in only_events.stderr
    log_steps(run, monkeypatch, {1: step_metrics(1)})
    beside = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, env=env)
    assert beside.returncode == 0 and "note       " in beside.stdout and "pip install tensorboard" in beside.stdout


def test_a_plot_directory_that_cannot_be_made_is_answered(cli, tmp_path, monkeypatch):
    log_steps(tmp_path, monkeypatch, {1: step_metrics(1)})
    (tmp_path / "blocked").write_text("a file where the directory would go")
    done = cli("report", str(tmp_path), "--out", str(tmp_path / "blocked" / "plots"))
    assert done.code == 2 and "--out DIR" in done.err and done.err.count("\n") == 1


# -- the names are verl's --------------------------------------------------------------------------------------


@pytest.mark.each_verl
@pytest.mark.parametrize("metric,source", [pair for q in QUANTITIES for pair in q.keys], ids=lambda v: str(v))
def test_each_metric_the_report_reads_is_logged_by_the_verl_code_it_cites(metric, source):
    """The installed verl's file logs the name: literally, as `actor/` + its worker-side name (the trainer's
    rename_dict), or as `timing_s/` + a marked_timer name (compute_timing_metrics); the cited function exists."""
    path, function = source.split()[:2]
    text = (VERL_DIR / path).read_text()
    assert re.search(rf"def {function}\b", text), f"verl/{path} has no {function}"
    if metric.startswith("timing_s/"):
        assert 'f"timing_s/{name}"' in text
        trainer = (VERL_DIR / "trainer/ppo/ray_trainer.py").read_text()
        assert f'marked_timer("{metric.removeprefix("timing_s/")}"' in trainer
        return
    if f'"{metric}"' not in text:
        assert f'"{metric.removeprefix("actor/")}"' in text, f"verl/{path} logs no {metric}"
        trainer = (VERL_DIR / "trainer/ppo/ray_trainer.py").read_text()
        assert 'rename_dict(actor_output, "actor/")' in trainer
