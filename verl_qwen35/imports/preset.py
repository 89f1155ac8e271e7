"""Turn recorded main_ppo overrides into a `--config-dir` preset: only what differs from the closest preset.

The script's effective config is verl's own `ppo_trainer` composed with its overrides (as verl's main_ppo
composes it). Ours for the chosen model and device is composed the same way; each key that differs is
written where our conf feeds it from: a key our conf interpolates from `parallel.*`, `megatron.*` or
`model.*` is written there (when every key fed by it agrees), anything else on the verl key itself.
"""

import os
import re
import shlex
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import yaml
from hydra import compose as hydra_compose
from hydra import initialize_config_dir
from hydra.core.override_parser.overrides_parser import OverridesParser
from omegaconf import DictConfig, OmegaConf

from verl_qwen35.config import compose
from verl_qwen35.config.errors import explain
from verl_qwen35.config.line_breaks import LINE_BREAK, line_break_keys
from verl_qwen35.config.line_breaks import refusal as line_break_refusal
from verl_qwen35.config.overrides import check_bounds
from verl_qwen35.config.secrets import credentials_in, findings, looks_secret, redact, shell_secrets
from verl_qwen35.config.yaml_files import load_json_object, load_mapping
from verl_qwen35.disk import write_file
from verl_qwen35.errors import UserError
from verl_qwen35.imports.engine import CONFIG_NAME_FLAGS, CONFIG_PATH_FLAGS, check_engine
from verl_qwen35.imports.script import Recorded
from verl_qwen35.installed import conf_dir, installed_verl_version, verl_config_dir
from verl_qwen35.review.flat import flatten
from verl_qwen35.run.environment import effective_env

NAME = "imported"
ABSENT = "<absent>"
ACTOR_MEGATRON, REF_MEGATRON = "actor_rollout_ref.actor.megatron.", "actor_rollout_ref.ref.megatron."
# Ray assigns devices to each worker; a fixed list would override that (tests/seed_fidelity/differences.yaml).
NOT_CARRIED = {"CUDA_VISIBLE_DEVICES": "Ray assigns devices to each worker; a fixed list would override that"}
# Written on verl's key, never on the key our conf feeds it from: a script's model path is a path (or hub id),
# not our model preset's hf_id.
ON_VERL_KEY = frozenset({"actor_rollout_ref.model.path"})
FLAGS_WITH_VALUE = frozenset({*CONFIG_NAME_FLAGS, *CONFIG_PATH_FLAGS})
_INTERPOLATION = re.compile(r"^\$\{((?:parallel|megatron|model)\.[\w.]+)\}$")


@dataclass
class Imported:
    """What the import wrote and why: the report's content."""

    model: str
    device: str
    how: str = ""
    mapped: list[tuple[str, str, Any]] = field(default_factory=list)  # (script key, preset file:key, value)
    fixes: dict[str, str] = field(default_factory=dict)  # flattened key (ENV.NAME) -> what was fixed
    unmapped: list[tuple[str, str]] = field(default_factory=list)  # (override or key, reason)
    files: dict[str, dict[str, Any]] = field(default_factory=dict)  # group -> flat key -> value
    moved: list[str] = field(default_factory=list)  # verl keys written once on our source key
    removed: list[str] = field(default_factory=list)  # our keys neither the script nor verl has
    cleared: dict[str, list[str]] = field(default_factory=dict)  # node cleared and listed whole -> removed keys
    logger: list[str] | None = None  # the script's trainer.logger, as our logger group
    script_keys: set[str] = field(default_factory=set)  # keys the script's overrides name
    script: dict[str, Any] = field(default_factory=dict)  # verl's config with the script's overrides, flattened

    def overrides(self) -> list[str]:
        """The command's overrides after device and model: the groups, then the keys removed."""
        groups = [f"{g}={NAME}" for g in ("parallel", "tuning") if g in self.files]
        if self.logger is not None:
            groups.append(f"logger=[{','.join(self.logger)}]")
        return [*groups, *(f"~{key}" for key in self.on_command_line())]

    def on_command_line(self) -> list[str]:
        """Removed keys no cleared node carries: said as `~KEY` on the command line (a node we cannot list whole)."""
        carried = {k for keys in self.cleared.values() for k in keys}
        return [k for k in self.removed if k not in carried]

    def command(self, out: Path) -> str:
        where = shlex.quote(str(out))
        rest = " ".join(shlex.quote(o) for o in self.overrides())
        return f"verl-qwen35 --config-dir {where} device={self.device} model={self.model} {rest}".rstrip()

    def set_by_script(self, shown: str) -> bool:
        """Whether a mapped key (or `a, b` keys) is one the script's overrides name (or a part of one)."""
        keys = [k.strip() for k in shown.removeprefix("export ").split(",")]
        if shown.startswith("export "):
            return True
        return any(k == s or k.startswith(f"{s}.") or s.startswith(f"{k}.") for k in keys for s in self.script_keys)


