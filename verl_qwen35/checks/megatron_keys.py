"""override_transformer_config keys against megatron-core's TransformerConfig, without importing it.

Importing megatron-core imports torch (seconds). The field list (names, value kinds, enum values) of
each supported megatron-core release ships as generated data in `verl_qwen35/data/upstream/`
(`scripts/megatron_fields.py` regenerates it; tests/unit/test_megatron_keys.py compares it with the
installed dataclass), so the check is the same with or without megatron-core installed; without it,
messages say which release was assumed.
"""

import difflib
from collections.abc import Iterable, Mapping
from functools import cache
from typing import Any

from omegaconf import DictConfig, OmegaConf

from verl_qwen35.checks.bridges import bridge_of
from verl_qwen35.checks.problem import Problem, error, warning
from verl_qwen35.checks.transformer import type_problems
from verl_qwen35.config.yaml_files import load_json_object
from verl_qwen35.data import UPSTREAM_DIR
from verl_qwen35.installed import ASSUMED_MCORE, installed_mcore

PLANNED = "plan.megatron_core"


def planned_mcore(cfg: DictConfig) -> tuple[tuple[int, int] | None, list[Problem]]:
    """The release `plan.megatron_core` names (None when unset), and why it cannot be used: not a release, or a
    launch (which runs the installed megatron-core) on a machine with another one."""
    chosen = OmegaConf.select(cfg, PLANNED, default=None)
    if chosen is None:
        return None, []
    parts = str(chosen).strip().split(".")
    if len(parts) < 2 or not all(p.isdigit() for p in parts[:2]):
        return None, [error(PLANNED, f"={chosen!r}: give a megatron-core release as MAJOR.MINOR, e.g. 0.18")]
    version = (int(parts[0]), int(parts[1]))
    installed = installed_mcore()
    if cfg.get("dry_run") is False and installed is not None and installed != version:
        return None, [
            error(
                PLANNED,
                f"={chosen}: a launch runs the installed megatron-core {installed[0]}.{installed[1]}; "
                f"{PLANNED} plans another machine in a dry run only (remove it, or install megatron-core {chosen})",
            )
        ]
    return version, []


def rules_mcore(cfg: DictConfig) -> tuple[int, int] | None:
    """The megatron-core release the version-dependent rules follow for this config (the preflight's and the
    planner's): `plan.megatron_core` where usable, else the installed one (None: the rules' assumed release)."""
    planned, _ = planned_mcore(cfg)
    return planned or installed_mcore()


def mcore_in_use(planned: tuple[int, int] | None = None) -> tuple[tuple[int, int], str]:
    """(version the version-dependent rules follow, how to say it in a message): the planned one
    (`plan.megatron_core`), else the installed one, else the one assumed."""
    if planned is not None:
        return planned, f"{planned[0]}.{planned[1]} ({PLANNED})"
    found = installed_mcore()
    if found is None:
        return ASSUMED_MCORE, f"{ASSUMED_MCORE[0]}.{ASSUMED_MCORE[1]} (assumed: megatron-core is not installed here)"
    return found, f"{found[0]}.{found[1]} (installed)"


def shipped_versions() -> list[tuple[int, int]]:
    found = [p.stem.removeprefix("megatron_core_").split(".") for p in UPSTREAM_DIR.glob("megatron_core_*.json")]
    return sorted((int(a), int(b)) for a, b in found)


@cache
def _shipped_data(mcore: tuple[int, int] | None) -> dict:
    """The field data of this megatron-core (the newest shipped release not newer than it; the oldest
    when it predates them all)."""
    shipped = shipped_versions()
    wanted = mcore or mcore_in_use()[0]
    chosen = max((v for v in shipped if v <= wanted), default=shipped[0])
    return load_json_object(UPSTREAM_DIR / f"megatron_core_{chosen[0]}.{chosen[1]}.json")


def field_spec(mcore: tuple[int, int] | None = None) -> dict[str, dict]:
    """TransformerConfig field name -> {"kinds": [...], "choices": [...]}."""
    return _shipped_data(mcore)["fields"]


def ddp_field_spec(mcore: tuple[int, int] | None = None) -> dict[str, dict]:
    """DistributedDataParallelConfig field name -> {"kinds": [...]}: verl builds it from
    `megatron.override_ddp_config` (verl/utils/megatron_utils.py `DistributedDataParallelConfig(**...)`)."""
    return _shipped_data(mcore)["ddp_fields"]


def optimizer_field_spec(mcore: tuple[int, int] | None = None) -> dict[str, dict]:
    """OptimizerConfig field name -> {"kinds": [...]}: verl builds it from `actor.optim` and its
    `override_optimizer_config` (verl/utils/megatron/optimizer.py `init_megatron_optim_config`)."""
    return _shipped_data(mcore)["optimizer_fields"]


