"""A Ray head in its own process, started from a clean environment, as on a cluster node.

A worker on such a node inherits the environment of the node's `ray start`, not the
driver's: only the job's `runtime_env` reaches it. The head gets a short temp dir of its
own and ports picked here, so it never meets another Ray on this machine, and it is
stopped by its process group (never `ray stop`, which stops every Ray of the user).
"""

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

# What a node's login shell has at minimum; nothing of the job's environment.
CLEAN_ENV_NAMES = ("PATH", "HOME", "LANG", "USER", "TMPDIR")


def free_ports(count: int) -> list[int]:
    """Ports the kernel hands out now; all held open together so they differ."""
    with ExitStack() as stack:
        sockets = [stack.enter_context(socket.socket()) for _ in range(count)]
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in sockets]


def clean_env(extra: dict[str, str]) -> dict[str, str]:
    """`env -i PATH=... HOME=...` plus `extra` (what that node's shell exports)."""
    env = {name: os.environ[name] for name in CLEAN_ENV_NAMES if name in os.environ}
    env["PATH"] = f"{Path(sys.executable).parent}:/usr/bin:/bin"
    # A head started next to a ~/.ray/auth_token turns token auth on; a driver connecting by
    # address does not send the token. Clusters in the reference setup run without it.
    env["RAY_AUTH_MODE"] = "disabled"
    return {**env, **extra}


@dataclass(frozen=True)
class RayHead:
    """A running head: the GCS address a driver joins, and the dashboard's URL when it has one."""

    address: str
    gcs_port: int
    dashboard_url: str | None


@contextmanager
def separate_ray_head(
    node_env: dict[str, str] | None = None,
    num_cpus: int = 2,
    num_gpus: int = 0,
    resources: dict[str, int] | None = None,
    dashboard: bool = False,
) -> Iterator[RayHead]:
    """`ray start --head --block` on 127.0.0.1 from a clean environment (plus `node_env`).

    `resources` are what the node advertises beside CPUs and GPUs (`{"NPU": 16}` for an A3
    node); `dashboard=True` starts the full dashboard (Ray's Job Submission API) and waits for it.
    """
    temp_dir = tempfile.mkdtemp(prefix="r", dir="/tmp")
    (
        gcs,
        node_manager,
        object_manager,
        client,
        dashboard_port,
        agent,
        agent_grpc,
        runtime_env_agent,
        metrics,
        *workers,
    ) = free_ports(9 + 12)
    command = [
        str(Path(sys.executable).parent / "ray"),
        "start",
        "--head",
        "--block",
        "--node-ip-address=127.0.0.1",
        f"--port={gcs}",
        f"--node-manager-port={node_manager}",
        f"--object-manager-port={object_manager}",
        f"--ray-client-server-port={client}",
        f"--dashboard-agent-listen-port={agent}",
        f"--dashboard-agent-grpc-port={agent_grpc}",
        f"--runtime-env-agent-port={runtime_env_agent}",
        f"--metrics-export-port={metrics}",
        f"--worker-port-list={','.join(map(str, workers))}",
        f"--include-dashboard={str(dashboard).lower()}",
        "--dashboard-host=127.0.0.1",
        f"--dashboard-port={dashboard_port}",  # the minimal dashboard head still listens
        f"--num-cpus={num_cpus}",
        f"--num-gpus={num_gpus}",
        f"--resources={json.dumps(resources or {})}",
        "--object-store-memory=100000000",
        f"--temp-dir={temp_dir}",
        "--disable-usage-stats",
    ]
    log = Path(temp_dir) / "ray_start.log"
    with log.open("w") as out:
        head = subprocess.Popen(
            command, env=clean_env(node_env or {}), stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    url = f"http://127.0.0.1:{dashboard_port}" if dashboard else None
    try:
        _wait_until_up(head, gcs, log)
        if url:
            _wait_for_dashboard(head, url, log)
        yield RayHead(f"127.0.0.1:{gcs}", gcs, url)
    finally:
        _stop(head)
        leftover = processes_using(temp_dir)
        shutil.rmtree(temp_dir, ignore_errors=True)
        assert not leftover, f"Ray processes outlived the head: {list(leftover.values())}"


def processes_using(path: str) -> dict[int, str]:
    """pid -> command line of each live process naming `path` (Ray's processes name their temp dir)."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:  # gone meanwhile
            continue
        if path in cmdline and state != "Z":
            found[int(entry.name)] = cmdline
    return found


def _wait_for_dashboard(head: subprocess.Popen, url: str, log: Path, timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        if head.poll() is not None:
            raise RuntimeError(f"ray start exited {head.returncode}:\n{log.read_text()}")
        try:
            urllib.request.urlopen(f"{url}/api/version", timeout=2)
            return
        except OSError:
            if time.monotonic() > deadline:
                raise RuntimeError(f"no dashboard at {url} after {timeout}s:\n{log.read_text()}") from None
            time.sleep(1)


def _wait_until_up(head: subprocess.Popen, port: int, log: Path, timeout: float = 90.0) -> None:
    """The GCS port accepts connections and `ray start` printed that the node is up."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if head.poll() is not None:
            raise RuntimeError(f"ray start exited {head.returncode}:\n{log.read_text()}")
        if "Ray runtime started" in log.read_text():
            with socket.socket() as sock:
                if sock.connect_ex(("127.0.0.1", port)) == 0:
                    return
        time.sleep(0.2)
    raise RuntimeError(f"Ray head not up after {timeout}s:\n{log.read_text()}")


def _stop(head: subprocess.Popen) -> None:
    """SIGTERM to the head's own process group (raylet, GCS, workers), then SIGKILL what is left."""
    for sig, wait in ((signal.SIGTERM, 5.0), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(head.pid, sig)
        except ProcessLookupError:
            return
        try:
            head.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            continue
        # `ray start --block` is gone; its children may still be in the group.
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            try:
                os.killpg(head.pid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.2)
