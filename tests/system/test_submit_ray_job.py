"""submit=ray_job against a real local Ray head with its dashboard (Ray's Job Submission API).

The head runs in its own process from a clean environment, with its own temp dir and free
ports, and is stopped by signal (never `ray stop`). The job's entrypoint is our real
`python -m verl_qwen35 relaunch .`, through verl's real `main_ppo.main`, with only verl's
task runner replaced by the recording one of test_forwarding.py (tests/submit_recorder.py).
"""

import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.commands import REPO
from tests.ray_head import free_ports, separate_ray_head
from tests.tiny_data import write_geo3k_stub
from verl_qwen35.records.launch import read_launch_file

# Token authentication off on both sides, whether or not this machine has ~/.ray/auth_token.
AUTH = {"RAY_AUTH_MODE": "disabled"}


@pytest.fixture(scope="module")
def ray_head():
    """A head with its dashboard and 16 NPU (one A3 node, as the 35B NPU preset needs; verl's job
    checks it), from a clean environment (tests/ray_head.py); yields (dashboard URL, GCS port)."""
    with separate_ray_head({"PYTHONPATH": str(REPO)}, resources={"NPU": 16}, dashboard=True) as head:
        yield head.dashboard_url, head.gcs_port


def submit(tmp_path: Path, *overrides: str) -> subprocess.CompletedProcess[str]:
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("RAY_")}, "PYTHONPATH": str(REPO), **AUTH}
    return subprocess.run(
        [sys.executable, "-m", "verl_qwen35", "submit=ray_job", *overrides, f"hydra.run.dir={tmp_path / 'run'}"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_job_runs_the_relaunch_on_the_cluster_with_the_device_env(ray_head, tmp_path, monkeypatch):
    from ray.job_submission import JobStatus, JobSubmissionClient

    address, gcs_port = ray_head
    record = tmp_path / "received.json"
    python = tmp_path / "python-recording"
    python.write_text(f'#!/bin/bash\nexport RECORD_TO={record}\nexec {sys.executable} -m tests.submit_recorder "$@"\n')
    python.chmod(0o755)
    data = write_geo3k_stub(tmp_path / "geo3k")
    no_stack = "launch_checks.stack=false"  # this machine has no vLLM or CANN stack; the device check runs
    run = submit(
        tmp_path, "device=npu", "model=35b", f"submit.address={address}", f"submit.python={python}", no_stack, *data
    )
    assert run.returncode == 0, run.stderr
    job_id = next(line.split()[-1] for line in run.stdout.splitlines() if "submitted job" in line)
    assert f"ray job logs --address {address} --follow {job_id}" in run.stdout

    monkeypatch.setenv("RAY_AUTH_MODE", AUTH["RAY_AUTH_MODE"])  # this test process is a client too
    client = JobSubmissionClient(address)
    deadline = time.monotonic() + 150
    while (status := client.get_job_status(job_id)) not in {JobStatus.SUCCEEDED, JobStatus.FAILED, JobStatus.STOPPED}:
        assert time.monotonic() < deadline, f"job {job_id} still {status}:\n{client.get_job_logs(job_id)}"
        time.sleep(1)
    logs = client.get_job_logs(job_id)
    assert status == JobStatus.SUCCEEDED, logs

    info = client.get_job_info(job_id)
    pinned = hashlib.sha256((tmp_path / "run" / "launch.yaml").read_bytes()).hexdigest()
    assert info.entrypoint == f"{python} -m verl_qwen35 relaunch . --digest {pinned}"
    received = json.loads(record.read_text().splitlines()[-1])
    launched = read_launch_file(tmp_path / "run" / "launch.yaml")[0]
    assert received["config"]["trainer"]["experiment_name"] == launched.trainer.experiment_name
    assert received["environ"]["HCCL_BUFFSIZE"] == "300" and not received["environ"].get("http_proxy")
    ray_init = json.loads(Path(f"{record}.ray_init").read_text())
    assert ray_init["gcs_address"].endswith(f":{gcs_port}"), "verl's ray.init did not join the job's cluster"
    assert json.loads((tmp_path / "run" / "verdict.json").read_text())["job_id"] == job_id


def test_unreachable_address_exits_2_naming_the_key_and_submits_nothing(tmp_path):
    (port,) = free_ports(1)
    data = write_geo3k_stub(tmp_path / "geo3k")
    run = submit(tmp_path, "device=gpu", "model=35b", f"submit.address=http://127.0.0.1:{port}", *data)
    assert run.returncode == 2, run.stderr
    assert f"submit.address=http://127.0.0.1:{port}" in run.stderr and "Traceback" not in run.stderr
    assert not (tmp_path / "run" / "launch.yaml").exists()


def test_waiting_for_devices_the_cluster_lacks_ends_at_the_timeout_saying_what_is_there(ray_head, monkeypatch):
    """What job.sbatch runs on the head before the relaunch, against a head with 16 NPU and no GPU."""
    from verl_qwen35.run.submit.wait_for_ray import wait

    _, gcs_port = ray_head
    monkeypatch.setenv("RAY_AUTH_MODE", AUTH["RAY_AUTH_MODE"])
    problem = wait(f"127.0.0.1:{gcs_port}", "GPU", 8, 1, timeout=3)
    assert problem and problem.startswith("Ray reports 0/8 GPU on 1/1 node(s) after 3s"), problem
    assert "submit.ray.wait_timeout" in problem
    assert wait(f"127.0.0.1:{gcs_port}", "NPU", 16, 1, timeout=3) is None
