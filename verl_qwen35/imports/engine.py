"""What a recorded main_ppo launch runs: its trainer config and training engine, judged before any key is mapped.

verl's main_ppo composes `ppo_trainer` (or the file `--config-name` names) and picks the training engine from
`model_engine` (verl/trainer/config/ppo_trainer.yaml's defaults list: `model_engine: dp`, the FSDP engine,
unless the script sets another) and the engine's `strategy` (verl/workers/engine_workers.py builds the engine
with `EngineRegistry.new(backend=engine_config.strategy)`; verl/trainer/constants_ppo.py `_uses_megatron` reads
`actor_rollout_ref.actor.strategy`). This project carries Megatron launches only: a
script of another engine is refused here, naming the engine and the lines that chose it, instead of having its
engine's keys dropped one by one as if verl lacked them.
"""

from functools import cache

from hydra.core.override_parser.overrides_parser import OverridesParser

from verl_qwen35.config.yaml_files import load_mapping
from verl_qwen35.errors import UserError
from verl_qwen35.installed import installed_verl_version, verl_config_dir

SUPPORTED = (
    "this project imports launches of verl's Megatron engine only (model_engine=megatron, "
    "actor_rollout_ref.actor.strategy=megatron) of verl.trainer.main_ppo"
)
# verl's names for its engines (verl/trainer/config/model_engine/*.yaml) and strategies, as a user knows them.
ENGINE_NAMES = {
    "dp": "FSDP (verl's dp engine)",
    "fsdp": "FSDP",
    "fsdp2": "FSDP2",
    "fsdp_turbo": "FSDP-Turbo",
    "veomni": "VeOmni",
    "torchtitan": "TorchTitan",
    "mindspeed": "verl 0.8's MindSpeed engine (strategy=mindspeed, its `mindspeed` node, not `megatron`)",
    "megatron": "Megatron",
}
# Trainer configs of main_ppo that compose to verl's ppo_trainer with the Megatron engine or the default one:
# ppo_megatron_trainer.yaml is `defaults: [ppo_trainer, override model_engine: megatron]` ("[Deprecated] ...
# for backward compatibility").
MAIN_PPO_CONFIGS = {"ppo_trainer": None, "ppo_megatron_trainer": "megatron"}
CONFIG_NAME_FLAGS = ("--config-name", "-cn")
CONFIG_PATH_FLAGS = ("--config-path", "-cp", "--config-dir", "-cd")


def _flag_value(lines: list[str], flags: tuple[str, ...]) -> str | None:
    """The last value given to a Hydra flag (`--config-name=X` or `--config-name X`), as main_ppo reads it."""
    found = None
    for i, line in enumerate(lines):
        name, sep, value = line.partition("=")
        if name in flags:
            found = value if sep else (lines[i + 1] if i + 1 < len(lines) else "")
    return found


def _last_value(lines: list[str], key: str) -> str | None:
    """The value of the last override of `key` (with or without `+`/`++`), quotes removed by Hydra's parser."""
    parser, found = OverridesParser.create(), None
    for line in lines:
        if line.lstrip("+").split("=", 1)[0] != key:
            continue
        try:
            found = str(parser.parse_override(line).value())
        except Exception:  # not an override: verl_effective reports it
            continue
    return found


@cache
def default_engine() -> str:
    """The engine verl's ppo_trainer.yaml selects when a script sets none (its defaults list's model_engine)."""
    text = load_mapping(verl_config_dir() / "ppo_trainer.yaml")
    for entry in text.get("defaults") or []:
        if isinstance(entry, dict) and isinstance(entry.get("model_engine"), str):
            return entry["model_engine"]
    return "dp"


def _evidence(lines: list[str], markers: tuple[str, ...]) -> str:
    said = [line for line in lines if any(m in line.split("=", 1)[0] for m in markers)]
    if not said:
        return ""
    more = f" and {len(said) - 3} more" if len(said) > 3 else ""
    return f"; it also sets {', '.join(said[:3])}{more}"


def trainer_config(lines: list[str]) -> str | None:
    """The engine a `--config-name` implies (None: verl's default), refusing a config main_ppo's PPO trainer
    does not compose from the installed verl (another trainer's, or one from outside verl)."""
    if (path := _flag_value(lines, CONFIG_PATH_FLAGS)) is not None:
        raise UserError(
            f"the script gives --config-path/--config-dir {path}: configs from outside the installed verl's "
            f"trainer/config (another trainer or a fork) are not supported; {SUPPORTED}"
        )
    name = _flag_value(lines, CONFIG_NAME_FLAGS)
    if name is None:
        return None
    stem = name.strip("'\"").removesuffix(".yaml")
    if stem in MAIN_PPO_CONFIGS:
        return MAIN_PPO_CONFIGS[stem]
    shipped = (verl_config_dir() / f"{stem}.yaml").is_file()
    where = "a config of the installed verl for another trainer" if shipped else "not a config the installed verl ships"
    raise UserError(
        f"the script gives --config-name={name}: {where} ({verl_config_dir()}); main_ppo's PPO trainer reads "
        f"ppo_trainer (or ppo_megatron_trainer); {SUPPORTED}"
    )


def _refuse_engine(lines: list[str], engine: str, given: str | None) -> None:
    verl = installed_verl_version()
    how = (
        f"it sets model_engine={given}"
        if given
        else f"it sets no model_engine, and verl {verl}'s ppo_trainer.yaml selects model_engine={engine}"
    )
    strategy = _last_value(lines, "actor_rollout_ref.actor.strategy")
    if strategy:
        how = f"actor_rollout_ref.actor.strategy={strategy}; {how}"
    raise UserError(
        f"the script trains with {ENGINE_NAMES.get(strategy or engine, engine)} ({how}"
        + _evidence(lines, ("fsdp_config.", "veomni", "torchtitan"))
        + f"): {SUPPORTED}. To use this project, port the script to Megatron (model_engine=megatron and the megatron.* "
        "layout: see `verl-qwen35 --presets`), or run it with verl itself"
    )


def check_engine(lines: list[str]) -> None:
    """Refuse a script whose training engine is not verl's Megatron engine, naming the engine and what chose it."""
    given = _last_value(lines, "model_engine")
    if given not in (None, "megatron"):
        _refuse_engine(lines, given, given)
    implied = trainer_config(lines)  # refuses another trainer's config or one from outside verl
    engine = given or implied or default_engine()
    if engine != "megatron":
        _refuse_engine(lines, engine, given)
    strategy = _last_value(lines, "actor_rollout_ref.actor.strategy")
    if strategy not in (None, "megatron"):
        raise UserError(
            f"the script sets model_engine=megatron but actor_rollout_ref.actor.strategy={strategy} "
            f"({ENGINE_NAMES.get(strategy, strategy)}): verl builds the actor's engine by its strategy, so the "
            f"script does not run the Megatron engine; {SUPPORTED}: drop the strategy override"
        )
