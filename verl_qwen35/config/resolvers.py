"""The resolvers conf/config.yaml uses: verl's config directory (its search path) and a run id."""

import secrets

from omegaconf import OmegaConf

from verl_qwen35.data.matrices import release, stack_ids
from verl_qwen35.installed import verl_config_dir


def run_id() -> str:
    """A short random tag; with the time it names output directories, so that two runs or sweeps
    started in the same second never share one. Resolved once per config (copied to every sweep job)."""
    return secrets.token_hex(3)


def stack_pin(stack: str, package: str) -> str:
    """MAJOR.MINOR of a package a shipped stack pins (`ascend_mindspeed_bridge`, `megatron-core` -> "0.18"): the
    version matrices are the one place a stack's versions are written."""
    found = stack_ids().get(stack)
    pin = found[1].get("pins", {}).get(package) if found else None
    parts = release(str(pin)) if pin is not None else ()
    if len(parts) < 2:
        raise ValueError(f"the version matrices have no release of {package} for the stack {stack}")
    return f"{parts[0]}.{parts[1]}"


def register_resolvers() -> None:
    """Idempotent: registering into OmegaConf's resolver table is its public extension point."""
    if not OmegaConf.has_resolver("verl_qwen35.verl_config_dir"):
        OmegaConf.register_new_resolver("verl_qwen35.verl_config_dir", lambda: str(verl_config_dir()))
    if not OmegaConf.has_resolver("verl_qwen35.stack_pin"):
        OmegaConf.register_new_resolver("verl_qwen35.stack_pin", stack_pin)
    if not OmegaConf.has_resolver("verl_qwen35.run_id"):
        OmegaConf.register_new_resolver("verl_qwen35.run_id", run_id, use_cache=True)
