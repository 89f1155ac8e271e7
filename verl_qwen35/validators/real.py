"""The real validators, for `dry_run=full` and the launch: megatron-core's TransformerConfig and verl's own checks.

One adapter, imported only on those paths (it imports torch, megatron-core and verl). Each refusal is
translated to the config key the user sets (`parallel.*`, `megatron.*`, verl keys).

What is built: megatron-core's `TransformerConfig` on CPU from the model facts (`conf/model`), the layout,
the defaults verl's Megatron-Bridge path adds (`verl/workers/engine/megatron/transformer_impl.py`
`_build_tf_config`) and the resolved `override_transformer_config`, then megatron-core's
`get_num_layers_to_build` for every pipeline rank and virtual stage (`transformer/transformer_block.py`).
Set aside, because they depend on this machine and not on the config: on NPU, the MindSpeed keys
(MindSpeed reads them) and context parallelism (MindSpeed supplies it for Gated DeltaNet); everywhere,
the Transformer-Engine kernels (`apply_rope_fusion`, `moe_permute_fusion`) that CPU-only megatron-core
reports as missing. verl: `validate_config` and the actor, ref and rollout config dataclasses.
"""

import re
from collections.abc import Mapping
from typing import Any

from omegaconf import DictConfig, OmegaConf

from verl_qwen35.checks import override_dict
from verl_qwen35.checks.batches import uses_reference
from verl_qwen35.checks.bridges import Bridge, bridge_of, bridge_problems, explain, with_bridge
from verl_qwen35.checks.layout import KEYS
from verl_qwen35.checks.megatron_keys import MINDSPEED_KEYS, field_spec
from verl_qwen35.checks.problem import Problem, error
from verl_qwen35.checks.transformer import LAYOUT_FIELDS, mtp_layers_built
from verl_qwen35.model.layout import Layout
from verl_qwen35.model.pipeline import FIRST, LAST, OTC, PP, VPP
from verl_qwen35.terminal import say
from verl_qwen35.validators.bridge import installed, mbridge_values, source_line
from verl_qwen35.validators.calling import quietly
from verl_qwen35.validators.critic_model import critic_judged_here
from verl_qwen35.validators.rehearsal import rehearsal_problems
from verl_qwen35.validators.rollout_server import real_rollout_problems
from verl_qwen35.validators.verl_fields import real_type_problems
from verl_qwen35.validators.verl_names import real_name_problems
from verl_qwen35.validators.verl_ref import ref_as_verl_builds_it

# Kernels megatron-core checks for at construction; CPU-only installs lack them, the cluster has them.
MACHINE_DEPENDENT = {"apply_rope_fusion": False, "moe_permute_fusion": False}
_LAYOUT_KEYS = {name: KEYS[short] for name, short in LAYOUT_FIELDS.items()}
# Messages of megatron-core that name no field: (pattern, keys).
_ACCOUNTING = ("account_for_embedding_in_pipeline_split", "account_for_loss_in_pipeline_split")
_MESSAGE_KEYS = [
    (r"middle (PP stages|stage|pipeline rank|layers|pipeline_model_parallel_size)|uneven pipelin", (FIRST, LAST, PP)),
    (r"layers at first stage", (FIRST, VPP)),
    (r"layers at last stage", (LAST, VPP)),
    (r"sequence parallelism without tensor parallelism", (f"{OTC}.sequence_parallel", KEYS["tp"])),
    (r"interleaved schedule", (VPP, PP)),
    (r"[Dd]efer embedding wgrad", (f"{OTC}.defer_embedding_wgrad_compute",)),
    (r"CPU offloading", (f"{OTC}.cpu_offloading",)),
    (r"topk is 1", (f"{OTC}.moe_router_topk", f"{OTC}.moe_router_pre_softmax")),
    (r"[Ee]xpert bias", (f"{OTC}.moe_router_enable_expert_bias",)),
    (r"DeepEP|deepep", (f"{OTC}.moe_token_dispatcher_type",)),
    (r"only works with alltoall token dispatcher", (f"{OTC}.moe_token_dispatcher_type",)),
    (r"shared_experts recompute cannot work", (f"{OTC}.recompute_modules", f"{OTC}.moe_shared_expert_overlap")),
    (r"Batch invariant mode only supports FlashAttention", (f"{OTC}.batch_invariant_mode", f"{OTC}.attention_backend")),
    (r"allgather does not support variable sequence", (f"{OTC}.moe_token_dispatcher_type",)),
    (r"Not enough layers in the (first|last) virtual", (VPP, PP)),
]


