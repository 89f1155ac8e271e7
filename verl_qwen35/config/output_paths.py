"""Where a run writes besides its run directory: every config key that names such a place, with its value.

A `--config-dir` preset (someone else's, downloaded) may set these keys like any other verl key; a preset that
chooses where checkpoints or dumped generations go chooses where the run writes. They stay settable (a team
keeps checkpoints on shared storage by a preset), but nothing is written somewhere the user was not shown: the
verdict lists each of them whose place is outside the run directory, naming the key, and the launch record keeps
the list (`writes_outside`). Hydra's own places (`hydra.run.dir`, `hydra.sweep.dir`) are refused in a
`--config-dir` (config/user_conf.py); these are verl's.
"""

from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

# key -> what verl writes there (verl 0.9.1's file that does).
WRITES = {
    "trainer.default_local_dir": "checkpoints (trainer/ppo/ray_trainer.py _save_checkpoint)",
    "trainer.default_hdfs_dir": "checkpoint copies (trainer/ppo/ray_trainer.py _save_checkpoint)",
    "trainer.rollout_data_dir": "rollout generations (trainer/ppo/ray_trainer.py _log_rollout_data)",
    "trainer.validation_data_dir": "validation generations (trainer/ppo/ray_trainer.py _validate)",
    "ray_kwargs.timeline_json_file": "Ray's timeline (trainer/main_ppo.py ray.timeline)",
    "env.set.VERL_FILE_LOGGER_PATH": "the file logger's metrics (utils/tracking.py FileLogger)",
    "env.set.TENSORBOARD_DIR": "TensorBoard events (utils/tracking.py _TensorboardAdapter)",
    "env.set.WANDB_DIR": "wandb's local files",
}
# key -> the key that turns it on: the place is written only when that is set.
WHEN = {
    "global_profiler.save_path": ("global_profiler.steps", "profiles (utils/profiler/config.py save_path)"),
    **{
        f"skip.{part}.dump_dir": (f"skip.{part}.enable", "cached generations (utils/skip/config.py dump_dir)")
        for part in ("rollout", "rollout_tq", "async_rollout")
    },
}


def _get(cfg: DictConfig, key: str) -> Any:
    try:
        return OmegaConf.select(cfg, key, default=None)
    except Exception:  # an interpolation that cannot resolve: the preflight names it; here it writes nowhere known
        return None


def _outside(value: str, run_dir: Path | None) -> bool:
    if "://" in value:  # hdfs://, s3://: another machine's storage
        return True
    place = Path(value).expanduser().absolute()
    return run_dir is None or not place.is_relative_to(run_dir.absolute())


def writes_outside(cfg: DictConfig, run_dir: str | Path | None) -> dict[str, str]:
    """key -> the place (as the config gives it) for every place the run writes outside `run_dir`."""
    root = Path(run_dir) if run_dir else None
    found = {}
    for key in [*WRITES, *WHEN]:
        if key in WHEN and not _get(cfg, WHEN[key][0]):
            continue
        value = _get(cfg, key)
        if isinstance(value, str) and value and _outside(value, root):
            found[key] = value
    return found


def writes_lines(cfg: DictConfig, run_dir: str | Path | None) -> list[str]:
    """The verdict's lines: one a place outside the run directory, with the key that sets it and what goes there."""
    lines = []
    for key, value in writes_outside(cfg, run_dir).items():
        what = WRITES.get(key) or WHEN[key][1]
        shown = value if "://" in value else str(Path(value).expanduser().absolute())
        lines.append(f"writes     {shown} ({key}: {what.split(' (')[0]}), outside the run directory")
    return lines
