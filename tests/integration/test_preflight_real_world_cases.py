"""A held-out-style set for issue #7, written by an outside tester from megatron-core 0.16.1's
`TransformerConfig` / MoE code, verl 0.9.1's workers and verl's Ascend docs: each row is refused
(naming a key the user can set) or accepted, by the fast preflight and by the real validators."""

import subprocess
import sys
import warnings

import pytest

from tests.runs import preflight
from verl_qwen35.checks import device_of
from verl_qwen35.config import compose
from verl_qwen35.config.choices import presets
from verl_qwen35.installed import installed_verl_schema
from verl_qwen35.validators.real import real_problems

ADD = "+megatron.override_transformer_config"
M = "megatron.override_transformer_config"
ARR = "actor_rollout_ref"
VERL_0_9 = installed_verl_schema() == "v0_9"
SMALL_TOKEN_BUDGET = [f"{ARR}.rollout.max_num_batched_tokens=1000", f"{ARR}.rollout.enable_chunked_prefill=false"]

# (model_device, overrides, key the refusal must name); the comment names the upstream line that decides it.
REFUSED = [
    # The GPU presets build through mbridge 641a5a0, which sets moe_shared_expert_overlap=True for Qwen3.5
    # (mbridge/models/qwen3_5/qwen3_5_vl_bridge.py:314); transformer_config.py __post_init__: "moe_shared_expert_overlap
    # only works with alltoall token dispatcher." (was accepted here while the rules read only the user's keys)
    ("35b_gpu", [f"{ADD}.moe_token_dispatcher_type=flex"], "moe_shared_expert_overlap"),
    # transformer_config.py __post_init__: "When using recompute_granularity: selective recompute_num_layers
    # must be None."
    ("122b_npu", [f"{M}.recompute_granularity=selective", f"{M}.recompute_method=null"], "recompute_num_layers"),
    # moe/router.py topk_routing_with_score_function: torch.topk(k > num_experts) fails at the first step
    ("35b_gpu", [f"{ADD}.moe_router_topk=300"], "moe_router_topk"),
    ("397b_gpu", [f"{ADD}.moe_router_topk=0"], "moe_router_topk"),
    # transformer_config.py: "Mismatch: ... middle layers remaining but 0 middle PP stages available."
    ("35b_gpu", [f"{ADD}.num_layers_in_first_pipeline_stage=10"], "num_layers_in_first_pipeline_stage"),
    # transformer_config.py: "number of middle layers: 41 must be divisible by middle pipeline_model_parallel_size"
    ("35b_npu", [f"{ADD}.account_for_embedding_in_pipeline_split=true"], "account_for_embedding_in_pipeline_split"),
    # transformer_config.py: middle layers 25 over 2 middle stages
    (
        "122b_npu",
        [f"{ADD}.num_layers_in_first_pipeline_stage=11", f"{ADD}.num_layers_in_last_pipeline_stage=12"],
        "num_layers_in_first_pipeline_stage",
    ),
    # pipeline_parallel_layer_layout.py: the layout must hold num_layers transformer layers
    ("122b_gpu", [f"{ADD}.pipeline_model_parallel_layout='Et*24|t*23L'"], "pipeline_model_parallel_layout"),
    # layout stage count must equal pp * vpp
    ("122b_npu", [f"{ADD}.pipeline_model_parallel_layout='Et*24|t*24L'"], "pipeline_model_parallel_layout"),
    # moe/router.py TopKRouter.apply_load_balancing_loss / moe_utils: unknown type raises at the first step
    ("35b_gpu", [f"{ADD}.moe_router_load_balancing_type=foo"], "moe_router_load_balancing_type"),
    # moe/router.py score function: only softmax / sigmoid
    ("122b_gpu", [f"{ADD}.moe_router_score_function=tanh"], "moe_router_score_function"),
    # transformer_config.py: "moe_expert_capacity_factor must be set to use moe_pad_expert_input_to_capacity"
    ("35b_gpu", [f"{ADD}.moe_pad_expert_input_to_capacity=true"], "moe_pad_expert_input_to_capacity"),
    # transformer_config.py: "moe_shared_expert_overlap only works with alltoall token dispatcher."
    (
        "122b_npu",
        [f"{ADD}.moe_shared_expert_overlap=true", f"{M}.moe_token_dispatcher_type=allgather"],
        "moe_shared_expert_overlap",
    ),
    # transformer_config.py: "num_moe_experts (256) should be divisible by moe_router_num_groups (7)."
    ("35b_gpu", [f"{ADD}.moe_router_num_groups=7", f"{ADD}.moe_router_group_topk=4"], "moe_router_num_groups"),
    # transformer_config.py: "Expert bias for aux-loss-free routing only supports sigmoid score function."
    ("397b_npu", [f"{ADD}.moe_router_enable_expert_bias=true"], "moe_router_enable_expert_bias"),
    # transformer_config.py: "distribute_saved_activations: True must be false when sequence parallel is enabled"
    ("35b_gpu", [f"{ADD}.distribute_saved_activations=true"], "distribute_saved_activations"),
    # transformer_config.py: "Invalid choices for recompute_modules"
    (
        "122b_gpu",
        [
            f"{M}.recompute_granularity=selective",
            f"{M}.recompute_method=null",
            f"{M}.recompute_num_layers=null",
            f"{ADD}.recompute_modules=[attention]",
        ],
        "recompute_modules",
    ),
    # transformer_config.py: "CPU offloading does not work when activation recomputation is enabled"
    ("122b_npu", [f"{ADD}.cpu_offloading=true"], "cpu_offloading"),
    # transformer_config.py: num_attention_heads (16) must be a multiple of tensor_model_parallel_size (3)
    ("35b_npu", ["parallel.tp=3"], "parallel.tp"),
    # parallel_state.py: 512 experts over 48 ranks
    ("397b_gpu", ["parallel.ep=48"], "parallel.ep"),
    # parallel_state.py: expert grid ep*etp (16) must divide tp*cp*dp (8) of the 8 devices
    ("35b_gpu", ["parallel.etp=2"], "parallel.etp"),
    # transformer_block.py get_num_layers_to_build: 40 layers over pp=3 uneven without accounting
    ("35b_gpu", ["parallel.nnodes=3", "parallel.pp=3"], "parallel.pp"),
    # transformer_config.py: layers per virtual stage (40 / (2*3)) must be whole
    ("35b_npu", ["parallel.vpp=3"], "parallel.vpp"),
    # verl megatron workers: VPP needs pp > 1 (parallel_state: virtual pp without pp)
    ("35b_gpu", ["parallel.vpp=2"], "parallel.vpp"),
    # transformer_config.py: uneven stage counts must divide by vpp
    (
        "122b_npu",
        [
            "parallel.vpp=2",
            f"{ADD}.num_layers_in_first_pipeline_stage=9",
            f"{ADD}.num_layers_in_last_pipeline_stage=15",
        ],
        "num_layers_in_first_pipeline_stage",
    ),
    # verl/utils/tensordict_utils.py make_iterator: 40 sequences per DP rank in mini-batches of 12*5/4=15
    ("35b_gpu", [f"{ARR}.actor.ppo_mini_batch_size=12"], "ppo_mini_batch_size"),
    ("122b_npu", ["data.train_batch_size=48"], "ppo_mini_batch_size"),
    # megatron pipeline_parallel/schedules.py: 397B npu recipe gives 5 micro-batches per mini-batch on dp=32;
    # with VPP on pp=4 the last group of 1 < pp
    ("397b_npu", ["parallel.vpp=3"], "parallel.vpp"),
    # verl actor: per-rank mini-batch share (32*5/4=40) must divide by the micro-batch size
    ("35b_gpu", [f"{ARR}.actor.ppo_micro_batch_size_per_gpu=3"], "ppo_micro_batch_size_per_gpu"),
    # per-rank share of 160 sequences over dp 4 (=40) by 6 (the preset runs dynamic batches, as verl main's
    # recipe does, where the micro-batch size is not used: fixed batches here)
    (
        "35b_npu",
        [
            f"{ARR}.rollout.log_prob_micro_batch_size_per_gpu=6",
            f"{ARR}.rollout.log_prob_use_dynamic_bsz=false",
            f"{ARR}.actor.use_dynamic_bsz=false",
        ],
        "log_prob_micro_batch_size_per_gpu",
    ),
    ("397b_npu", [f"{ARR}.actor.ppo_micro_batch_size_per_gpu=0"], "ppo_micro_batch_size_per_gpu"),
    # verl rollout config: n >= 1
    ("122b_gpu", [f"{ARR}.rollout.n=0"], "rollout.n"),
    # verl vllm rollout: max_model_len below prompt + response (1024 + 2048) truncates responses
    ("35b_npu", [f"{ARR}.rollout.max_model_len=2048"], "max_model_len"),
    # vLLM: max_model_len above max_position_embeddings (262144)
    ("122b_npu", [f"{ARR}.rollout.engine_kwargs.vllm.max_model_len=300000"], "max_model_len"),
    # vLLM: heads (16 / kv 2) over tensor parallel 3; 8 devices not divisible by 3
    ("35b_gpu", ["parallel.gen_tp=3"], "parallel.gen_tp"),
    # verl rollout: expert parallel in vLLM is tp*dp wide (or off)
    ("122b_gpu", ["parallel.gen_ep=4"], "parallel.gen_ep"),
    # actor/ref parity: one side only. (The actor's seed alone is fine: verl/trainer/config/ref/megatron_ref.yaml
    # line 22 `seed: ${oc.select:actor_rollout_ref.actor.megatron.seed,42}` makes the ref follow it.)
    ("35b_gpu", [f"{ARR}.ref.megatron.seed=7"], "seed"),
    ("122b_npu", [f"{ARR}.ref.megatron.use_distributed_optimizer=false"], "use_distributed_optimizer"),
    ("397b_gpu", [f"+{ARR}.actor.megatron.override_ddp_config.bucket_size=1000"], "override_ddp_config"),
    ("35b_npu", [f"{ARR}.ref.megatron.sequence_parallel=false"], "sequence_parallel"),
    # typo'd override key: not a TransformerConfig field (megatron_core_0.16.json)
    ("35b_gpu", [f"{ADD}.recompute_granulrity=full"], "recompute_granulrity"),
    ("122b_npu", [f"{ADD}.moe_router_top_k=4"], "moe_router_top_k"),
    # MindSpeed keys on GPU: megatron-core's TransformerConfig has no such field
    ("35b_gpu", [f"{ADD}.use_fused_swiglu=true"], "use_fused_swiglu"),
    ("122b_gpu", [f"{ADD}.context_parallel_algo=megatron_cp_algo"], "context_parallel_algo"),
    # layout keys inside the override: set parallel.* instead
    ("397b_npu", [f"{ADD}.expert_model_parallel_size=32"], "parallel.ep"),
    ("35b_gpu", [f"{ADD}.virtual_pipeline_model_parallel_size=2"], "parallel.vpp"),
    # verl checks the 'recompute_method' enum; megatron raises on a third value
    ("397b_gpu", [f"{M}.recompute_num_layers=0"], "recompute_num_layers"),
    # Qwen3.5's blocks (Megatron-Bridge builds RMSNorm, no linear bias): the checkpoint has no such weights
    ("35b_npu", [f"{ADD}.normalization=LayerNorm"], "normalization"),
    ("122b_gpu", [f"{ADD}.add_bias_linear=true"], "add_bias_linear"),
    ("35b_gpu", [f"{ADD}.moe_layer_freq=2"], "moe_layer_freq"),
    ("35b_gpu", [f"{ADD}.num_moe_experts=128"], "num_moe_experts"),
    # vllm_async_server.py _validate_configs: unset max_model_len becomes max_position_embeddings (262144)
    ("35b_gpu", ["data.max_prompt_length=300000"], "data.max_prompt_length"),
    # transformer_config.py: "DeepEP backend is only supported with flex token dispatcher."
    ("35b_gpu", [f"{ADD}.moe_enable_deepep=true"], "moe_enable_deepep"),
    # transformer_config.py: "Only one backend is supported for flex token dispatcher."
    (
        "35b_gpu",
        [
            f"{ADD}.moe_token_dispatcher_type=flex",
            f"{ADD}.moe_enable_deepep=true",
            f"{ADD}.moe_flex_dispatcher_backend=hybridep",
        ],
        "moe_flex_dispatcher_backend",
    ),
    # transformer_config.py: "Flex token dispatcher with deepep backend does not support
    # moe_pad_expert_input_to_capacity"
    (
        "35b_gpu",
        [
            f"{ADD}.moe_token_dispatcher_type=flex",
            f"{ADD}.moe_expert_capacity_factor=1.0",
            f"{ADD}.moe_pad_expert_input_to_capacity=true",
        ],
        "moe_pad_expert_input_to_capacity",
    ),
    # transformer_config.py Literal types: fp8 format, fp8 recipe, drop policy, router dtype
    ("122b_gpu", [f"{ADD}.fp8=e5m2"], "fp8"),
    ("122b_gpu", [f"{ADD}.fp8=hybrid", f"{ADD}.fp8_recipe=foo"], "fp8_recipe"),
    ("35b_gpu", [f"{ADD}.moe_token_drop_policy=random"], "moe_token_drop_policy"),
    ("35b_gpu", [f"{ADD}.moe_router_dtype=bf16"], "moe_router_dtype"),
    # transformer_config.py: a list of load-balancing types needs a list of coefficients as long
    ("35b_gpu", [f"{ADD}.moe_router_load_balancing_type=[aux_loss,seq_aux_loss]"], "moe_aux_loss_coeff"),
    # transformer_config.py: 48 layers with last=48 leave 0 for the first stage
    ("122b_gpu", [f"{ADD}.num_layers_in_last_pipeline_stage=48"], "num_layers_in_last_pipeline_stage"),
    # the layout's stage count is pp * vpp (pipeline_parallel_layer_layout.py)
    ("35b_npu", [f"{ADD}.pipeline_model_parallel_layout='Et*20|t*20L'", "parallel.vpp=2"], "parallel.vpp"),
    ("35b_npu", [f"{ADD}.pipeline_model_parallel_layout='Et*10|t*10|t*10|t*10L'"], "parallel.vpp"),
    # gated_delta_net.py (0.16): no context parallel, no packed sequences before 0.18
    ("35b_gpu", ["parallel.cp=2"], "parallel.cp"),
    ("35b_gpu", ["megatron.use_remove_padding=true"], "use_remove_padding"),
    # rollout replicas over 8 devices
    ("35b_gpu", ["parallel.gen_tp=16"], "parallel.gen_tp"),
    ("35b_gpu", ["parallel.gen_dp=2", "parallel.gen_tp=4", "parallel.gen_ep=4"], "parallel.gen_ep"),
    # a layout number set on verl's key instead of parallel.*
    ("35b_gpu", [f"{ARR}.rollout.tensor_model_parallel_size=4"], "parallel.gen_tp"),
    ("35b_gpu", [f"{ARR}.actor.megatron.tensor_model_parallel_size=4"], "parallel.tp"),
    # actor-only offload, ref-only override key
    ("35b_gpu", [f"{ARR}.actor.megatron.param_offload=false"], "megatron.param_offload"),
    (
        "35b_gpu",
        [f"+{ARR}.ref.megatron.override_transformer_config.moe_router_dtype=fp32"],
        "override_transformer_config",
    ),
    # not a field of megatron-core 0.16's TransformerConfig (DeepSeek's HF name)
    ("35b_gpu", [f"{ADD}.first_k_dense_replace=1"], "first_k_dense_replace"),
    # transformer_block.py uniform recompute over 12-layer chunks (pp=4)
    ("122b_npu", [f"{M}.recompute_num_layers=5"], "recompute_num_layers"),
    ("397b_gpu", ["parallel.pp=8"], "parallel.pp"),
    # verl 0.9.1 workers/engine/megatron/transformer_impl.py: "calculate_per_token_loss=True requires
    # use_remove_padding=True"; the preset leaves megatron.use_remove_padding=false
    ("122b_npu", [f"{ADD}.calculate_per_token_loss=true"], "calculate_per_token_loss"),
    # moe/experts.py: "`moe_apply_probs_on_input` only works with `moe_router_topk`=1." (asserted in forward)
    ("35b_gpu", [f"{ADD}.moe_apply_probs_on_input=true"], "moe_apply_probs_on_input"),
    # transformer_config.py: overlap_moe_expert_parallel_comm refuses full recompute
    ("35b_gpu", [f"{ADD}.overlap_moe_expert_parallel_comm=true"], "overlap_moe_expert_parallel_comm"),
    # whole-subtree parity: keys our megatron node does not feed
    ("35b_gpu", [f"{ARR}.actor.megatron.use_dist_checkpointing=true"], "use_dist_checkpointing"),
    ("35b_gpu", [f"+{ARR}.ref.megatron.override_ddp_config.grad_reduce_in_fp32=true"], "override_ddp_config"),
    ("397b_npu", [f"{ADD}.moe_router_topk=600"], "moe_router_topk"),
    ("35b_gpu", [f"{ADD}.moe_router_topk=8.5"], "moe_router_topk"),
]