# An environment read in a script's override: kept as text, never resolved against the importer's environment
# (the preset holds that text; a secret-looking one is not written at all: _put).
_ENV_READ = re.compile(r"(?<!\\)\$\{(\s*(?:oc\.env|env)\s*:)")
HOME_READ = "${oc.env:HOME}"  # what the recording put in place of its temporary HOME (imports/script.py)


def unresolved_env(line: str) -> str:
    """The override with each `${oc.env:...}` escaped: composing it gives the text the script wrote."""
    return _ENV_READ.sub(r"\\${\1", line)


def shown_line(line: str) -> str:
    """An override as printed in the report: its value masked when it looks like a secret (the key's name, a
    token's format, a shell secret's value), and any credential in it redacted."""
    key, sep, value = line.partition("=")
    if sep and any(True for _ in findings(key.lstrip("+~"), value, shell_secrets())):
        return f"{key}=<redacted>"
    return redact(line)


def _verl_compose(overrides: list[str]) -> DictConfig:
    try:
        with initialize_config_dir(str(verl_config_dir()), version_base=None, job_name="verl_qwen35_import"):
            return hydra_compose("ppo_trainer", overrides=[unresolved_env(line) for line in overrides])
    except Exception as err:
        raise UserError(f"verl refuses the script's overrides: {redact(str(explain(err) or err))}") from None


def _outside_verl(lines: list[str]) -> None:
    """Refuse, up front, a script that takes configs from outside the installed verl: another package on
    Hydra's search path (Megatron Lite's `hydra.searchpath=[pkg://verl_mlite.config]`) or a config group
    option verl does not ship (`actor@actor_rollout_ref.actor=mlite_actor`): its engine is not verl's."""
    check_bounds(lines)  # a script's line nested 10,000 deep: refused before Hydra's grammar recurses on it
    parser, groups = OverridesParser.create(), verl_config_dir()
    for line in lines:
        if line.startswith(("hydra.searchpath=", "+hydra.searchpath=", "++hydra.searchpath=")):
            raise UserError(
                f"the script sets {line}: configs from outside the installed verl (another engine or trainer) are "
                "not supported; this project runs verl's own Megatron engine (drop the line to import the rest)"
            )
        try:
            override = parser.parse_override(line)
        except Exception:  # not an override: verl_effective says so
            continue
        group = override.key_or_group
        if override.is_delete() or not (groups / group).is_dir() or not isinstance(override.value(), str):
            continue
        option = str(override.value())
        if not (groups / group / f"{option}.yaml").is_file():
            at = f"{group}@{override.package}" if override.package else group
            raise UserError(
                f"the script selects {at}={option}, which the installed verl does not ship ({groups / group}): an "
                "engine or config outside verl (e.g. Megatron Lite's mlite_actor) is not supported; this project "
                "runs verl's own Megatron engine"
            )