def facts_config(arch: Any, lo: Layout, *, sequence_parallel: bool, dtype: str, mtp: int | None) -> dict[str, Any]:
    """TransformerConfig arguments for this Qwen3.5 model on this layout, before overrides."""
    import torch
    import torch.nn.functional as F
    from megatron.core.transformer.enums import AttnBackend

    torch_dtype = torch.bfloat16 if dtype == "bfloat16" else torch.float16
    return {
        "num_layers": arch.num_layers,
        "hidden_size": arch.hidden_size,
        "num_attention_heads": arch.num_attention_heads,
        "num_query_groups": arch.num_key_value_heads,
        "kv_channels": arch.head_dim,
        "ffn_hidden_size": arch.moe_intermediate_size,
        "num_moe_experts": arch.num_experts,
        "moe_router_topk": arch.num_experts_per_tok,
        "moe_ffn_hidden_size": arch.moe_intermediate_size,
        "moe_shared_expert_intermediate_size": arch.shared_expert_intermediate_size,
        "experimental_attention_variant": "gated_delta_net",
        "linear_attention_freq": arch.full_attention_interval,
        "linear_conv_kernel_dim": 4,
        "linear_key_head_dim": arch.linear_key_head_dim,
        "linear_value_head_dim": arch.linear_value_head_dim,
        "linear_num_key_heads": arch.linear_num_key_heads,
        "linear_num_value_heads": arch.linear_num_value_heads,
        "gated_linear_unit": True,
        "activation_func": F.silu,
        "normalization": "RMSNorm",
        "layernorm_zero_centered_gamma": True,  # Qwen3.5's (1 + weight) RMSNorm
        "add_bias_linear": False,
        "attention_output_gate": True,
        # No dropout: config.json's attention_dropout=0.0, Megatron-Bridge's Qwen providers hidden_dropout=0.0
        # (megatron-core's own defaults, 0.1, would refuse graphed selective recompute that the run allows).
        "attention_dropout": 0.0,
        "hidden_dropout": 0.0,
        "mtp_num_layers": mtp,
        "tensor_model_parallel_size": lo.tp,
        "pipeline_model_parallel_size": lo.pp,
        "virtual_pipeline_model_parallel_size": lo.vpp,
        "context_parallel_size": lo.cp,
        "expert_model_parallel_size": lo.ep,
        "expert_tensor_parallel_size": lo.etp,
        "sequence_parallel": sequence_parallel and lo.tp > 1,  # verl/workers/config/engine.py: off at tp=1
        "params_dtype": torch_dtype,
        "pipeline_dtype": torch_dtype,
        "bf16": dtype == "bfloat16",
        "fp16": dtype == "float16",
        # verl's Megatron-Bridge provider overrides, before override_transformer_config:
        "overlap_p2p_comm": lo.vpp is not None and lo.vpp > 1,
        "batch_p2p_comm": False,
        "variable_seq_lengths": True,
        "attention_backend": AttnBackend.flash,
        "moe_token_dispatcher_type": "alltoall",
        "moe_router_load_balancing_type": "none",
    }


