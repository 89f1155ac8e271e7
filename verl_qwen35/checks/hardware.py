"""The layout against the machine it names: `hardware.*` (conf/hardware/NAME.yaml) is the one source of the node.

parallel.devices_per_node defaults to hardware.devices_per_node (config/schema.py Parallel); a layout may use
fewer devices a node, never more. (A GPU stack on an NPU machine is refused with the choices,
config/choices.py: only they know the `device` group; `trainer.device` is rewritten by verl to the machine's.)
"""

from omegaconf import DictConfig

from verl_qwen35.checks.layout import KEYS
from verl_qwen35.checks.problem import Problem, error
from verl_qwen35.model.layout import Layout


def hardware_problems(cfg: DictConfig, layout: Layout) -> list[Problem]:
    hw = cfg.get("hardware") or {}
    found = []
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
