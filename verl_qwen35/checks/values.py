"""Every number the preflight and verl compute with is an integer of the right sign, or null where allowed.

Runs first: the layout, batch and pipeline rules (and the dry-run plan) divide by these values, so a
`parallel.vpp=2.5`, `rollout.n=2.5`, `parallel.tp=two` or `data.train_batch_size=abc` is answered here,
once, naming the key, and the dependent rules are skipped. The type of each key is read, not restated: the
schema (config/schema.py) for our nodes, verl's shipped field list (checks/verl_types.py, from
`verl/workers/config/{actor,engine,rollout}.py`, `verl/trainer/config/data`) and megatron-core's
`TransformerConfig` (checks/megatron_keys.py); this module adds only the smallest value each may take.
"""

from dataclasses import fields
from typing import Any, get_args

from omegaconf import DictConfig, OmegaConf

from verl_qwen35.checks.layout import KEYS
from verl_qwen35.checks.megatron_keys import field_spec
from verl_qwen35.checks.problem import Problem, error
from verl_qwen35.checks.verl_types import shipped_verl_data
from verl_qwen35.config.schema import ACTOR, LAYOUT_FEEDS, PARALLEL_KEYS, Parallel

ARR = "actor_rollout_ref"
OTC = "megatron.override_transformer_config"
# key -> smallest value: the sign these integers need, which no type says. Whether a key takes a whole number
# and whether null is allowed is its type's (`kinds`): the schema's for `parallel.*`, megatron-core's
# TransformerConfig for the override keys, verl's shipped field list for verl's own keys.
LOWEST: dict[str, int] = {
    **{f"parallel.{f.name}": 1 for f in fields(Parallel)},
    **{f"{ACTOR}.{key}": 1 for key in PARALLEL_KEYS},
    "trainer.nnodes": 1,
    "trainer.n_gpus_per_node": 1,
    f"{ARR}.rollout.tensor_model_parallel_size": 1,
    f"{ARR}.rollout.data_parallel_size": 1,
    f"{ARR}.rollout.pipeline_model_parallel_size": 1,
    f"{ARR}.rollout.expert_parallel_size": 1,
    "data.train_batch_size": 1,
    # torch's BatchSampler refuses a batch size below 1 (StatefulDataLoader, verl/trainer/ppo/ray_trainer.py:414-420);
    # verl 0.9's v1 trainer reads 0 as "the whole set" (v1/trainer_base.py:754), so 0 is left to verl there
    "data.val_batch_size": 0,
    "data.max_prompt_length": 1,
    "data.max_response_length": 1,
    f"{ARR}.rollout.n": 1,
    f"{ARR}.actor.ppo_mini_batch_size": 1,
    f"{ARR}.actor.ppo_micro_batch_size_per_gpu": 1,
    f"{ARR}.actor.ppo_micro_batch_size": 1,
    f"{ARR}.actor.ppo_max_token_len_per_gpu": 1,
    f"{ARR}.ref.log_prob_micro_batch_size_per_gpu": 1,
    f"{ARR}.ref.log_prob_micro_batch_size": 1,
    f"{ARR}.ref.log_prob_max_token_len_per_gpu": 1,
    f"{ARR}.rollout.log_prob_micro_batch_size_per_gpu": 1,
    f"{ARR}.rollout.log_prob_micro_batch_size": 1,
    f"{ARR}.rollout.log_prob_max_token_len_per_gpu": 1,
    f"{ARR}.rollout.max_model_len": 1,
    f"{ARR}.rollout.engine_kwargs.vllm.max_model_len": 1,
    f"{OTC}.recompute_num_layers": 1,
    f"{OTC}.num_layers_in_first_pipeline_stage": 1,
    f"{OTC}.num_layers_in_last_pipeline_stage": 1,
    f"{OTC}.mtp_num_layers": 0,
    f"{OTC}.microbatch_group_size_per_vp_stage": 1,
    f"{OTC}.moe_router_topk": 1,
    f"{OTC}.cpu_offloading_num_layers": 0,
}
# The kinds of the integers that no shipped field list types: verl's ref log-prob keys (verl reads them from
# a plain section, never a dataclass) and vLLM's engine arguments (verl passes them on as they are).
UNTYPED = {
    f"{ARR}.ref.log_prob_micro_batch_size_per_gpu": ["int", "null"],
    f"{ARR}.ref.log_prob_micro_batch_size": ["int", "null"],
    f"{ARR}.ref.log_prob_max_token_len_per_gpu": ["int"],
    f"{ARR}.rollout.engine_kwargs.vllm.max_model_len": ["int", "null"],
    "data.val_batch_size": ["int", "null"],
}
_PARALLEL = {
    f"parallel.{f.name}": ["int", "null"] if type(None) in get_args(f.type) else ["int"] for f in fields(Parallel)
}


def kinds(key: str) -> list[str]:
    """What the key's type takes, from the one list that types it."""
    if key in _PARALLEL:
        return _PARALLEL[key]
    if key.startswith(f"{OTC}."):
        return field_spec().get(key.removeprefix(f"{OTC}."), {}).get("kinds", [])
    return shipped_verl_data()["fields"].get(key, {}).get("kinds") or UNTYPED.get(key, [])


# A verl key that a shorthand feeds is reported under the shorthand.
FED_BY = {f"{ACTOR}.{key}": source for key, source in PARALLEL_KEYS.items()} | LAYOUT_FEEDS
# Fractions: key -> (lowest exclusive, highest inclusive)
FRACTIONS = {f"{ARR}.rollout.gpu_memory_utilization": (0.0, 1.0)}


def _shown(key: str) -> str:
    short = key.removeprefix("parallel.")
    return KEYS.get(short, key) if key.startswith("parallel.") else key


def integer_problem(key: str, value: Any, nullable: bool, lowest: int) -> str | None:
    """Why `value` is not acceptable for an integer key, or None."""
    if value is None:
        return None if nullable else "is null; it needs an integer"
    if isinstance(value, bool) or not isinstance(value, int):
        kind = type(value).__name__
        hint = f" (write {int(value)})" if isinstance(value, float) and value.is_integer() else ""
        return f"={value!r} is of type {kind}; it must be a whole number{hint}{' or null' if nullable else ''}"
    if value < lowest:
        return f"={value} must be >= {lowest}{' (or null)' if nullable else ''}"
    return None


def value_problems(cfg: DictConfig) -> list[Problem]:
    found: list[Problem] = []
    bad_sources: set[str] = set()
    parents: dict[str, Any] = {}
    for key, lowest in LOWEST.items():
        taken = kinds(key)
        if "int" not in taken:
            continue  # not an integer in the installed verl or megatron-core: its type rule judges it
        nullable = "null" in taken
        parent_key, _, leaf = key.rpartition(".")
        if parent_key not in parents:
            parents[parent_key] = OmegaConf.select(cfg, parent_key, default=None)
        parent = parents[parent_key]
        if not isinstance(parent, DictConfig) or leaf not in parent:
            continue
        value = parent[leaf]
        why = integer_problem(key, value, nullable, lowest)
        if why is None:
            continue
        source = FED_BY.get(key)
        if source in bad_sources:
            continue  # already reported under the shorthand that feeds it
        if key.startswith("parallel."):
            bad_sources.add(key)
        found.append(error(_shown(key), why))
    for key, (low, high) in FRACTIONS.items():
        value = OmegaConf.select(cfg, key, default=None)
        if isinstance(value, bool) or not isinstance(value, int | float) or not low < value <= high:
            found.append(error(key, f"={value!r} must be a number in ({low}, {high}]; the presets use 0.6-0.66"))
    return found
