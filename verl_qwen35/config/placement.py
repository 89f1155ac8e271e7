"""Where a run's checkpoints and logs go: made absolute under its run directory, a sweep job's under its own.

verl resolves a relative `trainer.default_local_dir` and the tracking backends' relative directories against
the directory it starts in, which for every run and every job of a sweep is the same launch directory; the
builder of a `Run` (builder/build.py) makes them absolute on its own copy of the config, before resolution.
"""

from pathlib import Path

from omegaconf import DictConfig

from verl_qwen35.config.tracking import PLACE

RUN_DIR_ENV = tuple(PLACE.values())  # the variables naming where a backend writes
SQLITE = "sqlite:///"  # SQLAlchemy's URL: three slashes then a relative path, four for an absolute one


def absolute_checkpoint_dir(cfg: DictConfig) -> str | None:
    """verl's default `checkpoints/<project>/<experiment>` is relative to where it was started; fix it now.
    A value that is no path is left as it is for the preflight to name (checks/trainer.py)."""
    value = cfg.trainer.get("default_local_dir")
    if not isinstance(value, str) or not value:
        return None
    path = str(Path(value).expanduser().absolute())
    if cfg.trainer.default_local_dir != path:  # a Run's (read-only) config has it absolute already
        cfg.trainer.default_local_dir = path
    return path


def under(run_dir: Path, name: str, value: str) -> str:
    """`value` of variable `name` made absolute under `run_dir`; an absolute path or a server URI is kept."""
    if name == "MLFLOW_TRACKING_URI":
        if value.startswith(SQLITE) and not value.startswith(SQLITE + "/"):
            return SQLITE + str(run_dir / value.removeprefix(SQLITE))
        if "://" in value or ":" in value.split("/", 1)[0]:  # a server (http://...), file:..., databricks ...
            return value
    path = Path(value).expanduser()
    return str(path if path.is_absolute() else run_dir / path)


def absolute_tracking_env(cfg: DictConfig, run_dir: str | Path | None) -> dict[str, str]:
    """Make each run-directory-relative tracking variable of `env.set` absolute under `run_dir` (the cwd
    outside Hydra); return the changed ones. Like `absolute_checkpoint_dir`: verl would resolve them where it
    starts, which for every run and every job of a sweep is the same launch directory."""
    base = Path(run_dir or ".").absolute()
    changed = {}
    for name in RUN_DIR_ENV:
        if name in cfg.env.set:
            value = str(cfg.env.set[name])
            if (absolute := under(base, name, value)) != value:
                cfg.env.set[name] = changed[name] = absolute
    return changed


def separate_sweep_job(cfg: DictConfig, tag: str, output_dir: str) -> None:
    """In a sweep, each job checkpoints into its own output directory under its own run name (`tag`:
    run/sweep.py `job_tag`, unique across jobs and sweeps)."""
    cfg.trainer.experiment_name = f"{cfg.trainer.experiment_name}_{tag}"
    cfg.trainer.default_local_dir = str(Path(output_dir) / "checkpoints")
