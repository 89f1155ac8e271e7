"""A verl key given a value of another kind than verl computes with: `trainer.total_epochs=ten`.

verl builds its config dataclasses (`verl/workers/config/*.py`, `verl/trainer/config/*.py`) from the
resolved config only after Ray and the workers have started (Hydra's `instantiate`, which checks no
type), and reads plain dict sections (trainer, data) as they are, so a text where verl expects a number
fails hours later, or never loudly. What each key takes ships as data generated from the installed verl
(`verl_qwen35/data/upstream/verl_<minor>.json`, `scripts/verl_fields.py`; validators/verl_fields.py
reads it live): the dataclass annotation where verl builds one (an `Optional[int]` that defaults to null
is an integer), else the kind of the YAML default. Null is verl's "unset" and is never judged here.
"""

import json
from functools import cache
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from omegaconf import DictConfig, OmegaConf

from verl_qwen35.checks.problem import Problem, error
from verl_qwen35.data import UPSTREAM_DIR

BASE = "_generated_ppo_megatron_trainer.yaml"
ASSUMED_VERL = (0, 9)  # the data followed when no verl is installed (the newest release CI runs)
SAID = {
    "bool": "true or false",
    "int": "an integer",
    "float": "a number",
    "str": "a text",
    "list": "a list",
    "dict": "a mapping",
    "path": "a path (a text)",
}
# Keys whose YAML default is null (or inside a free-form mapping: AlgoConfig.pf_ppo is a dict[str, Any]), so the
# shipped field list has no kind for them, while the code that reads them computes with one kind (verl 0.9.1
# lines; 0.8.0 reads them alike). "path" takes a text only: a number there is a
# TypeError in os.path / os.makedirs, hours in.
READ_AS = {
    "data.seed": (["int"], "verl/trainer/ppo/utils.py:162 torch.Generator().manual_seed(seed)"),
    "data.gen_batch_size": (["int"], "verl/trainer/ppo/ray_trainer.py:374 the dataloader's batch_size"),
    "trainer.max_actor_ckpt_to_keep": (["int"], "verl/utils/checkpoint/checkpoint_manager.py:174 isinstance(.., int)"),
    "trainer.max_critic_ckpt_to_keep": (["int"], "verl/utils/checkpoint/checkpoint_manager.py:174 isinstance(.., int)"),
    "trainer.rollout_data_dir": (["path"], "verl/trainer/ppo/ray_trainer.py:_dump_generations os.makedirs(dump_path)"),
    "trainer.validation_data_dir": (["path"], "verl/trainer/ppo/ray_trainer.py:_dump_generations os.makedirs"),
    "trainer.default_hdfs_dir": (["path"], "verl/trainer/ppo/ray_trainer.py:983 os.path.join(default_hdfs_dir, ..)"),
    "ray_kwargs.timeline_json_file": (["path"], "verl/trainer/main_ppo.py:99 ray.timeline(filename=..)"),
    "global_profiler.steps": (["list"], "verl/trainer/main_ppo.py:82 len(global_profiler.steps)"),
    "actor_rollout_ref.model.lora.merge": (["bool"], "verl/utils/config.py:210 if lora_config.get('merge')"),
    "algorithm.pf_ppo.weight_pow": (["float"], "verl/trainer/ppo/core_algos.py:2271 torch.pow(scores, weight_pow)"),
    "reward_model.num_workers": (
        ["int"],
        "verl/experimental/reward_loop/reward_loop.py:45 copied to reward.num_workers",
    ),
}


@cache
def installed_verl_minor() -> tuple[int, int]:
    try:
        major, minor = version("verl").split(".")[:2]
        return int(major), int(minor)
    except (PackageNotFoundError, ValueError):
        return ASSUMED_VERL


def shipped_verl_minors() -> list[tuple[int, int]]:
    found = [p.stem.removeprefix("verl_").split(".") for p in UPSTREAM_DIR.glob("verl_*.json")]
    return sorted((int(a), int(b)) for a, b in found)


def shipped_verl_data(minor: tuple[int, int] | None = None) -> dict:
    """The field list and names of this verl minor (the newest shipped one not newer; else the oldest)."""
    wanted = minor or installed_verl_minor()
    shipped = shipped_verl_minors()
    return _load(max((v for v in shipped if v <= wanted), default=shipped[0]))


@cache
def _load(minor: tuple[int, int]) -> dict:
    return json.loads((UPSTREAM_DIR / f"verl_{minor[0]}.{minor[1]}.json").read_text())


def _flat(tree: Any, prefix: str = "") -> dict[str, Any]:
    """Every node of a config by its dotted key, sections included."""
    found: dict[str, Any] = {prefix.rstrip("."): tree} if prefix else {}
    if isinstance(tree, dict):
        for key, value in tree.items():
            found |= _flat(value, f"{prefix}{key}.")
    return found


def fits(kinds: list[str], value: Any) -> bool:
    """Whether a value is of one of these kinds. An integer is a number, a number is fine for a text (Hydra
    reads `experiment_name=2024` as one), 0/1 for a flag; null always (verl's "unset")."""
    if value is None:
        return True
    if "path" in kinds:
        return isinstance(value, str)
    if isinstance(value, bool):
        return "bool" in kinds
    if isinstance(value, int):
        return bool({"int", "float", "str"} & set(kinds)) or ("bool" in kinds and value in (0, 1))
    if isinstance(value, float):
        return bool({"float", "str"} & set(kinds))
    if isinstance(value, str):
        return "str" in kinds
    if isinstance(value, list):
        return "list" in kinds
    return "dict" in kinds


def expected(kinds: list[str]) -> str:
    said = [SAID[k] for k in kinds if k in SAID]
    return " or ".join(said + (["null"] if "null" in kinds else []))


def type_problems(cfg: DictConfig, fields: dict[str, dict] | None = None) -> list[Problem]:
    """One error per verl key whose resolved value is not of a kind verl takes there. A key that follows
    another by verl's own interpolation (`critic.loss_scale_factor: ${oc.select:actor_rollout_ref.actor.
    loss_scale_factor,null}`) and holds its bad value is that key's problem, reported once."""
    fields = shipped_verl_data()["fields"] if fields is None else fields
    values = _flat(OmegaConf.to_container(cfg, resolve=True))
    bad = {key for key, spec in fields.items() if key in values and not fits(spec["kinds"], values[key])}
    return [
        error(key, f"={values[key]!r}: verl expects {expected(spec['kinds'])} here ({spec['source']}); give one")
        for key, spec in fields.items()
        if key in bad and not (spec.get("follows") in bad and values[spec["follows"]] == values[key])
    ]


def verl_type_problems(cfg: DictConfig) -> list[Problem]:
    """The fast rule, with the field list shipped for the installed verl minor and the keys verl reads as one kind
    though their default is null."""
    return type_problems(cfg, read_as_fields() | shipped_verl_data()["fields"])


def read_as_fields() -> dict[str, dict]:
    """READ_AS in the shape of the field list."""
    return {key: {"kinds": kinds, "source": source} for key, (kinds, source) in READ_AS.items()}