def transformer_config_fields(mcore: tuple[int, int] | None = None) -> frozenset[str]:
    """Field names of TransformerConfig (and its dataclass bases) for this megatron-core (default: the one in use)."""
    return frozenset(field_spec(mcore))


@cache
def mindspeed_keys() -> frozenset[str]:
    """Keys MindSpeed accepts on Ascend beyond stock TransformerConfig (with sources, in the data file)."""
    return frozenset(load_json_object(UPSTREAM_DIR / "mindspeed_core_r0.16.json")["keys"])


MINDSPEED_KEYS = mindspeed_keys()


def override_key_problems(
    cfg: DictConfig, device: str, fields: frozenset[str] | None = None, mcore: tuple[int, int] | None = None
) -> list[Problem]:
    """Unknown keys are refused by the field list of the megatron-core in use. A release newer than every
    shipped list (0.20 with 0.16, 0.18 and 0.19 shipped) may have fields the list lacks: there an unknown key is a
    warning, and `dry_run=full` judges it against the installed class."""
    key = "megatron.override_transformer_config"
    fields = frozenset(field_spec(mcore)) if fields is None else fields
    version, shown = mcore_in_use(mcore)
    newest = shipped_versions()[-1]
    unlisted = version > newest  # no field list of this release ships here
    valid = fields | MINDSPEED_KEYS if device == "npu" else fields
    valid |= bridge_of(cfg).extra_fields  # the bridge's own config class takes them (data/bridges/qwen35_moe.yaml)
    found = []
    for name in cfg.megatron.override_transformer_config:
        if name in valid:
            continue
        if name in MINDSPEED_KEYS:
            found.append(
                error(
                    f"{key}.{name}",
                    f"is a MindSpeed (Ascend) key; stock megatron-core on {device} rejects it. "
                    f"Remove it with ~{key}.{name} or use device=npu",
                )
            )
            continue
        hint = did_you_mean(name, valid)
        if unlisted:
            listed = f"{newest[0]}.{newest[1]}"
            found.append(
                warning(
                    f"{key}.{name}",
                    f"is not a field of megatron-core {listed}'s TransformerConfig, the newest field list shipped "
                    f"here; megatron-core {shown} may have it: dry_run=full checks it against the installed "
                    f"class{hint}",
                )
            )
            continue
        found.append(error(f"{key}.{name}", f"is not a field of megatron-core {shown} TransformerConfig{hint}"))
    return found


def ddp_key(cfg: DictConfig) -> str:
    """Where the user sets the DDP overrides: our patch when it carries them, else the actor's key."""
    if "megatron" in cfg and "override_ddp_config" in cfg.megatron:
        return "megatron.override_ddp_config"
    return "actor_rollout_ref.actor.megatron.override_ddp_config"


def override_ddp_problems(cfg: DictConfig) -> list[Problem]:
    """`override_ddp_config` keys are DistributedDataParallelConfig fields (megatron-core
    distributed/distributed_data_parallel_config.py); verl passes them as keyword arguments."""
    ddp = OmegaConf.select(cfg, "actor_rollout_ref.actor.megatron.override_ddp_config", default=None)
    if not ddp:
        return []
    values = OmegaConf.to_container(ddp, resolve=True)
    return field_problems(values, ddp_field_spec(), ddp_key(cfg), "DistributedDataParallelConfig")


def did_you_mean(name: str, valid: Iterable[str]) -> str:
    """`; did you mean X?` with the field closest to a misspelt `name`, or nothing when none is close."""
    close = difflib.get_close_matches(name, sorted(valid), n=1, cutoff=0.6)
    return f"; did you mean {close[0]}?" if close else ""


def field_problems(values: Mapping[str, Any], fields: Mapping[str, dict], key: str, config: str) -> list[Problem]:
    """`values` as keyword arguments of megatron-core's dataclass `config` (verl passes an override dict so):
    a name that is not one of its `fields` raises TypeError there; a value of another kind fails later."""
    found = [
        error(f"{key}.{name}", f"is not a field of megatron-core's {config}{did_you_mean(name, fields)}")
        for name in values
        if name not in fields
    ]
    return found + type_problems({k: v for k, v in values.items() if k in fields}, fields, key)


DTYPES = ("bfloat16", "float16")


def patch_value_problems(cfg: DictConfig) -> list[Problem]:
    found = []
    if not cfg.megatron.use_mbridge:
        found.append(
            error("megatron.use_mbridge", "must be true: verl's Megatron engine builds Qwen3.5 through mbridge")
        )
    if cfg.megatron.dtype not in DTYPES:
        found.append(error("megatron.dtype", f"={cfg.megatron.dtype!r}: verl's Megatron engine takes one of {DTYPES}"))
    return found
