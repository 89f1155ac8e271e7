"""The one composition path: Hydra composes conf/ over verl's own config, with the checks before writing.

Every command and every test composes through `compose` (in-process, Hydra's compose API) or through
the command's `@hydra.main` (the same conf/config.yaml, whose callback runs the same checks).
"""

from collections.abc import Sequence
from pathlib import Path

from hydra import compose as hydra_compose
from hydra import initialize_config_dir
from omegaconf import DictConfig

from verl_qwen35.config.choices import implicit_overrides
from verl_qwen35.config.errors import explain
from verl_qwen35.config.prewrite import check_before_writing
from verl_qwen35.config.resolvers import register_resolvers
from verl_qwen35.config.schema import register_schema
from verl_qwen35.config.sources import SCHEME, register_sources
from verl_qwen35.errors import UserError
from verl_qwen35.installed import conf_dir, verl_config_dir

__all__ = ["compose"]


def compose(
    overrides: Sequence[str] = (),
    config_dirs: Sequence[Path | str] = (),
    announce: bool = False,
    hydra_node: bool = False,
) -> DictConfig:
    """The job config (unresolved; without Hydra's `hydra` node unless `hydra_node`) for these overrides.

    `config_dirs`: what `--config-dir DIR` adds on the command line, checked the same way and put
    on Hydra's search path after ours and verl's. A user mistake raises `UserError` naming the key."""
    register_resolvers()
    register_schema()
    register_sources()
    dirs = [Path(d) for d in config_dirs]
    lines = [*implicit_overrides(list(overrides), announce=announce, config_dirs=dirs), *overrides]
    check_before_writing(lines, dirs, None)
    if dirs:
        # conf/config.yaml's searchpath (verl's configs), then the user's directories.
        paths = [f"{SCHEME}://{verl_config_dir()}", *(f"file://{d.resolve()}" for d in dirs)]
        lines.append(f"hydra.searchpath=[{','.join(paths)}]")
    try:
        with initialize_config_dir(str(conf_dir()), version_base=None, job_name="verl_qwen35"):
            cfg = hydra_compose("config", overrides=lines, return_hydra_config=hydra_node)
    except Exception as err:  # Hydra's, OmegaConf's and YAML's mistakes, said as the command says them
        if (message := explain(err)) is None:
            raise
        raise UserError(message) from err
    check_before_writing([], (), cfg)  # what the files and interpolations brought in
    return cfg