def verl_effective(lines: list[str], result: Imported) -> DictConfig:
    """verl's config with the script's overrides; overrides verl cannot take are set aside, with the reason."""
    _outside_verl(lines)
    check_engine(lines)  # another engine's keys are not "keys verl lacks": refused whole, named
    parser = OverridesParser.create()
    base = _verl_base()
    kept, added, flag = [], set(), None
    for line in lines:
        if flag is not None:  # `--config-name NAME`: the flag's value, not an override
            result.unmapped[-1] = (f"{flag} {line}", result.unmapped[-1][1])
            flag = None
            continue
        if line.startswith("-"):
            result.unmapped.append((line, "a Hydra flag, not an override; the preset has verl's config as its base"))
            flag = line if line in FLAGS_WITH_VALUE else None
            continue
        try:
            override = parser.parse_override(line)
        except Exception as err:  # Hydra's grammar errors
            result.unmapped.append((line, f"not a Hydra override ({str(err).splitlines()[0]})"))
            continue
        key = override.key_or_group
        if override.is_add() or override.is_force_add():
            added.add(key)
        elif (
            not override.is_delete()
            and not _has_key(base, key)
            and not any(key.startswith(f"{a}.") or key == a for a in added)
        ):
            result.unmapped.append(
                (
                    line,
                    f"verl {installed_verl_version()}'s config (model_engine=megatron) has no key {key}: verl "
                    f"{installed_verl_version()} itself refuses this line (Hydra: key not in struct); the script "
                    "was written for another verl, or the key is misspelt",
                )
            )
            continue
        kept.append(line)
    return _verl_compose(["model_engine=megatron", *kept])


@cache
def _verl_base() -> DictConfig:
    """verl's own config (model_engine=megatron), read-only: which keys the installed verl has."""
    base = _verl_compose(["model_engine=megatron"])
    OmegaConf.set_readonly(base, True)
    return base


def _has_key(cfg: DictConfig, key: str) -> bool:
    """The key exists (a `???` value counts: verl leaves some to be given)."""
    parent, _, last = key.rpartition(".")
    node = OmegaConf.select(cfg, parent, default=None) if parent else cfg
    # `in node` is False for a `???` value; its keys() still name it.
    return isinstance(node, DictConfig) and last in node.keys()  # noqa: SIM118


# Names only an Ascend launch exports: a list without trainer.device and without --device is an NPU one.
ASCEND_ENV = ("HCCL_", "ASCEND_", "PYTORCH_NPU_", "VLLM_ASCEND_", "TASK_QUEUE_ENABLE", "CPU_AFFINITY_CONF")


def chosen_device(device: str | None, script: dict[str, Any], env: dict[str, str]) -> tuple[str, str]:
    """(device, how it was chosen)."""
    if device:
        return device, "--device"
    if script.get("trainer.device") == "npu":
        return "npu", "the script's trainer.device"
    if ascend := sorted(n for n in env if n.startswith(ASCEND_ENV)):
        return "npu", f"the script exports {', '.join(ascend[:3])} (Ascend); give --device gpu to override"
    return "gpu", "the default (give --device npu for an Ascend script)"


def closest_model(path: str) -> str:
    """The model preset whose HF id or name is the script's model path (or its last part); else the one whose
    architecture equals the local checkpoint's config.json."""
    presets = {p.stem: load_mapping(p)["model"] for p in sorted((conf_dir() / "model").glob("*.yaml"))}
    last = Path(str(path).rstrip("/")).name.lower()
    for name, model in presets.items():
        if last in (model["hf_id"].lower().rsplit("/", 1)[-1], model["name"].lower()):
            return name
    config = Path(str(path)) / "config.json"
    if config.is_file():
        text = load_json_object(config)
        text = text.get("text_config", text)
        facts = ("num_hidden_layers", "hidden_size", "num_experts")
        ours = {"num_hidden_layers": "num_layers", "hidden_size": "hidden_size", "num_experts": "num_experts"}
        for name, model in presets.items():
            if all(text.get(f) == model[ours[f]] for f in facts):
                return name
    choices = ", ".join(f"{m['hf_id']} (model={n})" for n, m in presets.items())
    raise UserError(
        f"actor_rollout_ref.model.path={path}: another model; this project carries the Qwen3.5/3.6 MoE models "
        f"{choices} only (their architecture facts, layouts and memory model); set the path to one of them, or to a "
        "local checkpoint whose config.json has their architecture"
    )


def _source_of(key: str, raw: dict[str, Any]) -> str | None:
    """The `parallel.*` / `megatron.*` / `model.*` key our conf feeds `key` from (through any parent)."""
    parts = key.split(".")
    for i in range(len(parts), 0, -1):
        value = raw.get(".".join(parts[:i]))
        if isinstance(value, str) and (match := _INTERPOLATION.match(value)):
            return ".".join([match.group(1), *parts[i:]])
    return None