# Real settings that must pass.
ACCEPTED = [
    # verl docs/ascend_tutorial performance tuning: MindSpeed keys on NPU (mindspeed_core_r0.16.json)
    ("35b_npu", [f"{ADD}.use_fused_swiglu=true"]),
    ("122b_npu", [f"{ADD}.use_fused_rotary_pos_emb=true"]),
    ("397b_npu", [f"{ADD}.use_fused_rmsnorm=true"]),
    ("122b_npu", [f"{ADD}.use_ascend_mc2=true"]),
    ("35b_npu", [f"{ADD}.swap_optimizer=true"]),
    ("397b_npu", [f"{ADD}.moe_alltoall_overlap_comm=true"]),
    ("122b_npu", [f"{ADD}.context_parallel_algo=ulysses_cp_algo"]),
    ("35b_npu", [f"{ADD}.context_parallel_algo=megatron_cp_algo"]),
    # selective recompute with modules (transformer_config.py allowed modules)
    (
        "397b_gpu",
        [
            f"{M}.recompute_granularity=selective",
            f"{M}.recompute_method=null",
            f"{M}.recompute_num_layers=null",
            f"{ADD}.recompute_modules=[moe,layernorm]",
        ],
    ),
    ("122b_gpu", [f"{M}.recompute_method=block", f"{M}.recompute_num_layers=2"]),
    ("35b_gpu", [f"{ADD}.moe_router_load_balancing_type=seq_aux_loss"]),
    ("122b_npu", [f"{ADD}.moe_router_dtype=fp32"]),
    ("35b_gpu", [f"{ADD}.moe_router_load_balancing_type=global_aux_loss"]),
    # 35B on pp=3: 40 + embedding + loss = 42 = 3 * 14 (transformer_config.py accounting)
    (
        "35b_gpu",
        [
            "parallel.nnodes=3",
            "parallel.pp=3",
            f"{ADD}.account_for_embedding_in_pipeline_split=true",
            f"{ADD}.account_for_loss_in_pipeline_split=true",
        ],
    ),
    # 122B pp=4: 11 + 13 + 13 + 11
    ("122b_npu", [f"{ADD}.num_layers_in_first_pipeline_stage=11", f"{ADD}.num_layers_in_last_pipeline_stage=11"]),
    ("122b_gpu", [f"{ADD}.num_layers_in_first_pipeline_stage=23"]),
    ("122b_npu", [f"{ADD}.moe_router_topk=4"]),
    ("397b_gpu", [f"{ADD}.moe_router_num_groups=8", f"{ADD}.moe_router_group_topk=4"]),
    ("35b_gpu", [f"{ADD}.moe_shared_expert_overlap=true", f"{ADD}.moe_token_dispatcher_type=alltoall"]),
    (
        "35b_gpu",
        [
            f"{ADD}.moe_expert_capacity_factor=1.5",
            f"{ADD}.moe_token_drop_policy=probs",
            f"{ADD}.moe_token_dispatcher_type=alltoall",
        ],
    ),
    ("397b_npu", [f"{ADD}.moe_router_enable_expert_bias=true", f"{ADD}.moe_router_score_function=sigmoid"]),
    # +megatron.<new key> reaches actor and ref alike
    ("122b_gpu", ["+megatron.use_dist_checkpointing=false"]),
    ("35b_npu", ["+megatron.seed=11"]),
    # both sides set identically; the actor alone (the ref follows it, megatron_ref.yaml)
    ("35b_gpu", [f"{ARR}.actor.megatron.seed=7"]),
    ("35b_gpu", [f"{ARR}.actor.megatron.seed=7", f"{ARR}.ref.megatron.seed=7"]),
    # layouts as published, VPP valid for each model
    ("35b_npu", ["parallel.vpp=2"]),
    ("122b_gpu", ["parallel.vpp=2"]),
    # 128*5/32 = 20 micro-batches: groups of 4 on pp=4 (schedules.py)
    ("397b_npu", ["parallel.vpp=3", "data.train_batch_size=128", f"{ARR}.actor.ppo_mini_batch_size=128"]),
    ("35b_gpu", [f"{ARR}.actor.ppo_mini_batch_size=16"]),
    ("122b_gpu", [f"{ADD}.pipeline_model_parallel_layout='Et*24|t*24L'"]),
    # micro-batches that divide each rank's share
    ("35b_npu", [f"{ARR}.rollout.log_prob_micro_batch_size_per_gpu=8"]),
    ("35b_gpu", [f"{ARR}.actor.ppo_micro_batch_size_per_gpu=5"]),
    ("35b_gpu", [f"{ARR}.rollout.max_model_len=3072"]),
]
ACCEPTED += [
    # fp8 on GPU: transformer-engine is there on the cluster (the CPU install lacks it; not a config fault)
    ("122b_gpu", [f"{ADD}.fp8=e4m3", f"{ADD}.fp8_recipe=blockwise"]),
    (
        "35b_gpu",
        [f"{ADD}.moe_router_load_balancing_type=[aux_loss,seq_aux_loss]", f"{ADD}.moe_aux_loss_coeff=[0.01,0.001]"],
    ),
    ("35b_npu", [f"{ADD}.pipeline_model_parallel_layout='Et*10|t*10|t*10|t*10L'", "parallel.vpp=2"]),
    ("35b_gpu", ["parallel.etp=2", "parallel.ep=4"]),
    ("35b_gpu", ["parallel.gen_dp=2", "parallel.gen_tp=4", "parallel.gen_ep=8"]),
    ("35b_gpu", ["parallel.gen_dp=2", "parallel.gen_tp=4"]),
    # MindSpeed docs/user-guide/verl.md feature table
    (
        "35b_npu",
        [
            f"{ADD}.normalization=RMSNorm",
            f"++{M}.moe_grouped_gemm=true",
            f"{ADD}.use_fused_moe_token_permute_and_unpermute=true",
        ],
    ),
    ("35b_gpu", [f"{ADD}.moe_router_dtype=fp64", f"{M}.moe_z_loss_coeff=0.001"]),
    # (35b_gpu with the flex dispatcher moved to REFUSED: the GPU presets' mbridge sets moe_shared_expert_overlap)
    ("35b_gpu", [f"{M}.recompute_num_layers=5"]),
    ("122b_npu", [f"{M}.recompute_num_layers=4"]),
    ("35b_gpu", [f"{ADD}.apply_rope_fusion=true", f"{ADD}.gradient_accumulation_fusion=true"]),
    ("122b_gpu", ["parallel.vpp=3"]),
    # model_parallel_config.py 0.16: EP+TP without SP is a warning, not an error
    ("122b_npu", [f"{ADD}.sequence_parallel=false"]),
    ("35b_gpu", [f"{M}.recompute_granularity=null"]),
    ("122b_gpu", [f"{ADD}.add_bias_linear=false", f"{ADD}.normalization=RMSNorm"]),
    # verl 0.9 vllm_async_server.py _validate_configs only warns and raises max_num_batched_tokens itself
    # (verl 0.8 passes it on to vLLM, which refuses it: test_verl_0_8_passes_a_small_token_budget_to_vllm)
    *([("35b_gpu", SMALL_TOKEN_BUDGET)] if VERL_0_9 else []),
    ("35b_gpu", [f"{M}.recompute_granularity=selective", f"{M}.recompute_num_layers=null"]),
    ("35b_gpu", ["+megatron.override_ddp_config.grad_reduce_in_fp32=true"]),
    (
        "35b_gpu",
        [f"{ADD}.moe_apply_probs_on_input=true", f"{ADD}.moe_router_topk=1", f"{ADD}.moe_router_pre_softmax=true"],
    ),
]
PUBLISHED = [f"{m}_{d}" for m, d in presets()]


