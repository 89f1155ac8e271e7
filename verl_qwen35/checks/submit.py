"""The `submit.*` values, checked in the preflight before anything is written or submitted.

`submit=slurm` puts these values into `job.sbatch`: the `#SBATCH` lines (which Slurm splits at
whitespace, sbatch/opt.c), shell arrays and assignments. The settings block shell-quotes
every value (verl_qwen35/shell.py, the one writer of shell), so a value like `$(rm -rf ~)` stays
data; what is refused here is what would still break the script or the job: a line break (a new
line of shell or a new `#SBATCH` line), whitespace or quotes in an `#SBATCH` value, a variable
name of `env.set`/`env.unset` that is not one (it would be written unquoted, as `export NAME=`),
a comma inside one mount (pyxis' `--container-mounts` separator), ports and timeouts that are
not numbers, and a `submit.address` Ray's JobSubmissionClient cannot reach. `submit.setup` is
shell by design. Types are the schema's (config/schema.py). Pure checks: no Ray, no Slurm command runs here.
"""

import re
import shlex
from typing import Any
from urllib.parse import urlsplit

from omegaconf import DictConfig, ListConfig, OmegaConf

from verl_qwen35 import shell
from verl_qwen35.checks.problem import Problem, error
from verl_qwen35.config.backends import backends, named

# Slurm's --time formats (sbatch(1)): minutes, minutes:seconds, hours:minutes:seconds,
# days-hours, days-hours:minutes, days-hours:minutes:seconds; or no limit.
_SLURM_TIME = re.compile(r"^(\d+(:\d{1,2}){0,2}|\d+-\d+(:\d{1,2}){0,2}|UNLIMITED|INFINITE)$", re.IGNORECASE)
# A value that goes into an `#SBATCH` line or a `--container-*` option as one word.
_WORD = re.compile(r"^[^\s'\"\\`$;|&<>#]+$")
# RAY_AUTH_MODE's values (ray/_private/authentication/authentication_token_setup.py, AUTH_MODE_ENV_VAR).
RAY_AUTH_MODES = ("token", "disabled")
_INTERFACE = re.compile(r"^[A-Za-z0-9_.:@-]+$")


def _text(key: str, value: Any, found: list[Problem], optional: bool = True, word: bool = True) -> None:
    if value is None and optional:
        return
    if not isinstance(value, str) or not value:
        found.append(error(key, f"{key}={value!r}: must be a non-empty string{' or null' if optional else ''}"))
    elif word and not _WORD.match(value):
        found.append(
            error(key, f"{key}={value!r}: must be one word without spaces, quotes or shell characters ($`;|&<>#\\)")
        )
    elif any(ord(c) < 32 for c in value):
        found.append(error(key, f"{key}={value!r}: must not hold a line break or another control character"))


def _strings(key: str, value: Any, found: list[Problem], word: bool = True) -> list[str]:
    if not isinstance(value, list | ListConfig):
        found.append(error(key, f"{key}={value!r}: must be a list, e.g. {key}=[a,b] (or [] for none)"))
        return []
    for i, item in enumerate(value):
        _text(f"{key}[{i}]", item, found, optional=False, word=word)
    return [item for item in value if isinstance(item, str)]


def _integer(key: str, value: Any, found: list[Problem], low: int, high: int | None = None) -> None:
    ok = isinstance(value, int) and not isinstance(value, bool) and value >= low and (high is None or value <= high)
    if not ok:
        bound = f"between {low} and {high}" if high is not None else f">= {low}"
        found.append(error(key, f"{key}={value!r}: must be an integer {bound}"))


def _python(s: DictConfig, found: list[Problem]) -> None:
    value = s.get("python")
    _text("submit.python", value, found, optional=False, word=False)
    if isinstance(value, str) and value:
        try:
            if not shlex.split(value):
                found.append(error("submit.python", f"submit.python={value!r}: names no command"))
        except ValueError as err:
            found.append(
                error("submit.python", f"submit.python={value!r}: {err} (a command line, e.g. 'uv run python')")
            )


