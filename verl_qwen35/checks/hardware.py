"""The layout against the machine it names: `hardware.*` (conf/hardware/NAME.yaml) is the one source of the node.

parallel.devices_per_node defaults to hardware.devices_per_node (config/schema.py Parallel); a layout may use
fewer devices a node, never more, and a GPU preset cannot run an NPU stack or the other way round.
"""

from omegaconf import DictConfig

from verl_qwen35.checks.layout import KEYS
from verl_qwen35.checks.problem import Problem, error
from verl_qwen35.model.layout import Layout


def hardware_problems(cfg: DictConfig, layout: Layout, device: str) -> list[Problem]:
    hw = cfg.get("hardware") or {}
    found = []
    kind = hw.get("device")
    if kind in ("gpu", "npu") and kind != device:
        found.append(
            error(
                ("hardware", "device"),
                f"hardware.device={kind} ({hw.get('name', '?')}) but device={device} composes the "
                f"{device.upper()} stack: pass device={kind}, or a {device.upper()} hardware=NAME "
                "(verl-qwen35 --presets)",
            )
        )
    per_node = hw.get("devices_per_node")
    if isinstance(per_node, int) and layout.devices_per_node > per_node:
        found.append(
            error(
                KEYS["devices_per_node"],
                f"parallel.devices_per_node={layout.devices_per_node} is more than a {hw.get('name', 'node')} "
                f"node holds ({per_node}, hardware.devices_per_node): use at most {per_node} a node and raise "
                "parallel.nnodes, or pick the hardware this layout was written for (verl-qwen35 --presets)",
            )
        )
    return found