def _cfg(preset, overrides):
    model, device = preset.rsplit("_", 1)
    return compose([f"model={model}", f"device={device}", *overrides])


@pytest.mark.parametrize(("preset", "overrides", "key"), REFUSED, ids=[f"{c[2]}-{i}" for i, c in enumerate(REFUSED)])
def test_heldout_refused(preset, overrides, key):
    found = [p for p in preflight(_cfg(preset, overrides), machine_missing="warning") if p.level == "error"]
    assert any(key in k for p in found for k in p.keys), f"{overrides}: {[str(p) for p in found]}"


@pytest.mark.parametrize(("preset", "overrides"), ACCEPTED + [(p, []) for p in PUBLISHED])
def test_heldout_accepted(preset, overrides):
    cfg = _cfg(preset, overrides)
    assert [str(p) for p in preflight(cfg, machine_missing="warning") if p.level == "error"] == []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert [str(p) for p in real_problems(cfg, device_of(cfg))] == []


# A subset through the real validators (dry_run=full's megatron-core TransformerConfig and verl functions).
REAL_REFUSED = [
    ("35b_gpu", [f"{ARR}.actor.ppo_mini_batch_size=12"], "ppo_mini_batch_size"),
    ("35b_gpu", [f"{ADD}.moe_pad_expert_input_to_capacity=true"], "moe_pad_expert_input_to_capacity"),
    ("35b_gpu", [f"{ADD}.moe_router_num_groups=7", f"{ADD}.moe_router_group_topk=4"], "moe_router_num_groups"),
    ("35b_gpu", [f"{ADD}.distribute_saved_activations=true"], "distribute_saved_activations"),
    ("35b_npu", [f"{ADD}.account_for_embedding_in_pipeline_split=true"], "account_for_embedding_in_pipeline_split"),
    (
        "35b_npu",
        [
            f"{ARR}.rollout.log_prob_micro_batch_size_per_gpu=6",
            f"{ARR}.rollout.log_prob_use_dynamic_bsz=false",
            f"{ARR}.actor.use_dynamic_bsz=false",
        ],
        "log_prob_micro_batch_size_per_gpu",
    ),
]


