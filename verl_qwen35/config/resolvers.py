"""The resolvers conf/ uses: verl's config directory (its search path), a run id, and the whole-number sum and
product the trial group (conf/trial/) computes its step and prompt counts with."""

import secrets

from omegaconf import OmegaConf

from verl_qwen35.installed import verl_config_dir


def run_id() -> str:
    """A short random tag; with the time it names output directories, so that two runs or sweeps
    started in the same second never share one. Resolved once per config (copied to every sweep job)."""
    return secrets.token_hex(3)


def _whole(value: object, name: str) -> int:
    """A whole number (or its text, as an interpolation may give it); anything else is refused naming the resolver."""
    if isinstance(value, bool):
        raise ValueError(f"{name}: {value!r} is not a whole number")
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value)
    raise ValueError(f"{name}: {value!r} is not a whole number")


def plus(a: object, b: object) -> int:
    """`${verl_qwen35.plus:a,b}`: a + b, whole numbers (trial=drill_resume: the saved step and one more)."""
    return _whole(a, "verl_qwen35.plus") + _whole(b, "verl_qwen35.plus")


def times(a: object, b: object) -> int:
    """`${verl_qwen35.times:a,b}`: a x b, whole numbers (a trial's prompts: steps x data.train_batch_size)."""
    return _whole(a, "verl_qwen35.times") * _whole(b, "verl_qwen35.times")


def register_resolvers() -> None:
    """Idempotent: registering into OmegaConf's resolver table is its public extension point."""
    if not OmegaConf.has_resolver("verl_qwen35.verl_config_dir"):
        OmegaConf.register_new_resolver("verl_qwen35.verl_config_dir", lambda: str(verl_config_dir()))
    if not OmegaConf.has_resolver("verl_qwen35.run_id"):
        OmegaConf.register_new_resolver("verl_qwen35.run_id", run_id, use_cache=True)
    if not OmegaConf.has_resolver("verl_qwen35.plus"):
        OmegaConf.register_new_resolver("verl_qwen35.plus", plus)
    if not OmegaConf.has_resolver("verl_qwen35.times"):
        OmegaConf.register_new_resolver("verl_qwen35.times", times)
