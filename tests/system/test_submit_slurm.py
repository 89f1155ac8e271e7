"""submit=slurm, run for real on this machine: our command writes job.sbatch and calls `sbatch`.

`sbatch`, `srun` and `scontrol` are stand-ins (tests/standin_slurm/) that run each step
here, on nodes all named localhost, and record the steps. Everything else is real: bash
runs the generated script, which starts a real Ray head (and a worker) on 127.0.0.1 with
its own temp dir and free ports, waits for every device, and runs our real
`python -m verl_qwen35 relaunch` through verl's real `main_ppo.main`, with only verl's task
runner replaced by the recording one of test_forwarding.py (tests/submit_recorder.py).
"""

import hashlib
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.commands import REPO, STANDINS
from tests.ray_head import free_ports, processes_using
from tests.tiny_data import write_geo3k_stub

# Ray's fixed default ports, and per node the ones it would otherwise pick at random.
PER_NODE_PORTS = (
    "node-manager-port",
    "object-manager-port",
    "runtime-env-agent-port",
    "dashboard-agent-grpc-port",
    "dashboard-agent-listen-port",
    "metrics-export-port",
)


def ray_args(ports: list[int]) -> str:
    """`ray start` options for one node on a shared machine: its own ports, a small object store."""
    options = [f"--{name}={port}" for name, port in zip(PER_NODE_PORTS, ports, strict=False)]
    options += [f"--worker-port-list={','.join(map(str, ports[len(PER_NODE_PORTS) :]))}"]
    options += ["--object-store-memory=100000000"]
    return "[" + ",".join(f"'{option}'" for option in options) + "]"


def in_order(text: str, *parts: str) -> None:
    """Each part occurs in `text` after the one before it."""
    at = 0
    for part in parts:
        found = text.find(part, at)
        assert found >= 0, f"{part!r} missing after position {at} of:\n{text}"
        at = found + len(part)


