"""launch.yaml: the one record of a launch that `verl-qwen35 relaunch` (and a cluster job) launches again.

It holds the resolved config with the environment that was really used (the shell's values
that won), an absolute checkpoint directory, and the verl schema it was composed for. Secret
values never enter it: secret-looking variables of the shell are named in a note, not recorded.
It is written with mode 600 in a run directory only the user can write (records/private_files.py);
a Slurm job pins its sha256 (`digest`), which the relaunch on the cluster checks. Which values a launch
records (the environment it used, its checkpoint directory made absolute) is the launch's to say
(run/launch_record.py write_launch_file); the file's shape, its writer and its reader are here.
"""

import hashlib
import os
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from verl_qwen35.config.output_paths import writes_outside
from verl_qwen35.config.schema import NODES
from verl_qwen35.config.secrets import redact
from verl_qwen35.config.yaml_files import load_mapping
from verl_qwen35.disk import open_regular
from verl_qwen35.errors import UserError
from verl_qwen35.installed import __version__, installed_verl_schema, installed_verl_version
from verl_qwen35.records.private_files import write_private
from verl_qwen35.shell import comment, quote

LAUNCH_FILE = "launch.yaml"
HEADER = "verl_qwen35"  # the metadata node; the config itself is under `config`


# `${` (after any run of backslashes) in a resolved value: OmegaConf would read it back as an interpolation.
_INTERPOLATION_START = re.compile(r"(\\*)\$\{")


def literal(value: Any) -> Any:
    """A resolved value as OmegaConf must read it back: each `${` escaped (`\\${`, backslashes before it doubled),
    so a shell value like `a${IFS}b` stays that text instead of becoming an interpolation of the record."""
    if isinstance(value, str):
        return _INTERPOLATION_START.sub(lambda m: m.group(1) * 2 + "\\${", value)
    if isinstance(value, dict):
        return {key: literal(item) for key, item in value.items()}
    if isinstance(value, list):
        return [literal(item) for item in value]
    return value


def record(
    cfg: DictConfig, schema: str, used: dict[str, str], not_recorded: list[str], run_dir: str | Path | None = None
) -> dict[str, Any]:
    """The launch record as plain data: metadata, then the resolved config with the env really used (`used`:
    run/environment.py effective_env; `not_recorded`: the shell's secret-looking variables, named only)."""
    config = OmegaConf.to_container(cfg, resolve=True)
    # A variable whose shell value holds credentials is left out (effective_env): the shell passes it on.
    config["env"]["set"] = {name: used[name] for name in config["env"]["set"] if name in used}
    meta: dict[str, Any] = {
        "written_by": f"verl_qwen35 {__version__}",
        "written_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "verl_schema": schema,
        "verl_version": installed_verl_version(),
        "launched_from": os.getcwd(),
        "checkpoint_dir": cfg.trainer.default_local_dir,
        "nnodes": cfg.trainer.nnodes,
        "env_used": used,
        # Every place the run writes outside its run directory, by the key that chose it (a preset's too).
        "writes_outside": writes_outside(cfg, run_dir),
        "secrets_not_recorded": not_recorded,
    }
    if not_recorded:
        meta["note"] = (
            "The launching shell's secret-looking variables listed in secrets_not_recorded reached the run "
            "but their values are not recorded here: export them again (on every node) before relaunching."
        )
    return {HEADER: meta, "config": literal(config)}


def write_record(run_dir: str | Path, data: dict[str, Any]) -> Path:
    """Write `<run_dir>/launch.yaml` (mode 600) holding `data` (`record`), under the line that relaunches it."""
    path = Path(run_dir) / LAUNCH_FILE
    # A comment line per line of the path: a line break in hydra.run.dir cannot end the comment.
    header = comment(f"Relaunch exactly this run: python -m verl_qwen35 relaunch {quote(Path(run_dir).absolute())}")
    write_private(path, redact(header + "\n" + yaml.safe_dump(data, sort_keys=False, allow_unicode=True)))
    return path


def digest(path: Path) -> str:
    """The sha256 of a launch record's bytes, as `sha256sum` prints it."""
    with open_regular(Path(path)) as handle:  # a FIFO swapped in for the record is refused, not waited on
        return hashlib.file_digest(handle, "sha256").hexdigest()


def read_launch_file(path: Path) -> tuple[DictConfig, dict[str, Any]]:
    """The config and metadata of a launch.yaml, or one UserError saying what is wrong with the file."""
    data = load_mapping(path)
    missing = [key for key in (HEADER, "config") if key not in data]
    if missing:
        raise UserError(
            f"{path}: partial launch record, it lacks {' and '.join(missing)} (a launch writes both); "
            "launch again with python -m verl_qwen35 ... to write a new one"
        )
    meta, config = data[HEADER], data["config"]
    if not isinstance(meta, dict) or not isinstance(config, dict) or not config:
        raise UserError(f"{path}: `{HEADER}` and `config` must both be mappings; the file is damaged")
    schema = meta.get("verl_schema")
    if schema != installed_verl_schema():
        raise UserError(
            f"{path}: recorded for verl_schema={schema} (verl {meta.get('verl_version', '?')}) but the installed verl "
            f"{installed_verl_version()} needs {installed_verl_schema()}: relaunch it where verl "
            f"{meta.get('verl_version', '?')} is installed, or launch again with this verl"
        )
    if where := interpolation_in(config, "config"):
        raise UserError(
            f"{path}: {where} holds an interpolation (an unescaped `${{`); a launch record holds resolved values "
            "only (the writer escapes every `${`), so nothing in it is resolved: the file was edited by hand or by "
            "someone else; launch again to write a new one"
        )
    return typed(OmegaConf.create(config), path), meta


# `${` after an even run of backslashes (none included): OmegaConf would resolve it. Linear: the run of
# backslashes is matched once, from the character before it that is not one.
_UNESCAPED = re.compile(r"(?:^|[^\\])(?:\\\\)*\$\{")


def interpolation_in(value: Any, key: str) -> str | None:
    """The first key (dotted, from `key`) of plain data whose string value OmegaConf would resolve, or None."""
    if isinstance(value, dict):
        return next((w for k, v in value.items() if (w := interpolation_in(v, f"{key}.{k}"))), None)
    if isinstance(value, list):
        return next((w for i, v in enumerate(value) if (w := interpolation_in(v, f"{key}[{i}]"))), None)
    return key if isinstance(value, str) and "${" in value and _UNESCAPED.search(value) else None


# OmegaConf's conversion errors quote the value ("Value 'x' of type 'str' could not be converted to Integer").
_VALUE_SHOWN = re.compile(r"[Vv]alue '[^\n]*' of type")


def typed(cfg: DictConfig, path: Path) -> DictConfig:
    """The record with our own nodes typed by the same schema as a composed config (a hand edit is refused)."""
    for name, schema in NODES.items():
        if name not in cfg:
            continue
        try:
            node = OmegaConf.merge(OmegaConf.structured(schema), cfg[name])
        except OmegaConfBaseException as err:
            where = getattr(err, "full_key", None) or name
            reason = _VALUE_SHOWN.sub("a value of type", str(err).splitlines()[0])  # the record's value, not shown
            raise UserError(f"{path}: {name}.{where.removeprefix(name + '.')}: {reason}") from None
        raw = OmegaConf.to_container(node, resolve=False)
        if lacking := [f"{name}.{key}" for key, value in raw.items() if value == "???"]:  # a mandatory key cut
            raise UserError(
                f"{path}: the recorded config lacks {', '.join(lacking)}; launch again to write a whole one"
            )
        cfg[name] = node
    return cfg
