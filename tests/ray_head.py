"""A Ray head in its own process, started from a clean environment, as on a cluster node.

A worker on such a node inherits the environment of the node's `ray start`, not the
driver's: only the job's `runtime_env` reaches it. The head gets a short temp dir of its
own and ports picked here, so it never meets another Ray on this machine, and it is
stopped by its process group (never `ray stop`, which stops every Ray of the user).
"""

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
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


@contextmanager
def separate_ray_head(node_env: dict[str, str], num_cpus: int = 2) -> Iterator[str]:
    """`ray start --head --block` on 127.0.0.1 from a clean environment; yields its address."""
    temp_dir = tempfile.mkdtemp(prefix="r", dir="/tmp")
    gcs, node_manager, object_manager, client, dashboard, agent, agent_grpc, runtime_env_agent, metrics, *workers = (
        free_ports(9 + 12)
    )
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
        "--include-dashboard=false",
        f"--dashboard-port={dashboard}",  # the minimal dashboard head still listens
        f"--num-cpus={num_cpus}",
        "--num-gpus=0",
        f"--temp-dir={temp_dir}",
        "--disable-usage-stats",
    ]
    log = Path(temp_dir) / "ray_start.log"
    with log.open("w") as out:
        head = subprocess.Popen(
            command, env=clean_env(node_env), stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    address = f"127.0.0.1:{gcs}"
    try:
        _wait_until_up(head, gcs, log)
        yield address
    finally:
        _stop(head)
        shutil.rmtree(temp_dir, ignore_errors=True)


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