class Cluster:
    """A temp dir, ports and the stand-ins for one submission; the overrides that point a run at them."""

    def __init__(self, tmp_path: Path) -> None:
        self.tmp = tmp_path
        self.temp_dir = tempfile.mkdtemp(prefix="r", dir="/tmp")  # short: Ray's unix sockets live here
        self.steps = tmp_path / "steps.tsv"
        self.record = tmp_path / "received.json"
        python = tmp_path / "python-recording"
        python.write_text(
            f'#!/bin/bash\nexport RECORD_TO={self.record}\nexec {sys.executable} -m tests.submit_recorder "$@"\n'
        )
        python.chmod(0o755)
        port, dashboard, client, *rest = free_ports(3 + 2 * 16)
        self.port = port
        self.overrides = [
            "submit=slurm",
            f"submit.python={python}",
            f"submit.ray.port={port}",
            f"submit.ray.dashboard_port={dashboard}",
            f"submit.ray.client_server_port={client}",
            f"submit.ray.temp_dir={self.temp_dir}",
            # Two Ray nodes on a loaded 2-core CI machine: once took longer than 90 s.
            "submit.ray.wait_timeout=300",
            # This machine has no vLLM or CUDA/CANN stack; the relaunch's device check does run,
            # against the job's Ray and the devices its `ray start` advertises.
            "launch_checks.stack=false",
            f"submit.ray.head_args={ray_args(rest[:16])}",
            f"submit.ray.worker_args={ray_args(rest[16:])}",
            *write_geo3k_stub(tmp_path / "geo3k"),
        ]
        self.env = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("RAY_", "SLURM_"))},
            "PATH": f"{STANDINS}:{Path(sys.executable).parent}:/usr/bin:/bin",
            "PYTHONPATH": str(REPO),
            "STANDIN_LOG": str(self.steps),
        }

    def run(self, *command: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
        return subprocess.run(command, cwd=self.tmp, env=self.env, capture_output=True, text=True, timeout=timeout)

    def submit(self, *overrides: str, run_dir: str = "run") -> subprocess.CompletedProcess[str]:
        return self.run(
            sys.executable, "-m", "verl_qwen35", *overrides, *self.overrides, f"hydra.run.dir={self.tmp / run_dir}"
        )

    def step_lines(self) -> list[list[str]]:
        return [line.split("\t") for line in self.steps.read_text().splitlines()]


@pytest.fixture
def cluster(tmp_path):
    cluster = Cluster(tmp_path)
    yield cluster
    leftover = processes_using(cluster.temp_dir)
    for pid in leftover:  # only after a failed test: our own Ray, found by its temp dir
        os.kill(pid, signal.SIGKILL)
    shutil.rmtree(cluster.temp_dir, ignore_errors=True)
    assert not leftover, f"Ray processes outlived the job: {list(leftover.values())}"


def test_sbatch_script_starts_ray_waits_for_every_device_relaunches_and_stops_ray(cluster):
    run = cluster.submit("device=gpu", "model=35b", "parallel.nnodes=2", "parallel.devices_per_node=4")
    assert run.returncode == 0, run.stderr
    run_dir = cluster.tmp / "run"
    job_id = next(line.split()[-1] for line in run.stdout.splitlines() if "submitted job" in line)
    log = run_dir / f"slurm-{job_id}.out"
    assert f"log        {log}" in run.stdout
    output = log.read_text()
    assert "run finished" in output, output  # sbatch only submits: the job's own log says whether it ran

    steps = cluster.step_lines()
    commands = [step[-1] for step in steps]
    assert steps[0] == ["sbatch", "", str(run_dir / "job.sbatch")]
    assert commands[1].startswith("show hostnames localhost,localhost")
    head, *started, relaunch = commands[2:]
    assert head.startswith("ray start --block") and "--head" in head and "--num-gpus=4" in head
    assert f"--num-cpus={os.cpu_count()}" in head  # the stand-in's exclusive node: all of this machine
    # The worker's and the waiter's steps start in the background together; either may log first.
    (worker,) = [c for c in started if c.startswith("ray start --block")]
    (waiter,) = [c for c in started if "-m verl_qwen35.run.submit.wait_for_ray" in c]
    assert f"--address=127.0.0.1:{cluster.port}" in worker and "--num-gpus=4" in worker
    assert "--count 8 --nodes 2" in waiter
    pinned = hashlib.sha256((run_dir / "launch.yaml").read_bytes()).hexdigest()
    assert relaunch.endswith(f"-m verl_qwen35 relaunch {run_dir} --digest {pinned}")
    assert all(step[1] == "localhost" for step in steps[2:])

    in_order(
        output,
        "Ray head on localhost",
        "Ray worker 1 on localhost",
        "waiting until Ray reports 8 GPU on 2 node(s)",
        "Ray reports 8/8 GPU on 2/2 node(s)",
        "relaunching",
        "run finished",
        "stopping Ray on 2 node(s)",
        "Ray stopped on every node",
        "job exits with status 0",
    )

    record = json.loads(cluster.record.read_text().splitlines()[-1])
    assert record["config"]["trainer"]["nnodes"] == 2 and record["config"]["trainer"]["n_gpus_per_node"] == 4
    ray_init = json.loads(Path(f"{cluster.record}.ray_init").read_text())  # Ray names this host by its own IP
    assert ray_init["gcs_address"].endswith(f":{cluster.port}"), "verl did not run on the job's Ray"
    assert record["environ"]["CUDA_DEVICE_MAX_CONNECTIONS"] == "1"


def test_a_failing_run_fails_the_job_and_still_stops_ray(cluster):
    """A dry run writes job.sbatch; a record others can write (its bytes unchanged) makes the relaunch on the head
    exit 2."""
    run = cluster.submit("device=npu", "model=35b", "dry_run=true")
    assert run.returncode == 0, run.stderr
    assert "dry run, not submitted" in run.stdout and not cluster.steps.exists(), "a dry run must not call sbatch"
    script = cluster.tmp / "run" / "job.sbatch"
    (cluster.tmp / "run" / "launch.yaml").chmod(0o666)

    done = cluster.run("sbatch", "--parsable", str(script))
    assert done.returncode == 0, done.stderr  # sbatch queues; the job's own status is in its log
    output = (cluster.tmp / "run" / f"slurm-{done.stdout.split(';')[0]}.out").read_text()
    commands = [step[-1] for step in cluster.step_lines()]
    assert commands[2].startswith("ray start --block") and '--resources={"NPU": 16}' in commands[2]
    assert "-m verl_qwen35 relaunch " + str(cluster.tmp / "run") + " --digest " in commands[-1]
    in_order(
        output,
        "Ray reports 16/16 NPU on 1/1 node(s)",
        "launch.yaml can be written by its group and others (mode 666)",
        "stopping Ray on 1 node(s)",
        "Ray stopped on every node",
        "job exits with status 2",
    )
    assert "run finished" not in output
    assert not cluster.record.exists()


def test_a_record_changed_after_submission_is_refused_before_ray_starts(cluster):
    """job.sbatch pins launch.yaml's sha256: an edited record (a new LD_PRELOAD) stops the job, naming the file."""
    run = cluster.submit("device=gpu", "model=35b", "dry_run=true")
    assert run.returncode == 0, run.stderr
    record = cluster.tmp / "run" / "launch.yaml"
    record.write_text(record.read_text().replace("set:\n", "set:\n      LD_PRELOAD: /tmp/evil.so\n", 1))
    assert "LD_PRELOAD: /tmp/evil.so" in record.read_text()

    done = cluster.run("sbatch", "--parsable", str(cluster.tmp / "run" / "job.sbatch"))
    assert done.returncode == 0, done.stderr
    output = (cluster.tmp / "run" / f"slurm-{done.stdout.split(';')[0]}.out").read_text()
    assert f"{record} changed since it was submitted" in output and "nothing was started" in output
    assert [step[0] for step in cluster.step_lines()] == ["sbatch"], "no Ray step, no relaunch"
    assert not cluster.record.exists()


# In place of the run on the head: wait until the dashboard answers on an address, then try both, and ask
# the node's dashboard agent (it serves Ray's Jobs API too: /api/job_agent/jobs/) without a token.
PROBE = """
import json, os, socket, sys, time, urllib.error, urllib.request
port, agent, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
node = os.environ["RAY_ADDRESS"].rpartition(":")[0]
def answers(host):
    try:
        socket.create_connection((host, port), timeout=2).close()
        return True
    except OSError:
        return False
def status(url):
    try:
        return urllib.request.urlopen(urllib.request.Request(url, headers={}), timeout=5).status
    except urllib.error.HTTPError as err:
        return err.code
    except OSError as err:
        return str(err)
deadline = time.monotonic() + 90
while not (answers("127.0.0.1") or answers(node)) and time.monotonic() < deadline:
    time.sleep(1)
found = {"node": node, "on_node": answers(node), "on_loopback": answers("127.0.0.1")}
found["agent"] = status(f"http://{node}:{agent}/api/job_agent/jobs/nothing/logs")
json.dump(found, open(out, "w"))
"""


def global_interface() -> str | None:
    """This machine's first interface with a global IPv4 address (Ray's node address in the job), if any."""
    done = subprocess.run(["ip", "-4", "-o", "addr", "show", "scope", "global"], capture_output=True, text=True)
    lines = done.stdout.split("\n") if done.returncode == 0 else []
    return next((line.split()[1] for line in lines if line.strip()), None)


@pytest.mark.parametrize(
    ("setting", "on_node", "agent"),
    [((), False, 401), (("submit.ray.dashboard_host=null", "submit.ray.auth_mode=disabled"), True, 404)],
    ids=["default", "node-address-without-auth"],
)
def test_the_jobs_api_is_on_the_heads_loopback_and_asks_for_a_token_unless_told(cluster, setting, on_node, agent):
    """The dashboard and every node's agent serve Ray's Jobs API (it runs any code it is sent): by default a real
    `ray start --head` in the job binds the dashboard to 127.0.0.1, not to the node address the other nodes (and
    everyone on the network) reach, and Ray's token authentication turns away a request without the job's token."""
    interface = global_interface()
    if interface is None:
        pytest.skip("no interface with a global IPv4 address: the node address would be the loopback")
    dashboard = next(o for o in cluster.overrides if o.startswith("submit.ray.dashboard_port=")).split("=")[1]
    head_args = next(o for o in cluster.overrides if o.startswith("submit.ray.head_args="))
    agent_port = re.search(r"--dashboard-agent-listen-port=(\d+)", head_args).group(1)
    probe, seen = cluster.tmp / "python-probing", cluster.tmp / "dashboard.json"
    probe.write_text(
        "#!/bin/bash\n"
        f'[[ " $* " == *" -m verl_qwen35 relaunch "* ]] && exec {sys.executable} -c {shlex.quote(PROBE)} '
        f"{dashboard} {agent_port} {seen}\n"
        f'exec {sys.executable} "$@"\n'
    )
    probe.chmod(0o755)
    overrides = [o for o in cluster.overrides if not o.startswith("submit.python=")]
    run = cluster.run(
        sys.executable,
        "-m",
        "verl_qwen35",
        "device=gpu",
        "model=35b",
        *overrides,
        f"submit.python={probe}",
        f"submit.ray.interface={interface}",
        *setting,
        f"hydra.run.dir={cluster.tmp / 'run'}",
    )
    assert run.returncode == 0, run.stderr
    found = json.loads(seen.read_text())
    assert found["node"] != "127.0.0.1", found
    assert (found["on_node"], found["on_loopback"], found["agent"]) == (on_node, not on_node, agent), found
    script = (cluster.tmp / "run" / "job.sbatch").read_text()
    assert "RAY_AUTH_TOKEN=" not in script.split("set -euo pipefail")[0], "a token is never written into the script"


# A stand-in for the run in a chain (the relaunch itself is tested above): per job, the next line of
# `plan` says what it does: `preempt` saves step 1 and is then stopped by SIGTERM, as Slurm stops a job at
# its time limit or on preemption (srun execs it: its parent is the batch script); `finish` saves the last
# step; `fail` exits 3. Everything else (Ray's start, the wait for every device) runs for real.
CHAIN_PYTHON = """#!/bin/bash
if [[ " $* " != *" relaunch "* ]]; then exec {python} "$@"; fi
calls={tmp}/relaunches
echo "$SLURM_JOB_ID" >>"$calls"
action=$(sed -n "$(wc -l <"$calls")p" {tmp}/plan)
mkdir -p {checkpoints}
case $action in
preempt) echo 1 >{checkpoints}/latest_checkpointed_iteration.txt && kill -TERM $PPID && sleep 60 ;;
finish) echo 2 >{checkpoints}/latest_checkpointed_iteration.txt ;;
fail) exit 3 ;;
esac
"""


def chained(cluster: Cluster, plan: list[str]) -> subprocess.CompletedProcess[str]:
    checkpoints = cluster.tmp / "checkpoints"
    (cluster.tmp / "plan").write_text("\n".join(plan) + "\n")
    python = cluster.tmp / "python-chain"
    python.write_text(CHAIN_PYTHON.format(python=sys.executable, tmp=cluster.tmp, checkpoints=checkpoints))
    python.chmod(0o755)
    cluster.overrides = [o for o in cluster.overrides if not o.startswith("submit.python=")]
    return cluster.submit(
        f"submit.python={python}",
        "submit.chain=3",
        f"trainer.default_local_dir={checkpoints}",
        "trainer.total_training_steps=2",
        "device=gpu",
        "model=35b",
        "parallel.nnodes=2",
        "parallel.devices_per_node=4",
    )


def test_a_chain_resumes_after_preemption_and_its_last_job_finds_the_run_done(cluster):
    run = chained(cluster, ["preempt", "finish"])
    assert run.returncode == 0, run.stderr
    run_dir = cluster.tmp / "run"
    sbatches = [step for step in cluster.step_lines() if step[0] == "sbatch"]
    assert len(sbatches) == 3
    assert "chained jobs 4201 -> 4202 -> 4203" in run.stdout
    script = (run_dir / "job.sbatch").read_text()
    assert "#SBATCH --requeue" in script
    assert (cluster.tmp / "relaunches").read_text().split() == ["4201", "4202"]  # the third started nothing
    first, second, third = [(run_dir / f"slurm-{job}.out").read_text() for job in (4201, 4202, 4203)]
    assert "chain: resuming from no checkpoint" in first and "job exits with status 143" in first
    assert "chain: resuming from 1" in second and "job exits with status 0" in second
    assert "run finished" in third and "Ray head" not in third
    assert not (run_dir / "chain.failed").exists()


def test_a_failure_stops_the_chain_without_starting_ray_again(cluster):
    run = chained(cluster, ["fail"])
    assert run.returncode == 0, run.stderr  # the stand-in ran the jobs; sbatch itself succeeded
    run_dir = cluster.tmp / "run"
    assert (cluster.tmp / "relaunches").read_text().split() == ["4201"]
    assert (run_dir / "chain.failed").read_text().strip() == "job 4201 exited with status 3"
    for job in (4202, 4203):
        output = (run_dir / f"slurm-{job}.out").read_text()
        assert "an earlier job of this chain failed" in output and "Ray head" not in output
