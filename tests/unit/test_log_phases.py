"""A job's log read for the phases before its first step and what broke (review/log_phases.py): the markers of
data/log_markers.yaml checked against the installed verl and Ray at the lines cited, and a log assembled from
the lines those packages print (each cited beside it) plus a real traceback from a Python that raised."""

import importlib.metadata
import os
import subprocess
import sys
from pathlib import Path

from verl_qwen35.config.yaml_files import load_mapping
from verl_qwen35.records.metrics import Metrics
from verl_qwen35.review.log_phases import HEAD_BYTES, MARKERS_FILE, read_logs
from verl_qwen35.review.trial_progress import trial_phases

# As a Slurm job's slurm-<id>.out holds them: the driver's own lines, then what Ray forwards from its actors,
# prefixed and coloured (ray/_private/worker.py print_worker_logs, 2403).
ESC = "\x1b"
LOG = [
    # verl/trainer/main_ppo.py:73
    "ray init kwargs: {'runtime_env': {'env_vars': {'TOKENIZERS_PARALLELISM': 'true'}}, 'num_cpus': None}",
    # ray/_private/worker.py:2027 (logged at 2038 when there is no dashboard), Ray's LOGGER_FORMAT
    "2026-05-01 10:00:03,120\tINFO worker.py:2038 -- Started a local Ray instance.",
    # verl/trainer/ppo/v1/trainer_base.py:330, verl's configure_verl_logging format, forwarded by Ray
    f"{ESC}[36m(TaskRunnerV1 pid=2211){ESC}[0m INFO:2026-05-01 10:03:35,480:actor and ref model engine initialized",
    # vLLM's GPUModelRunner.load_model (vllm/v1/worker/gpu_model_runner.py)
    f"{ESC}[36m(vLLMHttpServer pid=2690){ESC}[0m INFO 05-01 10:04:10 [gpu_model_runner.py:2602] Model loading took "
    "33.1 GiB and 9.8 seconds",
    # verl/workers/rollout/llm_server.py:487 (print)
    f"{ESC}[36m(TaskRunnerV1 pid=2211){ESC}[0m LLMServerManager: ['10.0.0.2:41877', '10.0.0.3:38211']",
    # verl/trainer/ppo/v1/trainer_base.py:863
    f"{ESC}[36m(TaskRunnerV1 pid=2211){ESC}[0m INFO:2026-05-01 10:05:02,004:Training from scratch",
    # verl/trainer/ppo/v1/trainer_base.py:394
    f"{ESC}[36m(TaskRunnerV1 pid=2211){ESC}[0m INFO:2026-05-01 10:05:12,950:all initialize finished, ready to fit",
    # a carriage return and an escape that would rewrite the terminal: shown, never obeyed
    f"(TaskRunnerV1 pid=2211) Training Progress:   0%|          | 0/4 [00:00<?, ?it/s]\r{ESC}]0;owned{ESC}\\",
    # torch's allocator message (c10/cuda/CUDACachingAllocator.cpp), as the actor worker raises it
    "(WorkerDict pid=3120, ip=10.0.0.3) torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 18.00 GiB. "
    "GPU 3 has a total capacity of 79.19 GiB of which 2.11 GiB is free.",
]


def raised_traceback() -> str:
    """A real traceback: a Python that raised, as a failed job leaves it on stderr."""
    code = "def update():\n    raise RuntimeError('update_actor failed on rank 3')\nupdate()\n"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 1 and done.stderr.startswith("Traceback (most recent call last):")
    return done.stderr


def test_each_pinned_marker_is_printed_at_the_line_cited():
    """Each marker's text is literal in the installed package's source at its line (when that version is here)."""
    site = Path(importlib.metadata.distribution("ray").locate_file(""))
    data = load_mapping(MARKERS_FILE)
    entries = [m for p in data["phases"] for m in p["markers"]] + data["failures"]
    checked = 0
    for entry in entries:
        if not entry.get("line"):
            assert entry.get("note"), f"{entry['text']}: a marker without a line says why"
            continue
        if importlib.metadata.version(entry["package"]) != entry["version"]:
            continue  # another version's lines (the verl 0.8 leg)
        line = (site / entry["file"]).read_text().splitlines()[entry["line"] - 1]
        text = entry["text"].strip()  # an exception's name is printed as its module's and class's
        assert text in line or f"class {text.rsplit('.', 1)[-1]}(" in line, f"{entry['file']}:{entry['line']}: {text}"
        checked += 1
    if importlib.metadata.version("verl") == "0.9.1":
        assert checked >= 12


