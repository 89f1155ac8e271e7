"""Where the tracking backends write: under the run directory (a start keeps the file logger's history:
records/metrics.py keep_file_history).

conf/logger/*.yaml record these variables relative to the run directory (a composed config, `--cfg job` and
the goldens do not depend on where a run goes); the job makes them absolute under its own run directory (a
sweep's job directory) before launch.yaml is written, so launch.yaml's env.set says where a run's logs went.
"""

from pathlib import Path

from omegaconf import DictConfig

from verl_qwen35.config.tracking import PLACE

RUN_DIR_ENV = tuple(PLACE.values())  # the variables naming where a backend writes
SQLITE = "sqlite:///"  # SQLAlchemy's URL: three slashes then a relative path, four for an absolute one


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