def keys_of_message(message: str, overrides: Mapping[str, Any]) -> tuple[str, ...]:
    """The user's keys a megatron-core message is about."""
    keys: list[str] = []
    for pattern, named in _MESSAGE_KEYS:
        if re.search(pattern, message):
            keys += named
    for name in sorted(field_spec(), key=len, reverse=True):
        if not re.search(rf"(?<![A-Za-z_]){re.escape(name)}(?![A-Za-z_])", message):
            continue
        if name in _LAYOUT_KEYS:
            keys.append(_LAYOUT_KEYS[name])
        elif name in overrides:
            keys.append(f"{OTC}.{name}")
    if FIRST in keys:
        # the split counts embedding/loss as layers when asked (transformer_config.py __post_init__)
        keys += [f"{OTC}.{name}" for name in _ACCOUNTING if overrides.get(name)]
    keys = list(dict.fromkeys(keys))
    return tuple(keys) or (OTC,)


def real_transformer_problems(
    otc: Mapping[str, Any],
    arch: Any,
    lo: Layout,
    device: str,
    *,
    sequence_parallel: bool = False,
    dtype: str = "bfloat16",
    mtp: int | None = None,
    bridge: Bridge | None = None,
) -> list[Problem]:
    """What megatron-core's own TransformerConfig (and layer split) says about this config; with `bridge`, about
    what that bridge hands it for Qwen3.5 (its values, verl's steps, then the overrides), the refusals saying
    which value the bridge set, and what the bridge itself cannot load."""
    overrides = {k: v for k, v in otc.items() if not (device == "npu" and k in MINDSPEED_KEYS)}
    if bridge is None:
        facts = facts_config(arch, lo, sequence_parallel=sequence_parallel, dtype=dtype, mtp=mtp)
        return _judged(facts, overrides, lo, device)
    settings = bridge.settings(lo, sequence_parallel)
    if bridge.key == "mbridge" and installed(bridge):
        kwargs = mbridge_values(arch, lo, dtype, overrides)
    else:
        kwargs = facts_config(arch, lo, sequence_parallel=sequence_parallel, dtype=dtype, mtp=mtp)
        if bridge.key == "mbridge":  # mbridge sets no attention backend: megatron-core's default (auto)
            kwargs.pop("attention_backend")
        kwargs.update(with_bridge(overrides, settings))
    kwargs["mtp_num_layers"] = overrides.get("mtp_num_layers", mtp)
    kwargs = {k: v for k, v in kwargs.items() if k not in bridge.extra_fields}  # the bridge's own config class's
    found = explain(_judged(kwargs, overrides, lo, device), overrides, settings)
    return found + bridge_problems(overrides, arch, lo, bridge)


