"""What every submission backend is and shares: the one object its module exposes, its refusal, the device
resource, the command the cluster runs."""

import shlex
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from omegaconf import DictConfig

from verl_qwen35.checks.problem import Problem

# submit(cfg, run_dir, dry, write_launch_file) -> the job id, or None in a dry run (run/submit/__init__.py submit).
Submitter = Callable[[DictConfig, Path, bool, Callable[[], Path]], str | None]


def no_problems(cfg: DictConfig, *args: object) -> list[Problem]:
    return []


@dataclass(frozen=True)
class Backend:
    """A submission backend: what `verl_qwen35/run/submit/<name>.py` exposes as `BACKEND`, picked with
    `submit=<name>` (conf/submit/<name>.yaml). The registry (config/backends.py) finds it; nothing else names it.

    A backend is stopped as every one is (run/submit/__init__.py runs `submit` inside one `stoppable` section)
    and relaunched as every one is: what it starts on the cluster is `relaunch_argv`, the run directory's
    launch.yaml. docs/extending.md, "A submission backend", says how to add one."""

    # The option's name: conf/submit/<name>.yaml sets `backend: <name>`, this module is run/submit/<name>.py.
    name: str
    # The typed node conf/submit/<name>.yaml extends (`/verl_qwen35_schema/submit_<name>@_here_`): a dataclass
    # whose `backend` is `name`; OmegaConf refuses a wrong type or an unknown key while composing.
    options: type
    # Its values' problems in the preflight, each naming its `submit.*` key (pure: nothing runs, nothing is written).
    problems: Callable[[DictConfig], list[Problem]] = no_problems
    # What it would refuse about the run directory Hydra chose (known once the run starts), in the verdict.
    run_dir_problems: Callable[[DictConfig, Path], list[Problem]] = no_problems
    # Writes what it submits (after write_launch_file) and submits it; None: the run launches here (submit=none).
    submit: Submitter | None = None


class SubmitError(Exception):
    """A submission that cannot go ahead; the message names the key or command to change (exit 2)."""


def ray_device(cfg: DictConfig) -> tuple[str, int]:
    """The Ray resource verl asks for, and how many a node has.

    verl places its workers on Ray's "NPU" resource on Ascend and "GPU" elsewhere
    (verl/single_controller/ray/base.py, and verl 0.9's verl/plugin/platform/platform_npu.py).
    """
    from verl_qwen35.model.layout import device_of  # `--cfg job` loads the backends, not the model

    return ("NPU" if device_of(cfg) == "npu" else "GPU"), int(cfg.trainer.n_gpus_per_node)


def relaunch_argv(cfg: DictConfig, run_dir: str) -> list[str]:
    """The command the cluster runs: `<submit.python> -m verl_qwen35 relaunch <run dir>`."""
    return [*shlex.split(cfg.submit.python), "-m", "verl_qwen35", "relaunch", run_dir]