def test_a_log_shows_the_phases_reached_and_what_broke(tmp_path):
    (tmp_path / "slurm-4242.out").write_text("\n".join(LOG) + "\n" + raised_traceback())
    reading = read_logs(tmp_path)
    assert reading.files == ["slurm-4242.out"]
    assert list(reading.phases) == [
        "Ray up",
        "weights loaded",
        "rollout engine starting",
        "rollout engine up",
        "from scratch",
        "ready to fit",
    ]
    assert reading.phases["weights loaded"].where() == "slurm-4242.out:3"
    broke = reading.broke()
    assert [h.what for h in broke] == ["out of device memory (CUDA)", "the last traceback's exception"]
    assert broke[0].shown.startswith("(WorkerDict pid=3120, ip=10.0.0.3) torch.OutOfMemoryError: CUDA out of memory")
    assert broke[1].shown == "RuntimeError: update_actor failed on rank 3"
    shown = reading.phases["ready to fit"].shown
    assert ESC not in shown and "\r" not in shown

    phases = trial_phases(Metrics(), {"name": "short", "steps": 4}, reading, None)
    assert phases.reached == "ready to fit" and phases.missing == []
    rows = {r["phase"]: r for r in phases.rows}
    assert rows["weights loaded"]["measured"] == "212 after Ray up"  # 10:00:03 -> 10:03:35
    assert rows["ready to fit"]["measured"] == "10 after from scratch"
    text = "\n".join(phases.lines())
    assert "broke      after ready to fit:" in text
    assert "slurm-4242.out:9: (WorkerDict pid=3120, ip=10.0.0.3) torch.OutOfMemoryError" in text


def test_a_line_is_shown_never_obeyed(tmp_path):
    (tmp_path / "job.out").write_text(LOG[7] + "\n")
    progress = read_logs(tmp_path).phases["ready to fit"]
    assert progress.shown.startswith("(TaskRunnerV1 pid=2211) Training Progress")
    assert progress.shown.endswith("\\r\\x1b]0;owned\\x1b\\")  # the title rewrite escaped, the carriage return too


def test_a_phase_without_its_line_before_one_seen_is_named_not_seen(tmp_path):
    """verl's logger.info lines vanish at VERL_LOGGING_LEVEL=WARN: the print()ed rollout line still shows."""
    (tmp_path / "job.out").write_text("\n".join(LOG[:2] + [LOG[4]]) + "\n")
    phases = trial_phases(Metrics(), {"name": "short"}, read_logs(tmp_path), None)
    assert phases.reached == "rollout engine up"
    assert phases.missing == ["weights loaded"]  # "rollout engine starting" is vLLM's and optional


def test_only_the_run_directorys_own_log_files_are_read_and_a_long_one_at_its_ends(tmp_path):
    elsewhere = tmp_path / "elsewhere.log"
    elsewhere.write_text(LOG[1] + "\n")
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "planted.log").symlink_to(elsewhere)  # a link: not followed
    os.mkfifo(run_dir / "fifo.out")  # never waited on
    with open(run_dir / "long.log", "w") as handle:  # start-up at the top, the failure at the bottom
        handle.write(LOG[4] + "\n")
        handle.truncate(3 * HEAD_BYTES)
        handle.seek(3 * HEAD_BYTES)
        handle.write("\n" + LOG[-1] + "\n")
    reading = read_logs(run_dir)
    assert reading.files == ["long.log"]
    assert list(reading.phases) == ["rollout engine up"]
    assert reading.failures[0].where() == "long.log (near its end)"
    assert any("bytes in the middle not read" in n for n in reading.notes)