def _written_value(value: Any) -> Any:
    """A value as it must stand in a YAML file Hydra reads: an interpolation in a string is made literal
    (escaped), except the HOME read the recording put in place of the temporary HOME."""
    if isinstance(value, str):
        return HOME_READ.join(part.replace("${", "\\${") for part in value.split(HOME_READ))
    if isinstance(value, list):
        return [_written_value(v) for v in value]
    if isinstance(value, dict):
        return {k: _written_value(v) for k, v in value.items()}
    return value


def _secret(key: str, value: Any) -> str | None:
    return next((why for _, why in findings(key, value, shell_secrets())), None)


def differences(script: dict[str, Any], ours: dict[str, Any], verl_keys: Iterable[str]) -> dict[str, tuple]:
    """Flattened keys whose values differ; an empty mapping on one side whose keys the other side has is
    said by those keys."""
    keys = set(script) | {k for k in ours if k.split(".", 1)[0] in set(verl_keys)}
    parents = {k.rsplit(".", 1)[0] for k in keys if "." in k}
    keys = {k for k in keys if not (k in parents and {} in (script.get(k), ours.get(k)))}
    return {
        k: (script.get(k, ABSENT), ours.get(k, ABSENT))
        for k in sorted(keys)
        if script.get(k, ABSENT) != ours.get(k, ABSENT)
    }


def _map_keys(script: dict[str, Any], ours_cfg: DictConfig, result: Imported, derived: bool) -> None:
    """Each differing verl key to its source in our conf, or to itself. With `derived` False, a key verl
    derives from another (`actor.rollout_n: ${oc.select:...rollout.n}`) is left for the second pass,
    where it follows the key it derives from and is written only if it still differs."""
    ours = flatten(ours_cfg)
    raw = flatten(OmegaConf.to_container(ours_cfg, resolve=False))
    verl_top = {k.split(".", 1)[0] for k in script}
    diff = differences(script, ours, verl_top)
    by_source: dict[str, list[str]] = {}
    for key in diff:
        if key.startswith(REF_MEGATRON):
            actor_key = ACTOR_MEGATRON + key.removeprefix(REF_MEGATRON)
            if script.get(key, ABSENT) != script.get(actor_key, ABSENT):
                # verl's ref falls back to the actor's value only where the script set neither side.
                result.fixes[key] = (
                    f"the script's ref has {script.get(key, ABSENT)!r}, its actor {script.get(actor_key, ABSENT)!r}: "
                    "the ref gets the actor's Megatron value (megatron.*, one patch for both)"
                )
                continue
        if key == "trainer.device" and script.get(key) in ("cuda", ABSENT) and result.device == "npu":
            result.fixes[key] = "npu set explicitly (verl's auto_set_device sets the same on an Ascend host)"
            continue
        source = None if key in ON_VERL_KEY else _source_of(key, raw)
        if key == "trainer.logger" and _as_logger_group(script.get(key), result):
            continue
        if not derived and source is None and "${" in str(raw.get(key, "")):
            continue
        by_source.setdefault(source or key, []).append(key)
    for target, keys in by_source.items():
        fed = (
            [k for k in raw if _source_of(k, raw) == target and not k.startswith(REF_MEGATRON)]
            if target != keys[0]
            else keys
        )
        values = {repr(script.get(k, ABSENT)) for k in (fed or keys)}
        if target != keys[0] and len(values) != 1:
            why = f"the keys fed by {target} differ in the script"
            for key in keys:
                _put(result, key, key, script.get(key, ABSENT), note=why)
            continue
        key = (fed or keys)[0]
        _put(result, key if target == keys[0] else ", ".join(keys), target, script.get(key, ABSENT), keys=keys)


def _as_logger_group(value: Any, result: Imported) -> bool:
    """The script's trainer.logger as our logger group (`logger=[console]`), which also sets where each backend
    writes; False for a backend the group lacks (then trainer.logger is written as it is)."""
    names = [value] if isinstance(value, str) else value if isinstance(value, list) else None
    if names is None or not all(isinstance(n, str) and (conf_dir() / "logger" / f"{n}.yaml").is_file() for n in names):
        return False
    result.logger = list(names)
    return True


