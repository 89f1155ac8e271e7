"""The logger group (conf/logger/) against what verl's Tracking and the backends will really do.

Upstream: verl/utils/tracking.py `Tracking.__init__` (verl 0.8.0 and 0.9.1) starts each backend of
`trainer.logger` and reads its settings from the environment only: wandb.init(entity=$WANDB_ENTITY) with wandb
reading WANDB_MODE and WANDB_DIR itself (wandb/sdk/wandb_settings.py `mode`: online syncs; offline, dryrun and
disabled never do), swanlab.init(logdir=$SWANLAB_LOG_DIR, mode=$SWANLAB_MODE, default "cloud") after
swanlab.login($SWANLAB_API_KEY) when that is set.
"""

from collections.abc import Mapping

from omegaconf import DictConfig, OmegaConf

from verl_qwen35.checks.problem import Problem, warning
from verl_qwen35.config.tracking import MODE

# The modes that mean "syncs over the network" (swanlab's settings map its
# older "cloud" to "online": swanlab/sdk/internal/settings/__init__.py validate_mode, v0.9.7).
ONLINE = {"wandb": ("online", "run"), "swanlab": ("cloud", "online")}
# The logger option for each backend, online or not.
OPTION = {
    ("wandb", True): "wandb",
    ("wandb", False): "wandb_offline",
    ("swanlab", True): "swanlab",
    ("swanlab", False): "swanlab_local",
}


def chosen(cfg: DictConfig) -> list[str] | None:
    """The backends the logger group chose, in order; None for a config without the group (a hand-made one)."""
    node = cfg.get("logger")
    return [str(k) for k in node] if OmegaConf.is_dict(node) else None


def backends(cfg: DictConfig) -> list[str]:
    """`trainer.logger` as verl's Tracking reads it (a name or a list of names)."""
    value = cfg.trainer.get("logger") or []
    return [value] if isinstance(value, str) else [str(v) for v in value]


def _online(backend: str, mode: object) -> bool:
    return str(mode) in ONLINE[backend]


# The variable each online backend reads its key from (a shell value or a saved login; never the config).
KEY = {"wandb": "WANDB_API_KEY", "swanlab": "SWANLAB_API_KEY"}


def syncs(cfg: DictConfig, backend: str) -> bool:
    """Whether a backend syncs over the network, by the mode env.set gives it; without one, the backend's own default
    (wandb: online, swanlab: cloud)."""
    return backend in ONLINE and _online(backend, cfg.env.set.get(MODE[backend], ONLINE[backend][0]))


def local_options(cfg: DictConfig) -> list[str]:
    """The logger options (conf/logger/) of trainer.logger's backends, each that syncs replaced by its offline one."""
    return [OPTION[(b, False)] if b in ONLINE else b for b in backends(cfg)]


def tracking_problems(cfg: DictConfig) -> list[Problem]:
    """trainer.logger set past the group, and a backend's mode in env.set contradicting the option chosen."""
    group = chosen(cfg)
    if group is None:
        return []
    found = []
    used = backends(cfg)
    if used != group:
        said, chose = ",".join(used), ",".join(group)
        found.append(
            warning(
                "trainer.logger",
                f"trainer.logger=[{said}] replaces the logger group's [{chose}]: a backend it adds writes where verl "
                "puts it by default (relative to where verl starts), not under the run directory; choose "
                f"logger=[{','.join(used)}] instead (conf/logger/: console, file, tensorboard, wandb, wandb_offline, "
                "swanlab, swanlab_local, mlflow), which also sets where each writes",
            )
        )
    env = cfg.env.get("set") or {}
    for backend, variable in MODE.items():
        node = cfg.logger.get(backend)
        if not OmegaConf.is_dict(node) or "mode" not in node or variable not in env:
            continue
        option_online, env_online = _online(backend, node.mode), _online(backend, env[variable])
        if option_online != env_online:
            option, other = OPTION[(backend, option_online)], OPTION[(backend, env_online)]
            found.append(
                warning(
                    (f"env.set.{variable}", "logger"),
                    f"logger={option} logs {'online' if option_online else 'offline'} but env.set.{variable}="
                    f"{env[variable]}, which {backend} obeys: choose logger={other} (or drop env.set.{variable})",
                )
            )
    return found


def swanlab_login_problems(cfg: DictConfig, environ: Mapping[str, str]) -> list[Problem]:
    """At launch: swanlab online with no SWANLAB_API_KEY in the launching shell (a property of the machine).

    swanlab.init in online mode with no key and no saved login asks on a terminal or raises ("Failed to
    initialize SwanLab in online mode: no API key was provided", swanlab/sdk/cmd/init.py at v0.9.7); verl's trainer runs
    in a Ray actor, which has no terminal. A saved `swanlab login` on that node also works, so a warning."""
    if "swanlab" not in backends(cfg):
        return []
    mode = environ.get("SWANLAB_MODE") or (cfg.env.get("set") or {}).get("SWANLAB_MODE") or "cloud"
    if not _online("swanlab", mode) or environ.get("SWANLAB_API_KEY"):
        return []
    return [
        warning(
            "logger",
            f"swanlab logs online (SWANLAB_MODE={mode}) but SWANLAB_API_KEY is not set in this shell: without a "
            "saved `swanlab login` on the node that runs verl's trainer, swanlab.init stops the run; export "
            "SWANLAB_API_KEY on every node before `ray start`, or choose logger=swanlab_local (offline, under the "
            "run directory) [machine check]",
        )
    ]