def _judged(kwargs: dict[str, Any], otc: Mapping[str, Any], lo: Layout, device: str) -> list[Problem]:
    """megatron-core's TransformerConfig on these arguments, then its layer split; refusals named by `otc`."""
    from megatron.core.transformer.enums import AttnBackend, LayerType
    from megatron.core.transformer.transformer_block import get_num_layers_to_build
    from megatron.core.transformer.transformer_config import TransformerConfig

    overrides = dict(otc)
    kwargs.update(overrides)
    kwargs.update({k: v for k, v in MACHINE_DEPENDENT.items() if k in kwargs})
    if isinstance(kwargs.get("attention_backend"), str):  # verl's mapping_string_to_attn_backend
        kwargs["attention_backend"] = AttnBackend[kwargs["attention_backend"]]
    if device == "npu":
        kwargs["context_parallel_size"] = 1  # MindSpeed's context_parallel_algo carries CP on Ascend
    for name, short in LAYOUT_FIELDS.items():
        # verl initialises the process groups with the engine's sizes (parallel.*) but hands this override
        # to the model config (transformer_impl.py `_initialize_model_parallel` vs `_build_tf_config`).
        if name in otc and otc[name] != getattr(lo, short):
            return [error((f"{OTC}.{name}", f"parallel.{short}"), f"={otc[name]} differs from parallel.{short}")]
    if lo.vpp is not None and lo.pp == 1:  # parallel_state.py initialize_model_parallel (needs devices)
        return [error((VPP, PP), "pipeline-model-parallel size should be greater than 1 with interleaved schedule")]
    uneven = otc.get("num_layers_in_first_pipeline_stage") is not None or (
        otc.get("num_layers_in_last_pipeline_stage") is not None
    )
    if uneven and lo.pp == 1 and otc.get("pipeline_model_parallel_layout") is None:
        return [error((FIRST, PP), "first/last pipeline stage layer counts need pp > 1")]
    try:
        config = TransformerConfig(**kwargs)
        if (config.virtual_pipeline_model_parallel_size or 1) != (lo.vpp or 1):  # verl's mpu gets parallel.vpp
            detected = config.virtual_pipeline_model_parallel_size
            return [
                error((f"{OTC}.pipeline_model_parallel_layout", VPP), f"layout implies vpp={detected}, not {lo.vpp}")
            ]
        chunks = []
        if config.pipeline_model_parallel_layout is None:
            for pp_rank in range(lo.pp):
                for vp_stage in range(lo.vpp or 1):
                    vp = vp_stage if lo.vpp else None
                    chunks.append(get_num_layers_to_build(config, vp_stage=vp, pp_rank=pp_rank))
        else:
            layout = config.pipeline_model_parallel_layout.layout
            chunks = [
                stage.count(LayerType.decoder) for vp in range(len(layout[0])) for stage in (r[vp] for r in layout)
            ]
    except TypeError as err:
        if "'NoneType' and 'Version'" in str(err):
            return []  # is_te_min_version without transformer-engine (fp8): a kernel this CPU install lacks
        if "unexpected keyword argument" in str(err):
            name = str(err).rsplit("'", 2)[-2]
            return [error(f"{OTC}.{name}", f"is not a field of megatron-core's TransformerConfig ({err})")]
        return [error(keys_of_message(str(err), overrides), f"megatron-core TransformerConfig refused it: {err}")]
    except Exception as err:  # megatron-core raises AssertionError, ValueError, KeyError, NotImplementedError
        message = str(err) or type(err).__name__
        if "transformer-engine" in message.lower() or "TE >=" in message:
            return []  # a kernel this CPU install lacks; not a property of the config
        return [error(keys_of_message(message, overrides), f"megatron-core TransformerConfig refused it: {message}")]
    # transformer_block.py `_checkpointed_forward` (uniform): chunks of recompute_num_layers must tile each
    # model chunk, else `_get_layer` indexes past its end; needs a built model, so stated here.
    n = config.recompute_num_layers
    uniform = config.recompute_granularity == "full" and config.recompute_method == "uniform" and n
    if uniform and (bad := sorted({c for c in chunks if c % n})):
        return [error(f"{OTC}.recompute_num_layers", f"={n} does not divide model chunks of {bad} layers")]
    return []


# verl messages and the keys they are about; the node that raised is the fallback.
_VERL_KEYS = [
    (r"real_train_batch_size", ("data.train_batch_size", "actor_rollout_ref.rollout.n")),
    (r"n_gpus \(\d+\) must be divisible", (KEYS["tp"], KEYS["pp"], KEYS["cp"])),
    (r"ppo_micro_batch_size", ("actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu",)),
    (r"actor_rollout_ref\.ref", ("actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu",)),
    (r"actor_rollout_ref\.rollout\]", ("actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu",)),
    (r"ppo_mini_batch_size", ("actor_rollout_ref.actor.ppo_mini_batch_size",)),
    (r"expert_parallel_size must be equal", (KEYS["gen_ep"],)),
    (r"pipeline_model_parallel_size > 1", (KEYS["gen_pp"],)),
    (r"loss_agg_mode", ("actor_rollout_ref.actor.loss_agg_mode",)),
    (r"dtype .* not supported", ("megatron.dtype",)),
    (r"temperature", ("actor_rollout_ref.rollout.temperature",)),
]


# validate_config judges the whole config: an OmegaConf `full_key` it names is already whole, and a message that
# names no key is the actor's side (most of its asserts are).
ROOT = ""