def _address(value: Any, found: list[Problem]) -> None:
    """The head's dashboard URL, what ray.job_submission.JobSubmissionClient talks HTTP to.

    Other forms it takes (`auto`, `host:port` of the GCS, `ray://`) go through a Ray driver
    connection that waits for a GCS and fails with an RpcError after a long timeout."""
    key, example = "submit.address", "e.g. submit.address=http://head:8265 (the head's dashboard, `ray start --head`)"
    if not isinstance(value, str) or not value or any(c.isspace() or ord(c) < 32 for c in value):
        found.append(error(key, f"{key}={value!r}: must be the Ray dashboard's URL, {example}"))
        return
    parts = urlsplit(value)
    try:
        port_ok = parts.port is None or 0 < parts.port < 65536
    except ValueError:
        port_ok = False
    if parts.scheme not in ("http", "https") or not parts.hostname or not port_ok:
        found.append(error(key, f"{key}={value!r}: not an http:// or https:// URL with a host and port; {example}"))


def env_problems(cfg: DictConfig) -> list[Problem]:
    """`env.set` names and `env.unset` entries that are not variable names, values no environment can hold.

    Every launch exports them (os.environ, Ray's runtime_env) and job.sbatch writes `export NAME=...` and
    `unset NAME` with the name as is: `X$(touch M)` from a preset would run there."""
    env = cfg.get("env")
    if not OmegaConf.is_dict(env):
        return []
    found: list[Problem] = []
    values = env.get("set")
    for name, value in values.items() if OmegaConf.is_dict(values) else []:
        if why := shell.variable_problem(name):
            found.append(error("env.set", f"env.set: {why}; rename it in the preset or override that sets it"))
        elif why := shell.value_problem(value):
            found.append(error(f"env.set.{name}", f"env.set.{name} {why}"))
    names = env.get("unset")
    for i, name in enumerate(names if OmegaConf.is_list(names) else []):
        if why := shell.variable_problem(name):
            found.append(error(f"env.unset[{i}]", f"env.unset[{i}]: {why}; list only variable names to clear"))
    return found


def _ray_host(value: Any, found: list[Problem]) -> None:
    key = "submit.ray.dashboard_host"
    if value is not None and not (isinstance(value, str) and _INTERFACE.match(value)):
        found.append(
            error(key, f"{key}={value!r}: an address to bind, e.g. 127.0.0.1 (the head only) or null (its address)")
        )


def slurm_problems(cfg: DictConfig) -> list[Problem]:
    """Every unusable `submit.*` value of submit=slurm (run/submit/slurm.py), each naming its key."""
    found: list[Problem] = []
    _slurm(cfg.submit, found)
    _chain(cfg, found)
    return found


def ray_job_problems(cfg: DictConfig) -> list[Problem]:
    """submit=ray_job's address (run/submit/ray_job.py)."""
    found: list[Problem] = []
    _address(cfg.submit.get("address"), found)
    return found


