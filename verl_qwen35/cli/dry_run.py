"""A plain dry run, composed once in this process: no run directory, no second composition.

`@hydra.main` composes the whole config twice before a job starts: once to read `hydra.mode`
(hydra/_internal/utils.py `_run_hydra` -> `Hydra.get_mode`) and once to run it (`Hydra.run`), then
makes the run directory and writes `.hydra/`. A dry run needs neither the second composition (about a
quarter of its time) nor the directory (a first hour of dry runs left dozens under `outputs/`). So a dry
run whose command line and config ask nothing of Hydra's run machinery is composed once with Hydra's
compose API (`verl_qwen35.config.compose`, the composition `plan` and `estimate` use; it runs the same
pre-write checks Hydra's callback runs) and its job is called here. Everything else goes to
`@hydra.main` as before: a launch, a sweep (`-m`), a submission (its files are written into the run
directory), Hydra's flags (`--cfg`, `--info`, `-cn`, ...), any `hydra.*` override or `hydra/` group
(`hydra.run.dir=DIR` asks for a directory: the dry run then writes its verdict.json there), a sweep
value without `-m` (Hydra's own message), and any composition that fails (Hydra's path names it).
"""

import os

from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import OmegaConf, open_dict, read_write
from omegaconf.errors import OmegaConfBaseException

from verl_qwen35.cli import help
from verl_qwen35.config import compose
from verl_qwen35.config.overrides import parse_overrides
from verl_qwen35.errors import UserError

# Flags with a value that change nothing of the run; any other flag is Hydra's to serve.
VALUE_FLAGS = ("--config-dir", "-cd")
DRY = (True, "full")


def overrides_only(argv: list[str]) -> list[str] | None:
    """argv's overrides when it holds nothing but overrides and `--config-dir DIR`; None otherwise."""
    out, skip = [], False
    for arg in argv:
        if skip:
            skip = False
        elif arg in VALUE_FLAGS:
            skip = True
        elif arg.startswith("-"):
            return None
        else:
            out.append(arg)
    return out


def asks_nothing_of_hydra(overrides: list[str]) -> bool:
    """No `hydra.*` key, no `hydra/` group and no sweep value: the run machinery would add nothing."""
    try:
        parsed = parse_overrides(overrides)
    except UserError:
        return False  # Hydra's path names the line
    return not any(o.key_or_group.split(".")[0].split("/")[0] == "hydra" or o.is_sweep_override() for o in parsed)


def run_in_process(argv: list[str]) -> bool:
    """Run argv's dry run here when it is a plain one (the module docstring says which); False to leave
    the command to `@hydra.main`, having changed nothing."""
    overrides = overrides_only(argv)
    if overrides is None or not asks_nothing_of_hydra(overrides):
        return False
    try:
        cfg = compose(overrides, help.config_dirs(argv), hydra_node=True)
        hydra = cfg.hydra
        plain = (
            OmegaConf.select(cfg, "dry_run") in DRY
            and cfg.submit.backend == "none"
            and hydra.mode in (None, RunMode.RUN)
            and not hydra.job.chdir
            and not hydra.job.env_set
        )
        # The directory a launch composed now would get (`${now:}` and the run id resolve as in Hydra's run_job).
        output_dir = os.path.abspath(str(OmegaConf.select(cfg, "hydra.run.dir")))
    except (UserError, OmegaConfBaseException, ValueError, AttributeError, KeyError):
        return False  # Hydra's path composes again and says what is wrong in its own words
    if not plain:
        return False
    with read_write(hydra.runtime), open_dict(hydra.runtime):
        hydra.runtime.output_dir = output_dir
    HydraConfig.instance().set_config(cfg)  # as Hydra's run_job does: `${hydra:...}` and the job's sources read it
    from verl_qwen35.cli.picture import job_and_picture  # the job's modules: a dry run's only (as in hydra_main)

    choices = dict(hydra.runtime.choices)
    with open_dict(cfg):
        del cfg["hydra"]
    job_and_picture(cfg, choices, output_dir, record=False)
    return True
