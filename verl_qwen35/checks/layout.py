"""Training layout rules of megatron-core 0.16 for Qwen3.5 (MoE + Gated DeltaNet)."""

from dataclasses import fields

from omegaconf import DictConfig

from verl_qwen35.checks.problem import Problem, error, one_of, warning
from verl_qwen35.config.schema import ACTOR, LAYOUT_FEEDS, PARALLEL_KEYS
from verl_qwen35.installed import ASSUMED_MCORE
from verl_qwen35.model.layout import Layout, divisors
from verl_qwen35.model.pipeline import Split, split_problems, stage_layers

ROLLOUT = "actor_rollout_ref.rollout"
# Gated DeltaNet accepts context parallelism from megatron-core 0.18 on (transformer_config.py asserts
# cp == 1 before).
GDN_CP_MCORE = (0, 18)


def _message_names() -> dict[str, str]:
    """`parallel.tp (actor_rollout_ref.actor.megatron.tensor_model_parallel_size)`: the shorthand a
    user sets and the verl key it feeds, from the same maps the parity checks use."""
    feeds = {source: f"{ACTOR}.{key}" for key, source in PARALLEL_KEYS.items()}
    feeds |= {source: key for key, source in LAYOUT_FEEDS.items()}
    names = {source.removeprefix("parallel."): f"{source} ({key})" for source, key in feeds.items()}
    # Rollout pipeline parallelism has no shorthand: vLLM and SGLang have none in verl.
    return names | {"gen_pp": f"{ROLLOUT}.pipeline_model_parallel_size"}


KEYS = _message_names()


def positive_problems(layout: Layout) -> list[Problem]:
    names = [f.name for f in fields(Layout) if f.name != "vpp"]  # vpp may be null
    return [
        error(KEYS[n], f"{n}={getattr(layout, n)} must be a positive integer")
        for n in names
        # bool is an int in Python: parallel.nnodes=true must not count as 1.
        if not isinstance(getattr(layout, n), int) or isinstance(getattr(layout, n), bool) or getattr(layout, n) < 1
    ]


def heads_fit(tp: int, heads: int, kv_heads: int) -> bool:
    """Attention heads split evenly; KV heads split if there are enough, else are replicated."""
    kv_ok = kv_heads % tp == 0 if kv_heads >= tp else tp % kv_heads == 0
    return heads % tp == 0 and kv_ok


def tp_choices(arch: DictConfig, world: int) -> list[int]:
    """TP sizes that divide the world and split every kind of head (training and rollout alike)."""
    return [
        t
        for t in divisors(world)
        if heads_fit(t, arch.num_attention_heads, arch.num_key_value_heads)
        and arch.linear_num_key_heads % t == 0
        and arch.linear_num_value_heads % t == 0
    ]


