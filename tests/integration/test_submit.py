"""The submit group from the command line: dry runs write a script bash accepts, errors exit 2, sweeps submit per job.

Slurm itself is absent here: `sbatch` is missing, or a stand-in from tests/standin_slurm/
that only records the script it was given (STANDIN_QUEUE_ONLY=1, a queued job).
tests/system/test_submit_slurm.py runs the script; tests/system/test_submit_ray_job.py submits to a real Ray.
"""

import hashlib
import json
import os
import subprocess
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from tests.commands import STANDINS, verl_qwen35
from tests.ray_head import free_ports
from tests.tiny_data import write_geo3k_stub
from verl_qwen35.config.backends import backends
from verl_qwen35.installed import conf_dir
from verl_qwen35.records.launch import read_launch_file

# The script's settings block, evaluated by bash; prints one array's elements, one a line.
SHOW_ARRAY = 'source <(sed -n "/^RUN_DIR=/,/^set -euo pipefail/p" "$1"); printf "%s\\n" "${!2}"'


def array(script: Path, name: str) -> list[str]:
    done = subprocess.run(["bash", "-c", SHOW_ARRAY, "-", str(script), f"{name}[@]"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


@pytest.mark.parametrize(
    ("model", "device", "nodes", "device_args"),
    [("122b", "npu", 4, ['--resources={"NPU": 16}']), ("35b", "gpu", 1, ["--num-gpus=8"])],
)
def test_dry_run_writes_a_script_bash_accepts_for_the_presets_nodes(tmp_path, model, device, nodes, device_args):
    overrides = (f"device={device}", f"model={model}", "submit=slurm", "dry_run=true", "hydra.run.dir=run")
    run = verl_qwen35(tmp_path, *overrides)
    assert run.returncode == 0, run.stderr
    script = tmp_path / "run" / "job.sbatch"
    assert f"slurm      {script} ({nodes} node(s)" in run.stdout and "not submitted" in run.stdout
    assert subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True).returncode == 0
    text = script.read_text()
    assert f"#SBATCH --nodes={nodes}\n" in text and "#SBATCH --ntasks-per-node=1\n" in text
    assert ("#SBATCH --gpus-per-node=8\n" in text) is (device == "gpu")
    assert "ray start --block" in text and "--head" in text and '--address="$RAY_HEAD"' in text
    assert '-m verl_qwen35 relaunch "$RUN_DIR"' in text
    assert array(script, "RUN_DIR") == [str(tmp_path / "run")]
    assert array(script, "RAY_DEVICE_ARGS") == device_args
    launched = read_launch_file(tmp_path / "run" / "launch.yaml")[0]  # what the relaunch on the head reads
    assert launched.trainer.nnodes == nodes and launched.submit.backend == "slurm"


def test_container_mounts_and_setup_reach_the_script_quoted(tmp_path):
    image = "quay.io/ascend/verl:v0.8.0-cann9.0.0-torch2.9.0post2-a3-ubuntu22.04-py3.11-vllm"
    run = verl_qwen35(
        tmp_path,
        "device=npu",
        "model=35b",
        "submit=slurm",
        "dry_run=true",
        "hydra.run.dir=run",
        f"submit.container={image}",
        "submit.mounts=[/data:/data,/models:/models]",
        "submit.setup=['source /opt/venv/bin/activate']",
        "submit.partition=a3",
        "submit.cpus_per_node=64",
        "submit.python='uv run python'",
        "submit.sbatch=['--qos=high']",
    )
    assert run.returncode == 0, run.stderr
    script = tmp_path / "run" / "job.sbatch"
    assert array(script, "CONTAINER_ARGS") == [
        f"--container-image={image}",
        f"--container-mounts=/data:/data,/models:/models,{tmp_path / 'run'}:{tmp_path / 'run'}",
        "--container-name=verl_qwen35",
    ]
    assert array(script, "PYTHON") == ["uv", "run", "python"]
    text = script.read_text()
    assert "#SBATCH --partition=a3\n" in text and "#SBATCH --qos=high\n" in text
    assert "#SBATCH --cpus-per-task=64\n" in text
    assert "\nsource /opt/venv/bin/activate\n" in text and "\nexport HCCL_BUFFSIZE=300\n" in text
    assert "\nunset http_proxy\n" in text


def test_submit_choice_not_ours_is_refused(tmp_path):
    run = verl_qwen35(tmp_path, "submit=pbs", "dry_run=true")
    assert run.returncode == 2 and "submit=pbs is not a submit of verl_qwen35" in run.stderr
    assert "none, ray_job, slurm" in run.stderr and "Traceback" not in run.stderr


def test_every_shipped_submit_option_is_a_backend_the_preflight_knows_and_run_submits():
    """conf/submit/<name>.yaml sets backend: <name>, a module of run/submit/ declares it, each but `none` submits."""
    shipped = {path.stem: OmegaConf.load(path).backend for path in (conf_dir() / "submit").glob("*.yaml")}
    assert shipped == {name: name for name in backends()}
    assert [name for name, b in backends().items() if b.submit is None] == ["none"]


def test_submit_keys_are_part_of_the_printed_config(tmp_path):
    run = verl_qwen35(tmp_path, "submit=slurm", "submit.account=proj1", "--cfg", "job")
    assert run.returncode == 0, run.stderr
    submit = OmegaConf.create(run.stdout).submit
    assert submit.backend == "slurm" and submit.account == "proj1" and submit.ray.wait_timeout == 600


def test_without_sbatch_exits_2_naming_the_command_and_writes_nothing(tmp_path):
    data = write_geo3k_stub(tmp_path / "geo3k")
    run = verl_qwen35(tmp_path, "device=gpu", "model=35b", "submit=slurm", "hydra.run.dir=run", *data)
    assert run.returncode == 2, run.stderr
    assert "`sbatch` command is not on PATH" in run.stderr and "dry_run=true" in run.stderr
    assert "Traceback" not in run.stderr
    assert not (tmp_path / "run" / "job.sbatch").exists() and not (tmp_path / "run" / "launch.yaml").exists()


def test_sbatch_refusing_the_job_exits_2_naming_the_keys(tmp_path):
    failing = tmp_path / "bin"
    failing.mkdir()
    (failing / "sbatch").write_text("#!/bin/sh\necho 'sbatch: error: invalid partition specified: nope' >&2\nexit 1\n")
    (failing / "sbatch").chmod(0o755)
    data = write_geo3k_stub(tmp_path / "geo3k")
    run = verl_qwen35(
        tmp_path, "submit=slurm", "submit.partition=nope", "hydra.run.dir=run", *data, path=f"{failing}:/usr/bin:/bin"
    )
    assert run.returncode == 2, run.stderr
    assert "invalid partition specified: nope" in run.stderr and "submit.partition" in run.stderr
    assert "Traceback" not in run.stderr


def test_refused_config_is_never_submitted(tmp_path):
    log = tmp_path / "steps.tsv"
    data = write_geo3k_stub(tmp_path / "geo3k")
    run = verl_qwen35(
        tmp_path,
        "submit=slurm",
        "parallel.tp=3",
        "hydra.run.dir=run",
        *data,
        path=f"{STANDINS}:/usr/bin:/bin",
        STANDIN_LOG=str(log),
    )
    assert run.returncode == 2 and "REFUSED" in run.stderr
    assert not log.exists() and not (tmp_path / "run" / "job.sbatch").exists()


def test_sweep_submits_one_job_per_point_each_with_its_own_run(tmp_path):
    log = tmp_path / "steps.tsv"
    data = write_geo3k_stub(tmp_path / "geo3k")
    run = verl_qwen35(
        tmp_path,
        "-m",
        "device=gpu",
        "model=35b",
        "parallel.tp=1,2",
        "submit=slurm",
        f"hydra.sweep.dir={tmp_path}/sweep",
        *data,
        path=f"{STANDINS}:/usr/bin:/bin",
        STANDIN_LOG=str(log),
        STANDIN_QUEUE_ONLY="1",
    )
    assert run.returncode == 0, run.stderr
    scripts = [line.split("\t")[-1] for line in log.read_text().splitlines()]
    assert scripts == [f"{tmp_path}/sweep/0/job.sbatch", f"{tmp_path}/sweep/1/job.sbatch"]
    launched = [read_launch_file(tmp_path / "sweep" / job / "launch.yaml")[0] for job in ("0", "1")]
    assert [c.actor_rollout_ref.actor.megatron.tensor_model_parallel_size for c in launched] == [1, 2]
    assert [c.trainer.default_local_dir for c in launched] == [f"{tmp_path}/sweep/{job}/checkpoints" for job in "01"]
    names = [c.trainer.experiment_name for c in launched]
    assert len(set(names)) == 2
    for job, name in zip("01", names, strict=True):
        assert f"#SBATCH --job-name={name}\n" in (tmp_path / "sweep" / job / "job.sbatch").read_text()
    rows = json.loads((tmp_path / "sweep" / "summary.json").read_text())
    assert [(r["parallel.tp"], r["job_id"]) for r in rows] == [(1, "4201"), (2, "4202")]
    assert any(line.startswith("job ") and " job_id " in line for line in run.stdout.splitlines())  # table header


def test_ray_job_dry_run_contacts_nothing_and_records_an_absolute_checkpoint_dir(tmp_path):
    (port,) = free_ports(1)  # nothing listens there; a dry run must not try
    run = verl_qwen35(
        tmp_path, "submit=ray_job", f"submit.address=http://127.0.0.1:{port}", "dry_run=true", "hydra.run.dir=run"
    )
    assert run.returncode == 0, run.stderr
    pinned = hashlib.sha256((tmp_path / "run" / "launch.yaml").read_bytes()).hexdigest()
    assert (
        f"ray_job    http://127.0.0.1:{port}: python -m verl_qwen35 relaunch . --digest {pinned} "
        f"(working_dir {tmp_path / 'run'}" in run.stdout
    )
    assert "ray_job    dry run, not submitted" in run.stdout
    launched = read_launch_file(tmp_path / "run" / "launch.yaml")[0]
    assert launched.submit.backend == "ray_job"
    # verl's relative default is made absolute at launch (issue #8): the job resumes from the same place.
    assert launched.trainer.default_local_dir.startswith(f"{tmp_path}/checkpoints/")


def test_diff_compares_submit_options_key_by_key(capsys):
    from verl_qwen35.cli.diff import main as diff_main

    code = diff_main(["device=gpu submit=slurm", "device=gpu submit=slurm submit.partition=a100", "--format", "json"])
    assert code == 1
    diff = json.loads(capsys.readouterr().out)
    assert diff["changed"] == {"submit.partition": {"a": None, "b": "a100"}}
    assert not diff["added"] and not diff["removed"]


@pytest.mark.parametrize(
    ("backend", "override", "option"),
    [("slurm", "submit.slurm.chain=3", "chain"), ("kuberay", "submit.kuberay.apply=false", "apply")],
)
def test_a_backend_named_again_in_a_submit_key_is_answered_with_where_its_options_sit(cli, backend, override, option):
    """`submit=slurm` puts its options directly under `submit` (submit.chain, submit.partition): a user who
    writes `submit.slurm.chain` is told so, exit 2, before anything is written."""
    outcome = cli(f"submit={backend}", override, "dry_run=true")
    assert outcome.code == 2
    assert f"the options of submit={backend} sit directly under submit" in outcome.said
    assert option in outcome.said and "Traceback" not in outcome.said
    assert not any(Path.cwd().rglob("launch.yaml"))


@pytest.fixture
def drill(cli, tmp_path, monkeypatch):
    """`drill(*overrides)`: the resume drill's two jobs (conf/trial/drill_save, drill_resume) as one submitted sweep
    through the stand-in sbatch (a queued job: nothing runs); the stand-in's log lines, split at tabs."""
    log = tmp_path / "steps.tsv"
    monkeypatch.setenv("PATH", f"{STANDINS}:{os.environ['PATH']}")
    monkeypatch.setenv("STANDIN_LOG", str(log))
    monkeypatch.setenv("STANDIN_QUEUE_ONLY", "1")
    data = write_geo3k_stub(tmp_path / "geo3k")

    def run(*overrides: str):
        outcome = cli(
            "-m",
            "device=gpu",
            "model=35b",
            f"trial.checkpoint_dir={tmp_path}/drill",
            *data,
            f"hydra.sweep.dir={tmp_path}/sweep",
            *overrides,
        )
        return outcome, [line.split("\t") for line in log.read_text().splitlines()] if log.exists() else []

    return run


def test_the_drills_resume_job_is_queued_after_its_save_job(drill, tmp_path):
    run, calls = drill("trial=drill_save,drill_resume", "submit=slurm")
    assert run.code == 0, run.err[-3000:]
    assert calls == [
        ["sbatch", "", f"{tmp_path}/sweep/0/job.sbatch"],
        ["sbatch", "--dependency=afterok:4201", f"{tmp_path}/sweep/1/job.sbatch"],
    ]
    assert "#   sbatch --parsable --dependency=afterok:4201 job.sbatch" in (tmp_path / "sweep/1/job.sbatch").read_text()
    rows = json.loads((tmp_path / "sweep" / "summary.json").read_text())
    assert [(r["trial"], r["job_id"]) for r in rows] == [("drill_save", "4201"), ("drill_resume", "4202")]


def test_the_drills_resume_job_without_its_save_job_is_refused_and_a_dry_run_shows_the_dependency(drill, tmp_path):
    run, calls = drill("trial=drill_resume", "submit=slurm")
    assert run.code == 2 and calls == []
    assert "trial=drill_resume: the resume drill's second job resumes" in run.err and "not saved yet" in run.err
    run, calls = drill("trial=drill_save,drill_resume", "submit=slurm", "dry_run=true")
    assert run.code == 0 and calls == [], run.err[-3000:]
    script = tmp_path / "sweep" / "1" / "job.sbatch"
    assert f"to submit: sbatch --dependency=afterok:<job id of sweep job 0> {script}" in run.out
    assert "#   sbatch --parsable --dependency=afterok:<job id of sweep job 0> job.sbatch" in script.read_text()


def test_the_ray_backends_refuse_the_drills_resume_job_in_its_save_jobs_sweep(drill, tmp_path):
    run, _ = drill("trial=drill_save,drill_resume", "submit=ray_job", "dry_run=true")
    rows = json.loads((tmp_path / "sweep" / "summary.json").read_text())
    assert [(r["trial"], r["status"]) for r in rows] == [("drill_save", "ok"), ("drill_resume", "failed")]
    assert "trial=drill_resume: submit=ray_job has no job dependencies" in run.err
