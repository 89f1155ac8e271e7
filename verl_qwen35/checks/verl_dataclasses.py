"""A key verl's config dataclasses do not have: `+actor_rollout_ref.actor.checkpoint.zzz=1`.

verl builds the actor, ref, rollout and model sections (and the critic's, when it trains one) into its
config dataclasses at start-up with `omega_conf_to_dataclass` (verl/utils/config.py:50 in 0.9.1, :43 in
0.8.0): Hydra's `instantiate`, which calls each `_target_` dataclass, nested ones included, with the
node's keys as keyword arguments; a key the dataclass has no field for is a TypeError ("unexpected
keyword argument") on the workers, after Ray and the models have started. The field names of every
dataclass a `_target_` of verl's trainer config names ship per verl minor (`dataclass_fields` in
`verl_qwen35/data/upstream/verl_<minor>.json`, `scripts/verl_fields.py`), so no verl import is needed.
"""

import difflib
from functools import cache
from typing import Any

from omegaconf import DictConfig, OmegaConf

from verl_qwen35.checks.algorithm import needs_critic
from verl_qwen35.checks.batches import uses_reference
from verl_qwen35.checks.problem import Problem, error
from verl_qwen35.checks.verl_types import BASE, shipped_verl_data
from verl_qwen35.config.yaml_files import load_yaml
from verl_qwen35.installed import installed_verl, verl_config_dir

BUILD = "verl/utils/config.py:50 omega_conf_to_dataclass"
# The section -> where verl 0.9.1 builds it at start-up; the ref and critic only when the run has them.
BUILT = {
    "actor_rollout_ref.model": "verl/workers/engine_workers.py:540",
    "actor_rollout_ref.actor": "verl/workers/engine_workers.py:593",
    "actor_rollout_ref.ref": "verl/workers/engine_workers.py:553",
    "actor_rollout_ref.rollout": "verl/workers/engine_workers.py:651",
    "critic": "verl/trainer/ppo/ray_trainer.py:803",
}
# verl's engine worker pops these ref keys (renaming them to the actor's) before building the ref
# (verl/workers/engine_workers.py:545-551); validators/verl_ref.py does the same on a copy.
REF_RENAMES = {
    "log_prob_micro_batch_size": "ppo_micro_batch_size",
    "log_prob_micro_batch_size_per_gpu": "ppo_micro_batch_size_per_gpu",
    "log_prob_use_dynamic_bsz": "use_dynamic_bsz",
    "log_prob_max_token_len_per_gpu": "ppo_max_token_len_per_gpu",
}


def built_sections(cfg: DictConfig) -> dict[str, str]:
    """The sections verl builds into dataclasses for this run, with the line that builds each."""
    skipped = set()
    if not uses_reference(cfg):
        skipped.add("actor_rollout_ref.ref")
    if not needs_critic(cfg):
        skipped.add("critic")
    return {key: line for key, line in BUILT.items() if key not in skipped}


@cache
def own_keys() -> frozenset[str]:
    """Every dotted key of a verl newer than the known releases' own resolved trainer config (empty for a known
    verl, whose field lists ship). verl regenerates `_generated_ppo_megatron_trainer.yaml` from its config and
    dataclasses (scripts/generate_trainer_config.sh), so a key it holds is one the newer verl's dataclass takes:
    the field lists of the newest known release, which predate it, are not the judge of that key."""
    if not installed_verl().newer:
        return frozenset()
    return frozenset(_dotted(load_yaml(verl_config_dir() / BASE)))


def _dotted(tree: Any, prefix: str = "") -> set[str]:
    found = set()
    if isinstance(tree, dict):
        for key, value in tree.items():
            found |= {f"{prefix}{key}"} | _dotted(value, f"{prefix}{key}.")
    return found


def _unknown(node: dict, path: str, fields: dict[str, list[str]], where: str, allowed: set[str]) -> list[Problem]:
    """The keys of this node (unresolved), and of every nested `_target_` node, that their dataclass lacks. A
    node that is an interpolation of another (`rollout.mtp: ${actor_rollout_ref.model.mtp}`) is a text here:
    it is judged where it is set."""
    found: list[Problem] = []
    target = node.get("_target_")
    known = fields.get(target) if isinstance(target, str) else None
    if known is not None:
        own = {key for key in map(str, node) if f"{path}.{key}" in own_keys()}
        for key in sorted(set(map(str, node)) - set(known) - {"_target_"} - allowed - own):
            close = difflib.get_close_matches(key, known, n=1)
            hint = f"; did you mean {path}.{close[0]}?" if close else ""
            found.append(
                error(
                    f"{path}.{key}",
                    f"={node[key]!r}: verl builds {path} as {target.rpartition('.')[2]} ({where}, {BUILD}: Hydra's "
                    f'instantiate), which has no field `{key}`, so the workers stop at start-up with "unexpected '
                    f"keyword argument '{key}'\". Remove the key{hint}",
                )
            )
    for key, value in node.items():
        if isinstance(value, dict):
            found += _unknown(value, f"{path}.{key}", fields, where, set())
    return found


# Sections verl reads key by key as plain mappings (no dataclass is built from them), so a misspelt key is not an
# error there: it is never read, and verl's default runs instead. The keys verl reads: listed, or (None) the keys of
# verl's own YAML for the section (the shipped field list).
READ_BY_NAME = {
    "algorithm.rollout_correction": (None, "verl/trainer/ppo/rollout_corr_helper.py:1013 reads it key by key"),
    "custom_reward_function": (
        ("path", "name", "reward_kwargs"),
        "copied to reward.custom_reward_function (verl/experimental/reward_loop/reward_loop.py:59); "
        "verl/trainer/ppo/reward.py:70-82 get_custom_reward_fn reads path, name and reward_kwargs",
    ),
    "reward.custom_reward_function": (
        ("path", "name", "reward_kwargs"),
        "verl/trainer/ppo/reward.py:70-82 get_custom_reward_fn reads path, name and reward_kwargs",
    ),
}


def unread_key_problems(cfg: DictConfig) -> list[Problem]:
    """One error per key, in a section verl reads by name, that verl never reads (a misspelling, mostly)."""
    fields = shipped_verl_data().get("fields", {})
    found: list[Problem] = []
    for section, (names, where) in READ_BY_NAME.items():
        node = OmegaConf.select(cfg, section, default=None)
        if not OmegaConf.is_dict(node):
            continue
        known = set(names or {k[len(section) + 1 :].split(".")[0] for k in fields if k.startswith(section + ".")})
        for key in sorted(set(map(str, node)) - known - {"_target_"}) if known else ():
            close = difflib.get_close_matches(key, sorted(known), n=1)
            hint = f"; did you mean {section}.{close[0]}?" if close else f"; verl reads {', '.join(sorted(known))}"
            found.append(
                error(
                    f"{section}.{key}",
                    f"is never read: {where}, so this value has no effect and verl's default runs in its place{hint}",
                )
            )
    return found


def unknown_field_problems(cfg: DictConfig) -> list[Problem]:
    """One error per key, in a section verl builds at start-up, that verl's dataclass for it does not have."""
    fields = shipped_verl_data().get("dataclass_fields", {})
    found: list[Problem] = []
    for section, where in built_sections(cfg).items():
        node = OmegaConf.select(cfg, section, default=None)
        if OmegaConf.is_dict(node):
            allowed = set(REF_RENAMES) if section == "actor_rollout_ref.ref" else set()
            found += _unknown(OmegaConf.to_container(node, resolve=False), section, fields, where, allowed)
    return found
