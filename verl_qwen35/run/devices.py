"""Does the Ray cluster verl is about to use have the devices the layout needs? Checked before verl starts Ray.

verl asks for one STRICT_PACK placement group per node, `trainer.n_gpus_per_node` bundles of one
GPU/NPU each, `trainer.nnodes` times (verl/single_controller/ray/base.py,
RayResourcePool.get_placement_groups), and waits on `pg.ready()` forever when the cluster cannot
hold them. So: at least `nnodes` Ray nodes with `devices_per_node` devices each.

Which cluster: the one `ray.init(**ray_kwargs.ray_init)` in verl's main_ppo would join or start. The
check makes that very call (Ray's public API: the `address` given, else RAY_ADDRESS, else a running
`ray start` on this machine, else a new local Ray with the devices Ray detects here, or those
ray_init declares), reads each alive node's devices from `ray.nodes()` and disconnects.

Imports ray: only on the launch path.
"""

import os
from typing import Any

from omegaconf import DictConfig

from verl_qwen35.checks.layout import KEYS
from verl_qwen35.checks.problem import Problem, error

RESOURCE = {"gpu": "GPU", "npu": "NPU"}
RAY_INIT = "ray_kwargs.ray_init"


def _ray_init(cfg: DictConfig) -> dict[str, Any]:
    return dict(cfg.get("ray_kwargs", {}).get("ray_init", {}) or {})


def cluster_devices(cfg: DictConfig, resource: str) -> list[float]:
    """Devices of `resource` on each alive node of the Ray that verl's ray.init would use (joined or started)."""
    import ray

    options = {k: v for k, v in _ray_init(cfg).items() if k != "runtime_env"}
    options.update(logging_level="ERROR", log_to_driver=False, include_dashboard=False)
    ray.init(**options)
    try:
        return [node["Resources"].get(resource, 0) for node in ray.nodes() if node["Alive"]]
    finally:
        ray.shutdown()


class DeclaredError(ValueError):
    """A device count declared in ray_kwargs.ray_init that Ray could not use."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(message)
        self.key = key


def declared_problems(cfg: DictConfig, resource: str) -> list[Problem]:
    """A device count ray_init declares must be a number Ray can use."""
    ray_init = _ray_init(cfg)
    declared = ray_init.get("num_gpus") if resource == "GPU" else (ray_init.get("resources") or {}).get(resource)
    if declared is None or (not isinstance(declared, bool) and isinstance(declared, int | float) and declared >= 0):
        return []
    key = f"{RAY_INIT}.num_gpus" if resource == "GPU" else f"{RAY_INIT}.resources.{resource}"
    return [error(key, f"{key}={declared!r}: must be a number of devices >= 0 (or absent: Ray detects them)")]


def device_flag(device: str, per_node: int) -> str:
    """How `ray start` advertises the devices (Ray has no NPU flag: a custom resource, as verl's NPU guide does)."""
    return f"--num-gpus={per_node}" if device == "gpu" else f"--resources='{{\"NPU\": {per_node}}}'"


def start_lines(device: str, per_node: int) -> str:
    flag = device_flag(device, per_node)
    return (
        f"on the head node `ray start --head --port=6379 {flag}`, on every other node "
        f"`ray start --address=<head ip>:6379 {flag}`, then launch on the head node (or export RAY_ADDRESS)"
    )


def _address_source(cfg: DictConfig) -> str:
    """Where the address came from, so the message names what to change."""
    if _ray_init(cfg).get("address"):
        return f"{RAY_INIT}.address={_ray_init(cfg)['address']}"
    if os.environ.get("RAY_ADDRESS") == "local":
        return "from your shell's RAY_ADDRESS=local: a new local Ray with this machine's devices"
    if os.environ.get("RAY_ADDRESS"):
        return f"from your shell's RAY_ADDRESS={os.environ['RAY_ADDRESS']}; unset it or export RAY_ADDRESS=local"
    return "RAY_ADDRESS unset: a running `ray start` on this machine, else a new local Ray"


def device_problems(cfg: DictConfig, device: str) -> list[Problem]:
    resource = RESOURCE[device]
    nnodes, per_node = int(cfg.trainer.nnodes), int(cfg.trainer.n_gpus_per_node)
    needed = f"{nnodes} node(s) x {per_node} {resource}s = {nnodes * per_node}"
    keys = (KEYS["nnodes"], KEYS["devices_per_node"])
    if declared := declared_problems(cfg, resource):
        return declared
    try:
        per_ray_node = cluster_devices(cfg, resource)
    except Exception as err:  # ray.init raises ConnectionError, RuntimeError, ValueError, ... on a bad address
        return [
            error(
                f"{RAY_INIT}.address",
                f"cannot start or reach the Ray cluster ({_address_source(cfg)}): {type(err).__name__}: {err}",
            )
        ]
    usable = [n for n in per_ray_node if n >= per_node]
    if len(usable) >= nnodes:
        return []
    shown = ", ".join(f"{n:g}" for n in per_ray_node) or "none"
    missing = nnodes - len(usable)
    return [
        error(
            keys,
            f"the Ray cluster ({_address_source(cfg)}) has {resource}s per node [{shown}] "
            f"({sum(per_ray_node):g} in total, "
            f"{len(usable)} node(s) with at least {per_node}); the layout needs {needed}, one placement group of "
            f"{per_node} per node, and verl would wait forever. Add {missing} node(s) with "
            "`ray start --address=<head ip>:6379 "
            + (f"--num-gpus={per_node}`" if device == "gpu" else f"--resources='{{\"NPU\": {per_node}}}'`")
            + ", or set parallel.nnodes / parallel.devices_per_node to what the cluster has "
            f"({start_lines(device, per_node)})",
        )
    ]