@pytest.mark.each_verl
@pytest.mark.parametrize(("preset", "overrides", "key"), REAL_REFUSED, ids=[c[2] for c in REAL_REFUSED])
def test_heldout_refused_by_real_validators(preset, overrides, key):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        found = real_problems(_cfg(preset, overrides), device_of(_cfg(preset, overrides)))
    assert any(key in k for p in found for k in p.keys), f"{overrides}: {[str(p) for p in found]}"


# Through the entrypoint as a user runs it: exit 2, the key named, no traceback.
CLI_CASES = [
    ("35b", "gpu", [f"{ADD}.moe_router_topk=300"], 2, "moe_router_topk"),
    ("122b", "npu", [f"{ARR}.ref.megatron.use_distributed_optimizer=false"], 2, "use_distributed_optimizer"),
    ("35b", "gpu", [f"{ARR}.actor.ppo_mini_batch_size=12"], 2, "ppo_mini_batch_size"),
    ("122b", "npu", [f"{ADD}.use_fused_swiglu=true", f"{ADD}.use_ascend_mc2=true"], 0, ""),
]


@pytest.mark.parametrize(("model", "device", "overrides", "code", "key"), CLI_CASES)
def test_heldout_through_entrypoint(cli, model, device, overrides, code, key):
    said = cli(f"device={device}", f"model={model}", "dry_run=true", *overrides)
    assert said.code == code, said.said
    assert "Traceback" not in said.said
    assert key in said.said