def verl_message_keys(message: str, node: str) -> tuple[str, ...]:
    full_key = re.search(r"full_key: (\S+)", message)
    where = full_key.group(1) if full_key else node or "actor_rollout_ref"
    if node and not where.startswith("actor_rollout_ref"):
        where = f"{node}.{where}"
    if unexpected := re.search(r"unexpected keyword argument '(\w+)'", message):
        return (f"{where}.{unexpected.group(1)}",)
    keys = [k for pattern, named in _VERL_KEYS if re.search(pattern, message) for k in named]
    return tuple(dict.fromkeys(keys)) or (where,)


def real_verl_problems(cfg: DictConfig) -> list[Problem]:
    """verl's validate_config and the actor/ref/rollout config dataclasses verl builds."""
    from verl.trainer.ppo.utils import need_critic, need_reference_policy
    from verl.utils.config import omega_conf_to_dataclass, validate_config

    with critic_judged_here(cfg) as (judged, found):
        steps = [
            # quietly: verl prints its success and warns of what it turns off
            (ROOT, lambda: quietly(validate_config, judged, need_reference_policy(judged), need_critic(judged))),
            ("actor_rollout_ref.actor", lambda: omega_conf_to_dataclass(cfg.actor_rollout_ref.actor)),
            ("actor_rollout_ref.ref", lambda: omega_conf_to_dataclass(ref_as_verl_builds_it(cfg))),
            ("actor_rollout_ref.rollout", lambda: omega_conf_to_dataclass(cfg.actor_rollout_ref.rollout)),
        ]
        for node, step in steps:
            try:
                step()
            except Exception as err:  # verl raises AssertionError, ValueError, TypeError, omegaconf errors
                message = f"{type(err).__name__}: {err}".strip()
                return [error(verl_message_keys(message, node), f"verl's own checks refused this config: {message}")]
    return found


def micro_batch_refusal(sequences: int, dp: int, micro: int) -> str | None:
    """verl's own `prepare_micro_batches` (verl/workers/engine/utils.py) on one DP rank's share of
    `sequences`; the share itself must be whole (verl's dispatch chunks the batch evenly over DP ranks)."""
    import torch
    from tensordict import TensorDict
    from verl.utils import tensordict_utils as tu
    from verl.workers.engine.utils import prepare_micro_batches

    if sequences % dp:
        return f"{sequences} sequences do not split evenly over DP={dp} ranks"
    share = sequences // dp
    data = TensorDict({"input_ids": torch.zeros(share, 1)}, batch_size=[share])
    tu.assign_non_tensor(data, micro_batch_size_per_gpu=micro, use_dynamic_bsz=False)
    try:
        prepare_micro_batches(data)
    except AssertionError as err:
        return f"{share} sequences per DP rank, micro-batch {micro}: {err}"
    return None


def mini_batch_refusal(sequences: int, mini_sequences: int, dp: int) -> str | None:
    """verl's own `make_iterator` (verl/utils/tensordict_utils.py, called by `train_mini_batch` in
    verl/workers/engine_workers.py) on one DP rank's share of the step and of a mini-batch."""
    import torch
    from tensordict import TensorDict
    from verl.utils import tensordict_utils as tu

    if sequences % dp or mini_sequences % dp:
        return None  # the micro-batch check reports an uneven DP split
    share, mini = sequences // dp, mini_sequences // dp
    try:
        next(iter(tu.make_iterator(TensorDict({"x": torch.zeros(share, 1)}, batch_size=[share]), mini, epochs=1)))
    except AssertionError as err:
        return f"{share} sequences per DP rank in mini-batches of {mini}: {err}"
    return None


