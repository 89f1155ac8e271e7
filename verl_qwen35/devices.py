"""Does the Ray cluster verl is about to use have the devices the layout needs? Checked before verl starts Ray.

verl asks for one STRICT_PACK placement group per node, `trainer.n_gpus_per_node` bundles of one
GPU/NPU each, `trainer.nnodes` times (verl/single_controller/ray/base.py,
RayResourcePool.get_placement_groups), and waits on `pg.ready()` forever when the cluster cannot
hold them. So: at least `nnodes` Ray nodes with `devices_per_node` devices each.

Which cluster: the one `ray.init(**ray_kwargs.ray_init)` in verl's main_ppo would join, found by
Ray's own rule (ray/_private/services.py canonicalize_bootstrap_address: the `address` given,
else RAY_ADDRESS, else the last `ray start` on this machine). None found means verl starts a
local Ray on this machine, which advertises the devices Ray's accelerator managers detect here
(ray/_private/accelerators: NVML for GPUs, AscendCL or /dev/davinci* for NPUs, limited by
CUDA_VISIBLE_DEVICES / ASCEND_RT_VISIBLE_DEVICES) unless ray_init sets num_gpus / resources.

Imports ray: only on the launch path.
"""

from typing import Any

from omegaconf import DictConfig

from verl_qwen35.checks.layout import KEYS
from verl_qwen35.checks.problem import Problem, error

RESOURCE = {"gpu": "GPU", "npu": "NPU"}
RAY_INIT = "ray_kwargs.ray_init"


def _ray_init(cfg: DictConfig) -> dict[str, Any]:
    return dict(cfg.get("ray_kwargs", {}).get("ray_init", {}) or {})


def cluster_address(cfg: DictConfig) -> str | None:
    """The address verl's ray.init would connect to, or None for a new local Ray (Ray's own rule)."""
    from ray._private.services import canonicalize_bootstrap_address

    ray_init = _ray_init(cfg)
    return canonicalize_bootstrap_address(ray_init.get("address"), ray_init.get("_temp_dir"))


def cluster_devices(address: str, resource: str) -> list[float]:
    """Devices of `resource` on each alive node of the cluster at `address` (a short driver connection)."""
    import ray

    ray.init(address=address, logging_level="ERROR", log_to_driver=False, include_dashboard=False)
    try:
        return [node["Resources"].get(resource, 0) for node in ray.nodes() if node["Alive"]]
    finally:
        ray.shutdown()


class DeclaredError(ValueError):
    """A device count declared in ray_kwargs.ray_init that Ray could not use."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(message)
        self.key = key


def local_devices(cfg: DictConfig, resource: str) -> int:
    """What a local Ray started by verl would advertise (ray/_private/resource_and_label_spec.py)."""
    ray_init = _ray_init(cfg)
    declared = ray_init.get("num_gpus") if resource == "GPU" else (ray_init.get("resources") or {}).get(resource)
    if declared is not None:
        if isinstance(declared, bool) or not isinstance(declared, int | float) or declared < 0:
            key = f"{RAY_INIT}.num_gpus" if resource == "GPU" else f"{RAY_INIT}.resources.{resource}"
            raise DeclaredError(
                key, f"{key}={declared!r}: must be a number of devices >= 0 (or absent: Ray detects them)"
            )
        return int(declared)
    from ray._private.accelerators import get_accelerator_manager_for_resource

    manager = get_accelerator_manager_for_resource(resource)
    count = manager.get_current_node_num_accelerators()
    visible = manager.get_current_process_visible_accelerator_ids()
    return min(count, len(visible)) if visible is not None else count


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
    import os

    if _ray_init(cfg).get("address"):
        return f"{RAY_INIT}.address={_ray_init(cfg)['address']}"
    if os.environ.get("RAY_ADDRESS"):
        return f"from your shell's RAY_ADDRESS={os.environ['RAY_ADDRESS']}; unset it or export RAY_ADDRESS=local"
    return "the last `ray start` on this machine"


def device_problems(cfg: DictConfig, device: str) -> list[Problem]:
    resource = RESOURCE[device]
    nnodes, per_node = int(cfg.trainer.nnodes), int(cfg.trainer.n_gpus_per_node)
    needed = f"{nnodes} node(s) x {per_node} {resource}s = {nnodes * per_node}"
    keys = (KEYS["nnodes"], KEYS["devices_per_node"])
    try:
        address = cluster_address(cfg)
    except (ConnectionError, ValueError) as err:
        return [error(f"{RAY_INIT}.address", f"no usable Ray cluster address ({_address_source(cfg)}): {err}")]
    if address is None:
        try:
            found = local_devices(cfg, resource)
        except DeclaredError as err:
            return [error(err.key, str(err))]
        if nnodes == 1 and found >= per_node:
            return []
        why = (
            f"the layout needs {needed}, but no Ray cluster to join (RAY_ADDRESS unset or `local`, no "
            f"`ray start` on this machine) and this machine has {found} {resource}(s) for a local Ray"
        )
        return [error(keys, f"{why}; start Ray with the devices: {start_lines(device, per_node)}")]
    try:
        per_ray_node = cluster_devices(address, resource)
    except Exception as err:  # ray.init raises ConnectionError, RuntimeError, ... on an unreachable cluster
        return [
            error(
                f"{RAY_INIT}.address",
                f"cannot reach the Ray cluster at {address} ({_address_source(cfg)}): {type(err).__name__}: {err}",
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
            f"the Ray cluster at {address} has {resource}s per node [{shown}] ({sum(per_ray_node):g} in total, "
            f"{len(usable)} node(s) with at least {per_node}); the layout needs {needed}, one placement group of "
            f"{per_node} per node, and verl would wait forever. Add {missing} node(s) with "
            f"`ray start --address={address} "
            + (f"--num-gpus={per_node}`" if device == "gpu" else f"--resources='{{\"NPU\": {per_node}}}'`")
            + ", or set parallel.nnodes / parallel.devices_per_node to what the cluster has",
        )
    ]
