"""`python -m verl_qwen35.run.submit.wait_for_ray`: wait until a Ray cluster reports every device.

job.sbatch runs it on the head before the run starts, so a node that never joined fails
the job with a clear message instead of verl waiting on a resource pool it cannot fill.
"""

import argparse
import socket
import sys
import time


def _listening(address: str) -> bool:
    host, _, port = address.rpartition(":")
    try:
        socket.create_connection((host, int(port)), timeout=2).close()
        return True
    except OSError:
        return False


def _connect(address: str, deadline: float):
    """Ray, connected to the cluster; ray.init alone retries an absent GCS for many minutes."""
    while not _listening(address):
        if time.monotonic() >= deadline:
            raise TimeoutError(f"nothing listens at {address}")
        time.sleep(1)
    import ray

    ray.init(address=address, logging_level="ERROR", log_to_driver=False)
    return ray


def wait(address: str, resource: str, count: int, nodes: int, timeout: float, every: float = 10) -> str | None:
    """None once Ray reports `count` of `resource` on `nodes` alive nodes; else why not, at the timeout."""
    deadline = time.monotonic() + timeout
    try:
        ray = _connect(address, deadline)
    except TimeoutError as err:
        return f"{err} after {timeout:.0f}s: is the Ray head up? (see its log)"
    try:
        said = 0.0
        while True:
            have = ray.cluster_resources().get(resource, 0)
            alive = sum(node["Alive"] for node in ray.nodes())
            status = f"Ray reports {have:g}/{count} {resource} on {alive}/{nodes} node(s)"
            if have >= count and alive >= nodes:
                print(status, flush=True)
                return None
            if time.monotonic() >= deadline:
                return (
                    f"{status} after {timeout:.0f}s: a node's `ray start` did not join or has fewer "
                    f"{resource} than parallel.devices_per_node; see its log (raise submit.ray.wait_timeout "
                    "if nodes are only slow)"
                )
            if time.monotonic() - said >= every:
                print(f"{status}; waiting", flush=True)
                said = time.monotonic()
            time.sleep(1)
    finally:
        ray.shutdown()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m verl_qwen35.run.submit.wait_for_ray", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--address", required=True, help="the head's GCS address, host:port")
    parser.add_argument("--resource", required=True, help="GPU or NPU")
    parser.add_argument("--count", type=int, required=True, help="devices in the whole cluster")
    parser.add_argument("--nodes", type=int, required=True)
    parser.add_argument("--timeout", type=float, required=True, help="seconds")
    args = parser.parse_args(argv)
    problem = wait(args.address, args.resource, args.count, args.nodes, args.timeout)
    if problem:
        print(f"wait_for_ray: {problem}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
