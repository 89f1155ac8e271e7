"""Checks of this machine's files: the data parquet files and a local model directory.

They depend on where they run: a dry run on a laptop or in CI for a cluster config warns
about a missing file; a launch, or `dry_run=full`, refuses it.
"""

import importlib.util
import os
import shlex
from functools import cache
from pathlib import Path

from omegaconf import DictConfig, ListConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from verl_qwen35.checks.problem import Level, Problem
from verl_qwen35.config.yaml_files import load_json_object, load_yaml
from verl_qwen35.errors import UserError
from verl_qwen35.installed import conf_dir

PREPARE = "verl-qwen35 data --out {dir}"
# What `verl-qwen35 data --out DIR` writes into DIR (cli/data.py), for data.train_files and data.val_files.
DATA_FILES = {"data.train_files": "train.parquet", "data.val_files": "test.parquet"}
# A missing file only matters where the job runs: say so when it is merely a warning.
ON_THIS_MACHINE = " [machine check: an error at launch and with dry_run=full]"


def _where(level: Level) -> str:
    return ON_THIS_MACHINE if level == "warning" else ""


# HF config.json (text_config) field -> our model fact.
ARCH_FIELDS = {
    "num_hidden_layers": "num_layers",
    "hidden_size": "hidden_size",
    "num_attention_heads": "num_attention_heads",
    "num_key_value_heads": "num_key_value_heads",
    "num_experts": "num_experts",
    "num_experts_per_tok": "num_experts_per_tok",
    "moe_intermediate_size": "moe_intermediate_size",
    "linear_num_key_heads": "linear_num_key_heads",
    "linear_num_value_heads": "linear_num_value_heads",
}


def required_columns(cfg: DictConfig) -> list[str]:
    """What verl's RLHFDataset and reward loop read from every row."""
    return [cfg.data.get("prompt_key", "prompt"), "data_source", "reward_model"]


def _paths(value: str | ListConfig) -> list[str]:
    return [value] if isinstance(value, str) else list(value)


def preset_data_file(key: str) -> Path:
    """The file `key` names as conf/config.yaml sets it (`${oc.env:HOME}/data/geo3k/...`, this shell's HOME): the
    geo3k example data `verl-qwen35 data` downloads."""
    raw = _shipped_data()[key.split(".")[1]]
    return Path(os.path.normpath(str(OmegaConf.create({"value": raw}).value)))


@cache
def _shipped_data() -> dict:
    """conf/config.yaml's `data` node as shipped (read once a process: the package's own file)."""
    return load_yaml(conf_dir() / "config.yaml")["data"]


def missing_advice(key: str, file: Path) -> str:
    """The geo3k download for the preset's own example file; for a file of the user's own, the key to correct."""
    try:
        preset = preset_data_file(key)
    except OmegaConfBaseException:  # the preset's path reads HOME, which is not set: not the preset's file
        preset = None
    if Path(os.path.normpath(file.expanduser().absolute())) == preset:
        return f"prepare it with: {PREPARE.format(dir=shlex.quote(str(file.parent)))}"
    relative = "" if file.is_absolute() or str(file).startswith("~") else f" (read from {Path.cwd()})"
    return f"correct the path {key} gives{relative}"


def data_problems(cfg: DictConfig, missing: Level) -> list[Problem]:
    found = []
    columns = required_columns(cfg)
    for key in ("data.train_files", "data.val_files"):
        for path in _paths(cfg.data[key.split(".")[1]]):
            file = Path(path)
            if not file.is_file():
                advice = missing_advice(key, file)
                found.append(Problem(missing, (key,), f"{path} does not exist; {advice}{_where(missing)}"))
                continue
            found += _parquet_problems(key, file, columns)
    return found


def _parquet_problems(key: str, file: Path, columns: list[str]) -> list[Problem]:
    if importlib.util.find_spec("pyarrow") is None:  # a config-only install; verl's runtime brings it
        return [Problem("warning", (key,), f"pyarrow is not installed here: the columns of {file} are not checked")]
    import pyarrow.parquet as pq  # only when a file exists: pyarrow costs ~0.3 s to import

    try:
        names = set(pq.read_schema(file).names)
    except Exception as err:  # pyarrow raises several types for a non-parquet file
        return [Problem("error", (key,), f"{file} is not a readable parquet file ({err})")]
    absent = [c for c in columns if c not in names]
    if absent:
        return [
            Problem(
                "error",
                (key, "data.prompt_key"),
                f"{file} lacks column(s) {absent} that verl's RL dataset reads (has: {sorted(names)})",
            )
        ]
    return []


def _looks_like_hub_id(path: str) -> bool:
    return path.count("/") == 1 and not path.startswith((".", "/", "~"))


def model_path_problems(cfg: DictConfig, missing: Level) -> list[Problem]:
    if cfg.actor_rollout_ref.model.path is None:
        return []  # checks/startup.py path_problems refuses it
    key, path = "actor_rollout_ref.model.path", str(cfg.actor_rollout_ref.model.path)
    directory = Path(path).expanduser()
    if not directory.is_dir():
        if _looks_like_hub_id(path):
            return []
        return [
            Problem(
                missing,
                (key,),
                f"{path} is neither a local directory nor a hub id like {cfg.model.hf_id}{_where(missing)}",
            )
        ]
    config_file = directory / "config.json"
    if not config_file.is_file():
        return [Problem("error", (key,), f"{directory} has no config.json; is it a Hugging Face model directory?")]
    try:  # transformers' PretrainedConfig.from_json_file reads the same file as a JSON object
        hf = load_json_object(config_file)
    except UserError as err:
        return [Problem("error", (key,), f"{err} (or set {key} to another model directory)")]
    text = hf.get("text_config", hf)
    if not isinstance(text, dict):
        return [Problem("error", (key,), f"{config_file}: text_config is not an object of keys; the file is damaged")]
    wrong = [
        f"{field}={text[field]} (preset {cfg.model.name}: {cfg.model[fact]})"
        for field, fact in ARCH_FIELDS.items()
        if field in text and text[field] != cfg.model[fact]
    ]
    if wrong:
        return [
            Problem(
                "error",
                (key, "model"),
                f"{config_file} does not match model preset {cfg.model.name}: {', '.join(wrong)}; "
                "choose the preset for these weights (model=35b|122b) or point the path at the right weights",
            )
        ]
    return []