SECRET_ADVICE = "not written: it looks like a secret; export it in the shell before `ray start`"
# Keys our conf fills on purpose where verl's default stands (tests/seed_fidelity/differences.yaml).
OURS_ON_PURPOSE = {
    "ray_kwargs.ray_init.runtime_env.env_vars": "filled at launch from env.*: Ray workers get the environment so",
}


def _put(result: Imported, shown: str, target: str, value: Any, note: str = "", keys: list[str] | None = None) -> None:
    if value is ABSENT or value == ABSENT:
        # Ours only: removed on the command line (`~KEY`), at the key our conf feeds it from, as the script has it;
        # our typed nodes (parallel.*, model.*) cannot lose a key.
        for key in [target] if target.startswith("megatron.") else keys or [shown]:
            if key in OURS_ON_PURPOSE or key.startswith(("parallel.", "model.")):
                result.fixes[key] = OURS_ON_PURPOSE.get(key, "kept from the preset: our typed node needs it")
            elif key not in result.removed:
                result.removed.append(key)
        return
    if why := _secret(target, value):
        result.unmapped.append((shown, f"not written: {why}; export it in the shell before `ray start` instead"))
        for key in keys or [shown]:
            result.fixes[key] = "not written (a secret)"
        return
    group = "parallel" if target.startswith("parallel.") else "tuning"
    written = target.removeprefix("parallel.") if group == "parallel" else target
    result.files.setdefault(group, {})[written] = value
    where = f"{group}/{NAME}.yaml:{written}"
    result.mapped.append((shown, where + (f" ({note})" if note else ""), value))
    if target != shown and target.startswith(("parallel.", "megatron.")):
        result.moved.append(f"{shown}: set on verl's keys, written once as {target} (actor and ref read it)")


def _map_env(recorded: Recorded, ours_cfg: DictConfig, result: Imported, other_device: Recorded | None) -> None:
    ours = {k: v for k, v in effective_env(ours_cfg, environ={}).items() if v != ""}
    for name, value in sorted(recorded.env.items()):
        key = f"ENV.{name}"
        if name in NOT_CARRIED:
            result.fixes[key] = f"not carried: {NOT_CARRIED[name]}"
        elif looks_secret(name) or credentials_in(value):
            result.fixes[key] = "not written (a secret)"
            result.unmapped.append(
                (name, "not written: it looks like a secret; export it in the shell before `ray start`")
            )
        elif ours.get(name) != value:
            result.files.setdefault("tuning", {})[f"env.set.{name}"] = value
            result.mapped.append((f"export {name}", f"tuning/{NAME}.yaml:env.set.{name}", value))
    for name in sorted(set(ours) - set(recorded.env)):
        result.fixes[f"ENV.{name}"] = f"kept from the preset (device={result.device}): the script does not export it"
    if not recorded.unset_proxies and ours_cfg.env.unset:
        other = ""
        if other_device is not None and other_device.unset_proxies:
            other = f" (it clears them on {'gpu' if result.device == 'npu' else 'npu'} only)"
        for name in ours_cfg.env.unset:
            if name in ("http_proxy", "https_proxy"):
                result.fixes[f"ENV.{name}"] = f"proxies cleared on every device{other}: the script leaves them set"


CLEAR = f"{NAME}_clear"  # tuning/imported_clear.yaml: the nodes the preset lists whole, cleared first


def _verl_node(node: str) -> str:
    """The verl node a node of ours feeds (`megatron.X` feeds the actor's and the ref's `megatron.X`)."""
    return ACTOR_MEGATRON + node.removeprefix("megatron.") if node.startswith("megatron.") else node


