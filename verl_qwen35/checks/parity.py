"""Actor and ref must run the same Megatron patch; verl links them only until one side is overridden."""

import json

from omegaconf import DictConfig, OmegaConf

from verl_qwen35.checks.problem import Problem, error

ACTOR = "actor_rollout_ref.actor.megatron"
REF = "actor_rollout_ref.ref.megatron"
# Parallel sizes are part of the patch; each interpolates one `parallel.*` key.
PARALLEL_KEYS = {
    "tensor_model_parallel_size": "parallel.tp",
    "pipeline_model_parallel_size": "parallel.pp",
    "virtual_pipeline_model_parallel_size": "parallel.vpp",
    "context_parallel_size": "parallel.cp",
    "expert_model_parallel_size": "parallel.ep",
    "expert_tensor_parallel_size": "parallel.etp",
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


def plain(value: object) -> object:
    """A resolved plain value (containers become dicts/lists) for comparison."""
    return OmegaConf.to_container(value, resolve=True) if OmegaConf.is_config(value) else value


def parity_errors(cfg: DictConfig) -> list[Problem]:
    """One error per patched key on which actor, ref and the patch disagree, naming all three keys."""
    errors = []
    for key, source in patch_sources(cfg).items():
        actor = plain(OmegaConf.select(cfg, f"{ACTOR}.{key}", default=None))
        ref = plain(OmegaConf.select(cfg, f"{REF}.{key}", default=None))
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
        want = plain(OmegaConf.select(cfg, source))
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
        elif actor != want:
            errors.append(
                error(
                    keys,
                    (
                        f"{ACTOR}.{key} and {REF}.{key} are {actor!r} but {source}={want!r}: set {source} "
                        f"instead, so the printed patch is the one that runs."
                    ),
                )
            )
    return errors


# verl keys outside actor/ref megatron that a `parallel.*` key feeds.
LAYOUT_FEEDS: dict[str, str] = {
    "trainer.nnodes": "parallel.nnodes",
    "trainer.n_gpus_per_node": "parallel.devices_per_node",
    "actor_rollout_ref.rollout.tensor_model_parallel_size": "parallel.gen_tp",
    "actor_rollout_ref.rollout.data_parallel_size": "parallel.gen_dp",
    "actor_rollout_ref.rollout.expert_parallel_size": "parallel.gen_ep",
}


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
