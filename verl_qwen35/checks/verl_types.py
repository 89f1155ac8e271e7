"""A verl key given a value of another kind than verl's own default: `trainer.total_epochs=ten`.

verl builds its config dataclasses (`verl/workers/config/*.py`, `verl/trainer/config/*.py`) from the
resolved config only after Ray and the workers have started, and plain dict sections (trainer, data)
are read as they are, so a text where verl expects a number fails hours later, or never loudly. The
kind of every leaf of the installed verl's flattened trainer config
(`trainer/config/_generated_ppo_megatron_trainer.yaml`, which verl's own CI keeps current) is what a
value must keep: a number stays a number (an integer where verl has an integer), a flag a flag. Keys
whose default is null or text say nothing about their kind and are not judged.
"""

from functools import cache
from typing import Any

from omegaconf import DictConfig, OmegaConf

from verl_qwen35.checks.problem import Problem, error
from verl_qwen35.config.yaml_files import load_mapping
from verl_qwen35.installed import verl_config_dir

BASE = "_generated_ppo_megatron_trainer.yaml"


def _leaves(tree: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(tree, dict):
        found: dict[str, Any] = {}
        for key, value in tree.items():
            found |= _leaves(value, f"{prefix}{key}.")
        return found
    return {prefix.rstrip("."): tree}


@cache
def verl_defaults() -> dict[str, bool | int | float]:
    """Every leaf of verl's trainer config whose default is a flag or a number."""
    defaults = _leaves(load_mapping(verl_config_dir() / BASE))
    return {key: value for key, value in defaults.items() if type(value) in (bool, int, float)}


def _fits(default: bool | int | float, value: Any) -> bool:
    """A number for a number (verl's `entropy_coeff: 0` takes 0.001 too), a flag or 0/1 for a flag; null is
    verl's "unset". Text and sections are what no such key takes."""
    if value is None:
        return True
    if isinstance(default, bool):
        return isinstance(value, bool | int) and not isinstance(value, float)
    return isinstance(value, int | float) and not isinstance(value, bool)


def verl_type_problems(cfg: DictConfig) -> list[Problem]:
    """One error per verl key whose resolved value is of another kind than verl's default."""
    values = _leaves(OmegaConf.to_container(cfg, resolve=True))
    return [
        error(
            key,
            f"{key}={values[key]!r}: verl expects {'true or false' if isinstance(default, bool) else 'a number'} "
            f"here (its default is {str(default).lower() if isinstance(default, bool) else default}); give one",
        )
        for key, default in verl_defaults().items()
        if key in values and not _fits(default, values[key])
    ]