def _clear_nodes(result: Imported, ours_raw: dict[str, Any]) -> None:
    """A key of ours that neither the script nor verl has cannot be taken away by a file Hydra merges; the node
    holding it is cleared (set to null by tuning/imported_clear.yaml, merged before tuning/imported.yaml) and
    listed whole, as the script has it, in tuning/imported.yaml. So the preset folder alone composes the
    script. Not for a node fed by an interpolation of ours (it would be written out as literals), for a node the
    script lacks, or a top-level one: those stay `~KEY` on the command line."""
    result.cleared = {}
    for key in result.removed:
        node = key.rpartition(".")[0]
        verl_node = _verl_node(node)
        if node.count(".") < 1 or node in ("megatron",):
            continue
        leaves = {k[len(verl_node) + 1 :]: v for k, v in result.script.items() if k.startswith(f"{verl_node}.")}
        if not leaves and result.script.get(verl_node) != {}:
            continue
        if any("${" in str(v) for k, v in ours_raw.items() if k.startswith(f"{node}.")):
            continue
        if any(_secret(f"{node}.{k}", v) for k, v in leaves.items()):
            continue
        result.cleared.setdefault(node, []).append(key)
        tuning = result.files.setdefault("tuning", {})
        for k in [k for k in tuning if k == node or k.startswith(f"{node}.")]:
            del tuning[k]
        tuning.update({f"{node}.{k}": v for k, v in leaves.items()} or {node: {}})


def _write(out: Path, result: Imported) -> None:
    out.mkdir(parents=True, exist_ok=True)
    if result.cleared:
        tree: dict[str, Any] = {}
        for node in result.cleared:
            *parents, last = node.split(".")
            at = tree
            for part in parents:
                at = at.setdefault(part, {})
            at[last] = None
        header = (
            "# @package _global_\n# Imported by `verl-qwen35 import`: the nodes tuning/imported.yaml lists whole, "
            "cleared first (ours has keys\n# neither the script nor verl has; a merged file cannot remove a key).\n"
        )
        body = yaml.safe_dump(tree, sort_keys=False, allow_unicode=True, default_flow_style=False)
        write_file(out / "tuning" / f"{CLEAR}.yaml", header + body, within=out)
    for group, flat in result.files.items():
        tree: dict[str, Any] = {}
        for key, value in flat.items():
            node = tree
            *parents, last = key.split(".")
            for part in parents:
                node = node.setdefault(part, {})
            node[last] = _written_value(value)
        base = f"{result.model}_{result.device}"
        has_base = (conf_dir() / group / f"{base}.yaml").is_file()
        header = "# @package _global_\n" if group == "tuning" else ""
        header += f"# Imported by `verl-qwen35 import`: only what differs from {group}/{base}.\n"
        cleared = [CLEAR] if group == "tuning" and result.cleared else []
        defaults = {"defaults": [*([base] if has_base else []), *cleared, "_self_"]} if has_base or cleared else {}
        body = yaml.safe_dump({**defaults, **tree}, sort_keys=False, allow_unicode=True, default_flow_style=False)
        write_file(out / group / f"{NAME}.yaml", header + body, within=out)


def check_out(out: Path) -> None:
    if out.is_file() or (out.exists() and not out.is_dir()):
        raise UserError(f"--out {out}: a file; give a new or empty directory")
    if out.is_dir() and any(out.iterdir()):
        raise UserError(f"--out {out}: not empty; give a new or empty directory (nothing is overwritten)")


def import_preset(recorded: Recorded, device: str | None, out: Path, other: Recorded | None = None) -> Imported:
    """Write the preset under `out` and return what went where; the preset is composed back and compared."""
    check_out(out)
    for line in recorded.overrides:  # written into the preset's YAML: refused whole, never split into two lines
        if LINE_BREAK.search(line):
            raise line_break_refusal(line.split("=", 1)[0].lstrip("+~"))
    for found in line_break_keys(recorded.env, "env.set"):
        raise line_break_refusal(found)
    probe = Imported(model="", device="")
    script_cfg = verl_effective(recorded.overrides, probe)
    script = flatten(script_cfg)
    chosen, how = chosen_device(device, script, recorded.env)
    result = Imported(model=closest_model(script["actor_rollout_ref.model.path"]), device=chosen, how=how)
    result.unmapped, result.script = probe.unmapped, script
    result.script_keys = script_keys(recorded.overrides)
    ours_cfg = compose([f"model={result.model}", f"device={result.device}"])
    _map_keys(script, ours_cfg, result, derived=False)
    # The environment is compared with ours as the preset composes it: with the script's logger group (which sets
    # where each backend writes: WANDB_DIR for wandb, TENSORBOARD_DIR for tensorboard), not our default one.
    logger = [f"logger=[{','.join(result.logger)}]"] if result.logger is not None else []
    env_cfg = compose([f"model={result.model}", f"device={result.device}", *logger]) if logger else ours_cfg
    _map_env(recorded, env_cfg, result, other)
    ours_raw = flatten(OmegaConf.to_container(ours_cfg, resolve=False))
    _clear_nodes(result, ours_raw)
    _write(out, result)
    _map_keys(script, composed(result, out)[0], result, derived=True)
    _clear_nodes(result, ours_raw)
    for group in result.files:
        (out / group / f"{NAME}.yaml").unlink(missing_ok=True)  # the second pass may add a group
    (out / "tuning" / f"{CLEAR}.yaml").unlink(missing_ok=True)
    _write(out, result)
    return result


