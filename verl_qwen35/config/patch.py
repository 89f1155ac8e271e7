"""One Megatron patch for actor and ref: every `megatron.<key>` is linked to both sides."""

import re
from functools import cache
from pathlib import Path

from omegaconf import DictConfig, OmegaConf, open_dict

from verl_qwen35.config.schema import ACTOR, REF
from verl_qwen35.installed import conf_dir


@cache
def anchored_keys() -> frozenset[str]:
    """`megatron.*` keys our conf already feeds to both sides (the `&megatron_patch` anchor and the
    verl_schema files)."""
    texts = [p.read_text() for p in Path(conf_dir()).rglob("*.yaml")]
    return frozenset(k for text in texts for k in re.findall(r"\$\{megatron\.(\w+)\}", text))


def link_patch(cfg: DictConfig) -> list[str]:
    """Make every `megatron.<key>` feed both sides, also keys our conf does not list (`+megatron.seed=7`):
    the YAML anchor in conf/config.yaml names a fixed set of keys, this carries any other one (one
    place, as for the anchored keys). A key whose two sides already disagree is left alone for
    `parity_errors` to report. Returns the keys linked here."""
    actor, ref = (OmegaConf.select(cfg, side, default=None) for side in (ACTOR, REF))
    if not (OmegaConf.is_dict(cfg.get("megatron")) and OmegaConf.is_dict(actor) and OmegaConf.is_dict(ref)):
        return []  # a side set to null: checks/sections.py structure_problems names it
    raw = {side: OmegaConf.to_container(node, resolve=False) for side, node in ((ACTOR, actor), (REF, ref))}
    linked = []
    for key in cfg.megatron:
        link = f"${{megatron.{key}}}"
        if key in anchored_keys() or all(raw[side].get(key) == link for side in raw):
            continue
        if plain(actor.get(key)) != plain(ref.get(key)):
            continue
        for node in (actor, ref):
            with open_dict(node):
                node[key] = link
        linked.append(key)
    return linked


def plain(value: object) -> object:
    """A resolved plain value (containers become dicts/lists) for comparison."""
    return OmegaConf.to_container(value, resolve=True) if OmegaConf.is_config(value) else value
