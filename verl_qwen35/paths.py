"""Where our config and verl's config live, found without importing verl (which imports torch)."""

import importlib.util
import secrets
from pathlib import Path

from omegaconf import OmegaConf

_HERE = Path(__file__).resolve().parent


def conf_dir() -> Path:
    """Our conf/: inside the package in a wheel, beside it in a source checkout."""
    for candidate in (_HERE / "conf", _HERE.parent / "conf"):
        if (candidate / "config.yaml").is_file():
            return candidate
    raise FileNotFoundError(f"verl_qwen35: no conf/config.yaml in {_HERE} or {_HERE.parent}")


def verl_config_dir() -> Path:
    """verl's trainer/config directory; find_spec on the top-level name imports nothing."""
    spec = importlib.util.find_spec("verl")
    if spec is None or not spec.submodule_search_locations:
        from verl_qwen35.install import VerlNotInstalled, verl_missing_message

        raise VerlNotInstalled(verl_missing_message())
    path = Path(next(iter(spec.submodule_search_locations))) / "trainer" / "config"
    if not (path / "ppo_trainer.yaml").is_file():
        raise FileNotFoundError(f"verl is installed but {path}/ppo_trainer.yaml is missing")
    return path


def run_id() -> str:
    """A short random tag; with the time it names output directories, so that two runs or sweeps
    started in the same second never share one. Cached per config (and copied to every sweep job)."""
    return secrets.token_hex(3)


def register_resolvers() -> None:
    """Resolvers our config.yaml uses (hydra.searchpath needs verl's directory; run and sweep dirs a run id)."""
    if not OmegaConf.has_resolver("verl_qwen35.verl_config_dir"):
        OmegaConf.register_new_resolver("verl_qwen35.verl_config_dir", lambda: str(verl_config_dir()))
    if not OmegaConf.has_resolver("verl_qwen35.run_id"):
        OmegaConf.register_new_resolver("verl_qwen35.run_id", run_id, use_cache=True)