def script_keys(lines: list[str]) -> set[str]:
    """The keys the script's overrides name (`+`/`++` stripped)."""
    check_bounds(lines)
    parser, keys = OverridesParser.create(), set()
    for line in lines:
        try:
            keys.add(parser.parse_override(line).key_or_group)
        except Exception:  # not an override (verl_effective sets it aside)
            continue
    return keys


def composed(result: Imported, out: Path) -> tuple[DictConfig, dict[str, Any]]:
    """The imported preset composed as its command composes it, flattened with its environment (ENV.*)."""
    cfg = compose([f"device={result.device}", f"model={result.model}", *result.overrides()], [out])
    flat = flatten(cfg)
    flat.update({f"ENV.{k}": v for k, v in effective_env(cfg, environ={}).items() if v != ""})
    return cfg, flat


def _as_launched(value: Any) -> Any:
    """A script's value as the composed preset reads it: the recording's HOME read is the HOME a launch has."""
    return value.replace(HOME_READ, os.environ.get("HOME", "")) if isinstance(value, str) else value


def residual(result: Imported, recorded: Recorded, out: Path) -> dict[str, tuple]:
    """Keys where the composed preset still differs from the script, other than the reported fixes."""
    script = {
        k: _as_launched(v)
        for k, v in (
            result.script or flatten(verl_effective(recorded.overrides, Imported(model="", device="")))
        ).items()
    }
    script.update({f"ENV.{k}": _as_launched(v) for k, v in recorded.env.items()})
    _, ours = composed(result, out)
    verl_top = {k.split(".", 1)[0] for k in script} | {"ENV"}
    return {k: v for k, v in differences(script, ours, verl_top).items() if k not in result.fixes}


def report(result: Imported, out: Path, leftover: dict[str, tuple], notes: Iterable[str]) -> str:
    lines = [f"imported as model={result.model} device={result.device} (device from {result.how}) into {out}"]
    given = [m for m in result.mapped if result.set_by_script(m[0])]
    lines += ["set by the script:"] + [f"  {key} -> {where} = {redact(repr(value))}" for key, where, value in given]
    if not given:
        lines.append("  nothing our preset does not already have")
    if result.logger is not None:
        group = ",".join(result.logger)
        lines.append(f"  trainer.logger -> logger=[{group}] (our logger group: it sets where each backend writes)")
    lines += ["verl's default (the script leaves it; our preset has another value):"]
    defaults = [m for m in result.mapped if m not in given]
    lines += [f"  {key} -> {where} = {redact(repr(value))}" for key, where, value in defaults]
    if result.cleared:
        lines += [f"ours only, left out (neither the script nor verl has it; tuning/{CLEAR}.yaml clears the node):"]
        lines += [
            f"  {node}: listed whole as the script has it, without {', '.join(k.rpartition('.')[2] for k in keys)}"
            for node, keys in result.cleared.items()
        ]
    if result.on_command_line():
        lines += ["ours only, removed on the command line (neither the script nor verl has it):"]
        lines += [f"  ~{k}" for k in result.on_command_line()]
    lines += ["changed by us:"] + [f"  {key}: {why}" for key, why in sorted(result.fixes.items())]
    lines += [f"  {line}" for line in result.moved]
    if result.unmapped:
        lines += ["not mapped:"] + [f"  {shown_line(what)}: {why}" for what, why in result.unmapped]
    if leftover:
        lines += ["still differs (please report):"] + [
            f"  {k}: script={redact(repr(a))} preset={redact(repr(b))}" for k, (a, b) in leftover.items()
        ]
    lines += [f"note: {n}" for n in notes]
    lines.append(result.command(out))
    return os.linesep.join(lines)
