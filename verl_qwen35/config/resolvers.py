"""The resolvers conf/config.yaml uses: verl's config directory (its search path) and a run id."""

import secrets

from omegaconf import OmegaConf

from verl_qwen35.installed import verl_config_dir


def run_id() -> str:
    """A short random tag; with the time it names output directories, so that two runs or sweeps
    started in the same second never share one. Resolved once per config (copied to every sweep job)."""
    return secrets.token_hex(3)


def register_resolvers() -> None:
    """Idempotent: registering into OmegaConf's resolver table is its public extension point."""
    if not OmegaConf.has_resolver("verl_qwen35.verl_config_dir"):
        OmegaConf.register_new_resolver("verl_qwen35.verl_config_dir", lambda: str(verl_config_dir()))
    if not OmegaConf.has_resolver("verl_qwen35.run_id"):
        OmegaConf.register_new_resolver("verl_qwen35.run_id", run_id, use_cache=True)