def _slurm(s: DictConfig, found: list[Problem]) -> None:
    for name in ("partition", "account", "container"):
        _text(f"submit.{name}", s.get(name), found)
    job_name = s.get("job_name")
    if job_name is not None and (why := shell.job_name_problem(job_name)):
        found.append(error("submit.job_name", f"submit.job_name={why} (null: from trainer.experiment_name)"))
    time = s.get("time")
    if time is not None and not (
        (isinstance(time, int) and not isinstance(time, bool) and time > 0)
        or (isinstance(time, str) and _SLURM_TIME.match(time))
    ):
        found.append(
            error("submit.time", f"submit.time={time!r}: use Slurm's --time format, e.g. 90, 4:00:00 or 2-00:00:00")
        )
    if s.get("cpus_per_node") is not None:
        _integer("submit.cpus_per_node", s.cpus_per_node, found, 1)
    for option in _strings("submit.sbatch", s.get("sbatch"), found, word=False):
        if not option.startswith("-") or shell.sbatch_problem(option):
            found.append(
                error(
                    "submit.sbatch",
                    f"submit.sbatch entry {option!r}: one sbatch option per entry, e.g. '--qos=high' (no whitespace, "
                    "quotes or '#': Slurm splits and cuts `#SBATCH` lines there)",
                )
            )
    _strings("submit.setup", s.get("setup"), found, word=False)  # shell lines, by design
    for mount in _strings("submit.mounts", s.get("mounts"), found):
        if "," in mount or ":" not in mount:
            found.append(
                error("submit.mounts", f"submit.mounts entry {mount!r}: one host:container pair per entry, no comma")
            )
    ray = s.ray
    ports = {}
    for name in ("port", "dashboard_port", "client_server_port"):
        _integer(f"submit.ray.{name}", ray.get(name), found, 1, 65535)
        ports.setdefault(ray.get(name), []).append(f"submit.ray.{name}")
    for keys in (keys for keys in ports.values() if len(keys) > 1):
        found.append(error(tuple(keys), f"{' and '.join(keys)} are the same port; Ray needs a different one for each"))
    _integer("submit.ray.wait_timeout", ray.get("wait_timeout"), found, 1)
    _ray_host(ray.get("dashboard_host"), found)
    if (mode := ray.get("auth_mode")) not in RAY_AUTH_MODES:
        key = "submit.ray.auth_mode"
        found.append(error(key, f"{key}={mode!r}: use token (Ray's token authentication) or disabled"))
    _text("submit.ray.temp_dir", ray.get("temp_dir"), found)
    interface = ray.get("interface")
    if interface is not None and not (isinstance(interface, str) and _INTERFACE.match(interface)):
        found.append(
            error("submit.ray.interface", f"submit.ray.interface={interface!r}: a network interface, e.g. ib0")
        )
    for name in ("head_args", "worker_args"):
        _strings(f"submit.ray.{name}", ray.get(name), found, word=False)


MAX_CHAIN = 100  # a bound on what one submission queues


def _chain(cfg: DictConfig, found: list[Problem]) -> None:
    """A chain resumes each job from the last one's checkpoints: verl's trainer.resume_mode=auto
    (verl/trainer/ppo/ray_trainer.py `_load_checkpoint`: `disable` starts over, `resume_path` reloads one step)."""
    chain = cfg.submit.get("chain")
    _integer("submit.chain", chain, found, 1, MAX_CHAIN)
    mode = OmegaConf.select(cfg, "trainer.resume_mode", default="auto")
    if isinstance(chain, int) and chain > 1 and mode != "auto":
        found.append(
            error(
                ("trainer.resume_mode", "submit.chain"),
                f"submit.chain={chain} but trainer.resume_mode={mode!r}: each job of a chain must resume from the "
                "checkpoints of the one before; set trainer.resume_mode=auto",
            )
        )


def choices() -> str:
    """`submit=kuberay, submit=ray_job, submit=slurm or submit=none`, from the table of backends."""
    submitting = [f"submit={name}" for name, b in backends().items() if b.submit is not None]
    return f"{', '.join(submitting)} or submit=none"


def submit_problems(cfg: DictConfig) -> list[Problem]:
    """Every unusable `submit.*` value of a submitting config, each naming its key: the backend's own checks."""
    found = env_problems(cfg)
    s = cfg.get("submit")
    if s is None:
        return found
    chosen = named(s.get("backend"))
    if chosen is None:
        return [*found, error("submit.backend", f"submit.backend={s.get('backend')!r}: use {choices()}")]
    if chosen.submit is None:
        return found
    # secrets in these values: config/secrets.py, before Hydra writes anything
    if "python" in s:  # the relaunch's Python on the cluster (run/submit/base.py relaunch_argv)
        _python(s, found)
    return found + chosen.problems(cfg)