def layout_problems(
    layout: Layout,
    arch: DictConfig,
    device: str,
    first_last: tuple[int | None, int | None] = (None, None),
    *,
    split: Split | None = None,
    mcore: tuple[int, int] | None = None,
    mtp: int | None = None,
    cp_algo: str | None = None,
) -> list[Problem]:
    """Megatron-core's divisibility rules for this layout on this model (transformer_config.py,
    model_parallel_config.py, parallel_state.py, transformer_block.py of megatron-core 0.16.1).

    `split` is the pipeline split of override_transformer_config (`first_last` is its older, shorter
    form); `mcore` the megatron-core (major, minor) whose rules apply (None: the Ascend image's 0.16);
    `mtp` the MTP layers built (a pipeline layout string must place them); `cp_algo` MindSpeed's
    `override_transformer_config.context_parallel_algo`, which carries CP on NPU (verl's Ascend 122B 32k script
    runs Qwen3.5 at CP 4 with kvallgather_cp_algo)."""
    found = positive_problems(layout)
    if found:
        return found
    lo, world = layout, layout.world
    grid = lo.tp * lo.pp * lo.cp
    if world % grid:
        found.append(
            error(
                (KEYS["tp"], KEYS["pp"], KEYS["cp"], KEYS["nnodes"], KEYS["devices_per_node"]),
                f"world {lo.nnodes}x{lo.devices_per_node}={world} is not divisible by tp*pp*cp="
                f"{lo.tp}*{lo.pp}*{lo.cp}={grid}; tp*pp*cp must divide {world} (one of {divisors(world)})",
            )
        )
    expert_grid = lo.etp * lo.ep * lo.pp
    no_ep = f"etp*pp={lo.etp * lo.pp} does not divide world {world}; change pp or etp first"
    if world % expert_grid:
        fitting = [e for e in divisors(arch.num_experts) if world % (lo.etp * e * lo.pp) == 0]
        found.append(
            error(
                (KEYS["ep"], KEYS["etp"], KEYS["pp"], KEYS["nnodes"], KEYS["devices_per_node"]),
                f"world {world} is not divisible by etp*ep*pp={lo.etp}*{lo.ep}*{lo.pp}={expert_grid} "
                f"(the expert grid); with etp={lo.etp} pp={lo.pp}, " + one_of("ep", fitting, no_ep),
            )
        )
    if arch.num_experts % lo.ep:
        fitting = [e for e in divisors(arch.num_experts) if world % (lo.etp * e * lo.pp) == 0]
        found.append(
            error(
                KEYS["ep"],
                f"ep={lo.ep} does not divide num_experts={arch.num_experts} of {arch.name}; "
                + one_of("ep", fitting, no_ep)
                + (f" (they divide {arch.num_experts} and fit world {world})" if fitting else ""),
            )
        )
    if not heads_fit(lo.tp, arch.num_attention_heads, arch.num_key_value_heads):
        found.append(
            error(
                KEYS["tp"],
                f"tp={lo.tp} does not split {arch.num_attention_heads} attention heads / "
                f"{arch.num_key_value_heads} KV heads (heads % tp == 0, and KV heads a multiple or a "
                f"divisor of tp); valid tp here: {tp_choices(arch, world)}",
            )
        )
    for name in ("linear_num_key_heads", "linear_num_value_heads"):
        if arch[name] % lo.tp:
            found.append(
                error(
                    KEYS["tp"],
                    f"tp={lo.tp} does not divide Gated DeltaNet {name}={arch[name]}; "
                    f"valid tp here: {tp_choices(arch, world)}",
                )
            )
    version = mcore or ASSUMED_MCORE
    # On NPU with MindSpeed's context-parallel algorithm set, MindSpeed, not stock megatron-core, splits the sequence.
    if lo.cp > 1 and version < GDN_CP_MCORE and not (device == "npu" and cp_algo):
        if device == "npu":
            found.append(
                warning(
                    KEYS["cp"],
                    f"cp={lo.cp}: stock megatron-core has no context parallelism for Gated DeltaNet; "
                    "on NPU this relies on MindSpeed (set override_transformer_config.context_parallel_algo)",
                )
            )
        else:
            found.append(
                error(
                    KEYS["cp"],
                    f"cp={lo.cp}: megatron-core {version[0]}.{version[1]}"
                    f"{'' if mcore else ' (assumed: not installed here)'} requires cp=1 for Gated DeltaNet layers "
                    "(supported from 0.18); set parallel.cp=1",
                )
            )
    split = split or Split(first=first_last[0], last=first_last[1])
    found += [error(keys, message) for keys, message in split_problems(arch.num_layers, lo.pp, lo.vpp, split, mtp)]
    return found


def layers_per_stage(lo: Layout, arch: DictConfig, split: Split | None = None) -> str:
    split = split or Split()
    if split_problems(arch.num_layers, lo.pp, lo.vpp, split):
        return "invalid split"
    return stage_layers(arch.num_layers, lo.pp, lo.vpp, split)


def sequence_parallel_problems(cfg: DictConfig, lo: Layout) -> list[Problem]:
    if cfg.actor_rollout_ref.actor.megatron.get("sequence_parallel") and lo.tp == 1:
        return [
            warning(
                (f"{ACTOR}.sequence_parallel", KEYS["tp"]),
                "sequence_parallel=true has no effect at tp=1 (verl turns it off)",
            )
        ]
    return []
