"""The sections the preflight, the plan and verl read must be sections: `trainer=null` or
`megatron.override_transformer_config=null` is answered here, before anything reads inside them.

Values inside the sections (types, null numbers) are the value checks' job; this only
checks that each container is still a mapping.
"""

from typing import TYPE_CHECKING

from omegaconf import DictConfig, OmegaConf

if TYPE_CHECKING:
    from verl_qwen35.checks.problem import Problem

SECTIONS = (
    "data",
    "trainer",
    "algorithm",
    "actor_rollout_ref",
    "actor_rollout_ref.model",
    "actor_rollout_ref.actor",
    "actor_rollout_ref.actor.megatron",
    "actor_rollout_ref.ref",
    "actor_rollout_ref.ref.megatron",
    "actor_rollout_ref.rollout",
    "megatron",
    "megatron.override_transformer_config",
    "model",
    "parallel",
    "ray_kwargs",
    "ray_kwargs.ray_init",
    "ray_kwargs.ray_init.runtime_env",
)
TOP_LEVEL = tuple(s for s in SECTIONS if "." not in s)


def structure_problems(cfg: DictConfig) -> list["Problem"]:
    """One error per section that is missing or not a mapping (its parent's error covers its children)."""
    from verl_qwen35.checks.problem import error  # imported here: the entrypoint reads TOP_LEVEL before any check

    found: list[Problem] = []
    for key in SECTIONS:
        if any(key.startswith(f"{p.keys[0]}.") for p in found):
            continue
        node = OmegaConf.select(cfg, key, default="<absent>")
        if not OmegaConf.is_dict(node):
            shown = "absent" if node == "<absent>" else f"{key}={node!r}"
            found.append(
                error(
                    key,
                    f"{shown}: a section of keys that the checks and verl read; set keys inside it "
                    f"({key}.KEY=VALUE) instead of replacing it",
                )
            )
    return found
