"""The resolvers conf/ uses: verl's config directory (its search path), a run id, and the whole-number sum and
product the trial group (conf/trial/) computes its step and prompt counts with."""

import secrets

from omegaconf import OmegaConf

from verl_qwen35.data.matrices import release, stack_ids
from verl_qwen35.installed import verl_config_dir


def run_id() -> str:
    """A short random tag; with the time it names output directories, so that two runs or sweeps
    started in the same second never share one. Resolved once per config (copied to every sweep job)."""
    return secrets.token_hex(3)


def stack_version(stack: str | None, package: str) -> str | None:
    """The release of a package a shipped stack pins (`ascend_mindspeed_bridge`, `megatron-core` -> "0.18.0"), or
    None for no stack, a stack the matrices do not have (checks/verl_target.py names it) or a pin that is not a
    release (`any`, a commit): the version matrices are the one place a stack's versions are written."""
    found = stack_ids().get(stack) if stack else None
    pin = found[1].get("pins", {}).get(package) if found else None
    parts = release(str(pin)) if pin is not None else ()
    if len(parts) < 2:
        return None
    dev = ".dev0" if str(pin).endswith(("dev", "dev0")) else ""
    return ".".join(map(str, parts)) + dev


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
    if not OmegaConf.has_resolver("verl_qwen35.stack_version"):
        OmegaConf.register_new_resolver("verl_qwen35.stack_version", stack_version)
    if not OmegaConf.has_resolver("verl_qwen35.run_id"):
        OmegaConf.register_new_resolver("verl_qwen35.run_id", run_id, use_cache=True)
    if not OmegaConf.has_resolver("verl_qwen35.plus"):
        OmegaConf.register_new_resolver("verl_qwen35.plus", plus)
    if not OmegaConf.has_resolver("verl_qwen35.times"):
        OmegaConf.register_new_resolver("verl_qwen35.times", times)
