"""Actor and ref must run the same Megatron patch; verl links them only until one side is overridden.

The whole subtrees `actor_rollout_ref.actor.megatron` and `actor_rollout_ref.ref.megatron` are compared
leaf by leaf (not only the keys our `megatron` node feeds): verl's ref falls back to the actor through
`oc.select` interpolations (verl/trainer/config/ref/*.yaml), which an override on either side breaks.
"""

import difflib
import json

from omegaconf import DictConfig, OmegaConf

from verl_qwen35.checks.problem import Problem, error
from verl_qwen35.config.patch import plain
from verl_qwen35.config.schema import ACTOR, LAYOUT_FEEDS, PARALLEL_KEYS, REF

# Keys verl sets differently on the two sides by design (verl 0.8.0 / 0.9.1
# `verl/trainer/config/_generated_ppo_megatron_trainer.yaml`, `ref/*.yaml`); not compared.
ONE_SIDED = {
    "forward_only": "verl's ref sets forward_only=true (the ref never trains, so no optimizer is built); "
    "the actor false",
}


# What the patch covers besides parallel sizes, for a plain verl config without our `megatron` node.
PLAIN_VERL_PATCH_KEYS = (
    "use_mbridge",
    "vanilla_mbridge",
    "use_remove_padding",
    "dtype",
    "param_offload",
    "override_transformer_config",
)


def patch_sources(cfg: DictConfig) -> dict[str, str | None]:
    """Each patched key of actor/ref megatron, mapped to the key it must come from (None: a plain
    verl config, where only actor and ref can be compared)."""
    if "megatron" not in cfg:
        return {key: None for key in (*PLAIN_VERL_PATCH_KEYS, *PARALLEL_KEYS)}
    sources: dict[str, str | None] = {key: f"megatron.{key}" for key in cfg.megatron}
    sources.update(PARALLEL_KEYS)
    return sources


def _leaves(value: object, prefix: str = "") -> dict[str, object]:
    """Dotted path -> value of every leaf (an empty mapping has none)."""
    if isinstance(value, dict):
        found: dict[str, object] = {}
        for key, inner in value.items():
            found |= _leaves(inner, f"{prefix}.{key}" if prefix else str(key))
        return found
    return {prefix: value}


def parity_errors(cfg: DictConfig) -> list[Problem]:
    """One error per key on which actor, ref and the patch disagree, naming all three keys."""
    errors = []
    sources = patch_sources(cfg)
    actor_all, ref_all = (plain(OmegaConf.select(cfg, side, default=None)) or {} for side in (ACTOR, REF))
    for key, source in sources.items():
        actor, ref = actor_all.get(key), ref_all.get(key)
        if source is None:
            if actor != ref:
                errors.append(
                    error(
                        (f"{ACTOR}.{key}", f"{REF}.{key}"),
                        (
                            f"{ACTOR}.{key}={json.dumps(actor)} but {REF}.{key}={json.dumps(ref)}: "
                            "actor and ref must share the Megatron patch"
                        ),
                    )
                )
            continue
        keys = (f"{ACTOR}.{key}", f"{REF}.{key}", source)
        if actor != ref:
            errors.append(
                error(
                    keys,
                    (
                        f"{ACTOR}.{key}={actor!r} but {REF}.{key}={ref!r}: actor and ref must share the "
                        f"Megatron patch. Set {source}=... (it feeds both) and drop the side-specific override."
                    ),
                )
            )
        elif actor != (want := plain(OmegaConf.select(cfg, source))):
            errors.append(
                error(
                    keys,
                    (
                        f"{ACTOR}.{key} and {REF}.{key} are {actor!r} but {source}={want!r}: set {source} "
                        f"instead, so the printed patch is the one that runs."
                    ),
                )
            )
    return errors + subtree_errors(cfg, set(sources), actor_all, ref_all)


def subtree_errors(cfg: DictConfig, compared: set[str], actor_all: dict, ref_all: dict) -> list[Problem]:
    """Every other leaf of the two megatron subtrees must be equal too (`seed`, `sequence_parallel`,
    `use_distributed_optimizer`, `override_ddp_config`, `use_dist_checkpointing`, ...)."""
    skip = compared | set(ONE_SIDED)
    actor, ref = (_leaves({k: v for k, v in side.items() if k not in skip}) for side in (actor_all, ref_all))
    errors = []
    for path in sorted(set(actor) | set(ref)):
        if actor.get(path, "<absent>") == ref.get(path, "<absent>"):
            continue
        top = path.split(".")[0]
        place = f"megatron.{top}" if "megatron" in cfg else f"{ACTOR}.{top} and {REF}.{top}"
        plus = "+" if "megatron" in cfg and top not in cfg.megatron else ""
        errors.append(
            error(
                (f"{ACTOR}.{path}", f"{REF}.{path}"),
                f"{ACTOR}.{path}={json.dumps(actor.get(path, '<absent>'))} but {REF}.{path}="
                f"{json.dumps(ref.get(path, '<absent>'))}: actor and ref must share the whole Megatron config. "
                f"Set {plus}{place}=... once (it reaches both) and drop the side-specific override.",
            )
        )
    return errors


def unknown_patch_errors(cfg: DictConfig) -> list[Problem]:
    """`megatron.<key>` reaches both sides, so it must be a field of verl's McoreEngineConfig
    (verl/workers/config/engine.py); the critic's megatron node, which our conf leaves as verl composes
    it, lists exactly those fields."""
    known = OmegaConf.select(cfg, "critic.megatron", default=None)
    if "megatron" not in cfg or known is None:
        return []
    found = []
    for key in cfg.megatron:
        if key in known:
            continue
        close = difflib.get_close_matches(key, list(known), n=1, cutoff=0.7)
        hint = f"; did you mean megatron.{close[0]}?" if close else ""
        found.append(error(f"megatron.{key}", f"is not a field of verl's McoreEngineConfig (verl refuses it){hint}"))
    return found


def layout_source_errors(cfg: DictConfig) -> list[Problem]:
    """A layout number set directly on a verl key would make `parallel.*` (and the plan) lie."""
    return [
        error(
            (key, source),
            f"{key}={OmegaConf.select(cfg, key)} but {source}={OmegaConf.select(cfg, source)}: "
            f"set {source} instead, so every key that follows it agrees",
        )
        for key, source in LAYOUT_FEEDS.items()
        if OmegaConf.select(cfg, key) != OmegaConf.select(cfg, source)
    ]