def test_heldout_one_subprocess():
    """One real `python -m verl_qwen35` (the user's shell path), refusing with exit 2."""
    run = subprocess.run(
        [sys.executable, "-m", "verl_qwen35", "device=npu", "model=397b", "dry_run=true", "parallel.gen_ep=8"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**__import__("os").environ, "RAY_ADDRESS": "local"},
    )
    assert run.returncode == 2, run.stdout + run.stderr
    assert "parallel.gen_ep" in run.stdout + run.stderr
    assert "Traceback" not in run.stdout + run.stderr


@pytest.mark.each_verl
def test_heldout_full_dry_run_accepts_fp8_on_gpu(cli, tmp_path):
    """dry_run=full with real data files: megatron-core's TransformerConfig without transformer-engine (this CPU
    install) must not turn a valid fp8 recipe into a refusal; the GPU cluster has transformer-engine."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = 128  # one training batch (model=122b): fewer rows leave verl's train dataloader empty
    table = pa.table(
        {
            "prompt": [[{"role": "user", "content": "hi"}]] * rows,
            "data_source": ["x"] * rows,
            "reward_model": [{"ground_truth": "1"}] * rows,
        }
    )
    for name in ("train", "test"):
        pq.write_table(table, tmp_path / f"{name}.parquet")
    said = cli(
        "device=gpu",
        "model=122b",
        "dry_run=full",
        f"data.train_files={tmp_path / 'train.parquet'}",
        f"data.val_files={tmp_path / 'test.parquet'}",
        f"{ADD}.fp8=e4m3",
        f"{ADD}.fp8_recipe=blockwise",
    )
    assert said.code == 0, said.said
    assert "TransformerConfig and layer split (megatron-core's own), verl micro-batches: OK" in said.said


@pytest.mark.each_verl
@pytest.mark.skipif(VERL_0_9, reason="verl 0.9 raises max_num_batched_tokens to max_model_len itself")
def test_verl_0_8_passes_a_small_token_budget_to_vllm():
    """verl 0.8.0's vllm_async_server.py hands rollout.max_num_batched_tokens to vLLM unchanged; with
    chunked prefill off vLLM's SchedulerConfig refuses a budget below max_model_len."""
    found = [p for p in preflight(_cfg("35b_gpu", SMALL_TOKEN_BUDGET), machine_missing="warning") if p.level == "error"]
    assert any(f"{ARR}.rollout.max_num_batched_tokens" in p.keys for p in found), [str(p) for p in found]
