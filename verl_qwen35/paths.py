"""Where our config and verl's config live, found without importing verl (which imports torch)."""

import importlib.util
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
        from verl_qwen35.install import verl_missing_message

        raise ModuleNotFoundError(verl_missing_message())
    path = Path(next(iter(spec.submodule_search_locations))) / "trainer" / "config"
    if not (path / "ppo_trainer.yaml").is_file():
        raise FileNotFoundError(f"verl is installed but {path}/ppo_trainer.yaml is missing")
    return path


def register_resolvers() -> None:
    """Resolvers our config.yaml uses (hydra.searchpath needs verl's directory)."""
    if not OmegaConf.has_resolver("verl_qwen35.verl_config_dir"):
        OmegaConf.register_new_resolver("verl_qwen35.verl_config_dir", lambda: str(verl_config_dir()))
