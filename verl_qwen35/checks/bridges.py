"""What the bridge verl's Megatron engine builds the TransformerConfig through sets for Qwen3.5 MoE.

verl 0.9.1 `verl/workers/engine/megatron/transformer_impl.py` `_build_tf_config` does not hand megatron-core
the user's `override_transformer_config` alone: mbridge (`megatron.vanilla_mbridge=true`, the GPU presets) or
Megatron-Bridge (`false`, the NPU presets) first sets values of its own for the model (shared-expert overlap,
bias-activation fusion, grouped GEMM, ...), then the user's overrides win. megatron-core's
`TransformerConfig.__post_init__` judges the merge, so the fast rules (`checks/transformer.py`) see the
bridge's values as defaults the user did not type. The values, each cited to the bridge's file and line at the
version verl pins, are data: `verl_qwen35/data/bridges/qwen35_moe.yaml`. Pure: no torch, megatron or bridge import.
"""

import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

from omegaconf import DictConfig, OmegaConf

from verl_qwen35.checks.problem import Problem, error
from verl_qwen35.config.yaml_files import load_yaml
from verl_qwen35.data import DATA_DIR
from verl_qwen35.model.layout import Layout
from verl_qwen35.model.pipeline import OTC

TABLE = DATA_DIR / "bridges" / "qwen35_moe.yaml"
TABLE_NAME = "verl_qwen35/data/bridges/qwen35_moe.yaml"
VANILLA = "actor_rollout_ref.actor.megatron.vanilla_mbridge"


@dataclass(frozen=True)
class Setting:
    """One TransformerConfig value a bridge (or verl's step after it) sets, with the line that sets it."""

    name: str
    value: Any
    source: str
    by: str  # "mbridge 641a5a0", "verl"


@dataclass(frozen=True)
class Bridge:
    key: str  # mbridge | megatron_bridge
    title: str
    repository: str
    commit: str
    module: str
    cls: str
    selected_by: str
    table: Mapping[str, Any]  # this bridge's entry of the data file
    verl: Mapping[str, Any]  # verl's steps between this bridge and override_transformer_config

    @property
    def short(self) -> str:
        return f"{self.title} {self.commit[:7]}"

    @property
    def extra_fields(self) -> frozenset[str]:
        """Fields of the bridge's own config class that megatron-core's TransformerConfig lacks."""
        return frozenset(self.table.get("extra_fields", {}).get("names", []))

    def settings(self, lo: Layout, sequence_parallel: bool = False) -> dict[str, Setting]:
        """Every value the bridge and verl's steps set on this layout, in the order verl applies them."""
        found: dict[str, Setting] = {}
        for by, node in ((self.short, self.table), ("verl", self.verl)):
            for name, entry in node.get("values", {}).items():
                found[name] = Setting(name, entry["value"], entry["source"], by)
            for name, entry in node.get("layout_values", {}).items():
                found[name] = Setting(name, _layout_value(entry["when"], lo, sequence_parallel), entry["source"], by)
        return found


def _layout_value(when: str, lo: Layout, sequence_parallel: bool) -> bool:
    rules = {
        "tp_gt_1": lo.tp > 1,
        "vpp_and_pp_gt_1": lo.vpp is not None and lo.pp > 1,
        "vpp_gt_1": lo.vpp is not None and lo.vpp > 1,
        "engine_sequence_parallel": sequence_parallel and lo.tp > 1,  # verl/workers/config/engine.py: off at tp=1
    }
    return rules[when]


@cache
def bridges() -> dict[str, Bridge]:
    data = load_yaml(TABLE)
    return {
        key: Bridge(
            key=key,
            title=entry["title"],
            repository=entry["repository"],
            commit=entry["commit"],
            module=entry["module"],
            cls=entry["class"],
            selected_by=entry["selected_by"],
            table=entry,
            verl=data["verl_steps"][key],
        )
        for key, entry in data["bridges"].items()
    }


def bridge_of(cfg: DictConfig) -> Bridge:
    """The bridge verl's engine picks: `vanilla_mbridge` (transformer_impl.py `_build_tf_config`)."""
    vanilla = bool(OmegaConf.select(cfg, VANILLA, default=False))
    return bridges()["mbridge" if vanilla else "megatron_bridge"]


def with_bridge(otc: Mapping[str, Any], settings: Mapping[str, Setting]) -> dict[str, Any]:
    """The values megatron-core receives: the bridge's and verl's, then the user's overrides (which win)."""
    return {**{name: s.value for name, s in settings.items()}, **otc}


def explain(problems: list[Problem], otc: Mapping[str, Any], settings: Mapping[str, Setting]) -> list[Problem]:
    """Say which of a refusal's values the bridge set (the user did not type them) and where it set them."""
    out = []
    for problem in problems:
        names = [k.removeprefix(f"{OTC}.") for k in problem.keys if k.startswith(f"{OTC}.")]
        # a fact in the message ("... with moe_shared_expert_overlap ...") counts too
        named = set(names) | {n for n in settings if re.search(rf"(?<![A-Za-z_]){n}(?![A-Za-z_])", problem.message)}
        set_by_bridge = [settings[n] for n in settings if n in named and n not in otc]
        if not set_by_bridge:
            out.append(problem)
            continue
        said = "; ".join(
            f"{s.by} sets {s.name}={_shown(s.value)} for Qwen3.5 ({s.source}): "
            f"set {OTC}.{s.name} to choose another value"
            for s in set_by_bridge
        )
        keys = tuple(dict.fromkeys([*problem.keys, *(f"{OTC}.{s.name}" for s in set_by_bridge)]))
        keys = tuple(k for k in keys if k != OTC) or (OTC,)  # the field the bridge set names it better
        out.append(Problem(problem.level, keys, f"{problem.message} ({said})"))
    return out


def _shown(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def bridge_problems(otc: Mapping[str, Any], arch: Any, lo: Layout, bridge: Bridge) -> list[Problem]:
    """What the bridge refuses itself: expert layouts it cannot load weights into, layouts its provider refuses."""
    found = []
    settings = bridge.settings(lo)
    merged = with_bridge(otc, settings)
    for limit in bridge.table.get("load_limits", []):
        if all(_matches(merged.get(name), value) for name, value in limit["when"].items()):
            keys = tuple(f"{OTC}.{name}" for name in limit["when"])
            message = " ".join(limit["message"].split())
            said = f"{_when(limit['when'], merged)}: {message} ({limit['source']}); drop the override"
            found.append(error(keys, said))
    for limit in bridge.table.get("layout_limits", []):
        if limit["rule"] == "tp_le_query_groups" and lo.tp > arch.num_key_value_heads:
            message = " ".join(limit["message"].split())
            found.append(
                Problem(
                    limit.get("level", "error"),
                    ("parallel.tp",),
                    f"={lo.tp}: {message} ({arch.num_key_value_heads} for {arch.name}; {limit['source']}); "
                    f"with such a Megatron-Bridge use parallel.tp <= {arch.num_key_value_heads}",
                )
            )
    return found


def _matches(value: Any, wanted: Any) -> bool:
    """A load limit's condition: the value, or "!value" for any other value."""
    if isinstance(wanted, str) and wanted.startswith("!"):
        return value != wanted[1:]
    return value == wanted


def _when(when: Mapping[str, Any], merged: Mapping[str, Any]) -> str:
    return ", ".join(f"{name}={_shown(merged.get(name))}" for name in when)
