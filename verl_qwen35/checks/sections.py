"""The sections the preflight, the plan and verl read must be mappings (`trainer=null` is answered here)."""

from omegaconf import DictConfig, OmegaConf

from verl_qwen35.checks.problem import Problem, error
from verl_qwen35.config.sections import SECTIONS, WHEN_PRESENT


def structure_problems(cfg: DictConfig) -> list[Problem]:
    """One error per section that is missing or not a mapping (its parent's error covers its children)."""
    found: list[Problem] = []
    for key in (*SECTIONS, *WHEN_PRESENT):
        if any(key.startswith(f"{p.keys[0]}.") for p in found):
            continue
        node = OmegaConf.select(cfg, key, default="<absent>")
        if not OmegaConf.is_dict(node) and not (key in WHEN_PRESENT and node == "<absent>"):
            shown = "absent" if node == "<absent>" else f"{key}={node!r}"
            found.append(
                error(
                    key,
                    f"{shown}: a section of keys that the checks and verl read; set keys inside it "
                    f"({key}.KEY=VALUE) instead of replacing it",
                )
            )
    return found