def real_batch_problems(cfg: DictConfig, lo: Layout, uses_ref: bool) -> list[Problem]:
    """verl's micro-batch split for training and the log-prob passes, without dynamic batch size."""
    arr = cfg.actor_rollout_ref
    if arr.actor.use_dynamic_bsz or lo.world % (lo.tp * lo.pp * lo.cp):
        return []
    train, n = cfg.data.train_batch_size, arr.rollout.n
    passes = [
        ("actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu", arr.actor.ppo_micro_batch_size_per_gpu, train * n),
        (
            "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu",
            arr.actor.ppo_micro_batch_size_per_gpu,
            arr.actor.ppo_mini_batch_size * n,
        ),
        (
            "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu",
            arr.rollout.log_prob_micro_batch_size_per_gpu,
            train * n,
        ),
    ]
    if uses_ref:
        passes.append(
            (
                "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu",
                arr.ref.log_prob_micro_batch_size_per_gpu,
                train * n,
            )
        )
    found = []
    for key, micro, sequences in passes:
        if micro is not None and (why := micro_batch_refusal(sequences, lo.dp, micro)):
            found.append(error((key, "data.train_batch_size", "actor_rollout_ref.rollout.n"), f"verl: {why}"))
    if why := mini_batch_refusal(train * n, arr.actor.ppo_mini_batch_size * n, lo.dp):
        found.append(error(("actor_rollout_ref.actor.ppo_mini_batch_size", "data.train_batch_size"), f"verl: {why}"))
    return found


def real_ddp_problems(cfg: DictConfig) -> list[Problem]:
    """megatron-core's own DistributedDataParallelConfig from `override_ddp_config`, as verl builds it
    (verl/utils/megatron_utils.py)."""
    from megatron.core.distributed.distributed_data_parallel_config import DistributedDataParallelConfig

    from verl_qwen35.checks.megatron_keys import ddp_key

    ddp = OmegaConf.select(cfg, "actor_rollout_ref.actor.megatron.override_ddp_config", default=None)
    if not ddp:
        return []
    try:
        DistributedDataParallelConfig(**OmegaConf.to_container(ddp, resolve=True))
    except Exception as err:  # TypeError for an unknown key, AssertionError/ValueError from __post_init__
        return [error(ddp_key(cfg), f"megatron-core DistributedDataParallelConfig refused it: {err}")]
    return []


def real_problems(cfg: DictConfig, device: str) -> list[Problem]:
    """Both real validators on a resolved config that passed the fast preflight."""
    try:
        import megatron.core  # noqa: F401
        import torch  # noqa: F401
        import verl  # noqa: F401
    except ImportError as err:
        return [
            Problem(
                "warning",
                ("dry_run",),
                f"the real validators need torch, megatron-core and verl ({err}); only the fast rules ran here",
            )
        ]
    otc = override_dict(cfg)
    mtp_enabled = bool(OmegaConf.select(cfg, "actor_rollout_ref.model.mtp.enable", default=False))
    if not mtp_enabled:  # verl/utils/megatron_utils.py check_mtp_config
        otc["mtp_num_layers"] = None
    bridge = bridge_of(cfg)
    say(f"bridge     {source_line(bridge, installed(bridge) and bridge.key == 'mbridge')}")
    found = real_transformer_problems(
        otc,
        cfg.model,
        Layout.of(cfg),
        device,
        sequence_parallel=bool(cfg.actor_rollout_ref.actor.megatron.get("sequence_parallel")),
        dtype=cfg.megatron.dtype,
        mtp=mtp_layers_built(otc, mtp_enabled, cfg.model.get("mtp_num_layers", 0) or 0),
        bridge=bridge,
    )
    found += real_batch_problems(cfg, Layout.of(cfg), uses_reference(cfg))
    found += real_ddp_problems(cfg)
    if not found:
        say("megatron   TransformerConfig and layer split (megatron-core's own), verl micro-batches: OK")
    verl_found = real_verl_problems(cfg) + real_type_problems(cfg) + real_name_problems(cfg)  # live registries
    if not verl_found:
        say("verl       validate_config and actor/ref/rollout dataclasses: OK")
        # verl's replica placement, vLLM where installed; the rehearsal builds dataclasses just accepted
        verl_found = real_rollout_problems(cfg, device) + rehearsal_problems(cfg)
    return found + verl_found
