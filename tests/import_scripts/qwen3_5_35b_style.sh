#!/usr/bin/env bash
# Test fixture in the structure of verl's examples/grpo_trainer/run_qwen3_5_*_megatron.sh (exports, a case
# on DEVICE, arrays of overrides, a launch line): importing it must give upstream_overrides/35b_<device>.txt.
export CUDA_DEVICE_MAX_CONNECTIONS=1
export VLLM_USE_V1=1
export VLLM_ALLREDUCE_USE_SYMM_MEM=0
set -xeuo pipefail

DEVICE=${DEVICE:-$(python3 -c 'import torch_npu' 2>/dev/null && echo npu || echo gpu)}
case "${DEVICE}" in
    gpu) TP=2; PP=1; EP=8; GEN_TP=8; per_node=8 ;;
    npu) TP=2; PP=2; EP=8; GEN_TP=8; per_node=16 ;;
    *) echo "Unsupported DEVICE=${DEVICE}" >&2; exit 1 ;;
esac
CP=1
ETP=1
OFFLOAD=${ALL_OFFLOAD:-True}
rollout_name=vllm
MODEL_PATH=${HF_MODEL_PATH:-"Qwen3.5-35B-A3B"}
train_path=$HOME/data/geo3k/train.parquet
test_path=$HOME/data/geo3k/test.parquet
mkdir -p "$HOME/data"
hf download Qwen/Qwen3.5-35B-A3B --local-dir "$HOME/models" >/dev/null

DATA=(
    data.train_files=${train_path}
    data.val_files=${test_path}
    data.train_batch_size=32
    data.max_prompt_length=1024
    data.max_response_length=2048
    data.truncation='error'
    data.filter_overlong_prompts=True
)
ALGORITHM=(algorithm.adv_estimator=grpo algorithm.use_kl_in_reward=False)
MODEL=(
    actor_rollout_ref.model.path=${MODEL_PATH}
    actor_rollout_ref.model.trust_remote_code=True
    actor_rollout_ref.model.use_remove_padding=False
)
ROLLOUT=(
    actor_rollout_ref.rollout.name=${rollout_name}
    actor_rollout_ref.rollout.tensor_model_parallel_size=${GEN_TP}
    actor_rollout_ref.rollout.gpu_memory_utilization=0.6
    actor_rollout_ref.rollout.n=5
    actor_rollout_ref.rollout.dtype=bfloat16
    actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=1
    actor_rollout_ref.rollout.log_prob_use_dynamic_bsz=False
    actor_rollout_ref.rollout.log_prob_max_token_len_per_gpu=4096
    actor_rollout_ref.rollout.calculate_log_probs=True
)
ACTOR=(
    actor_rollout_ref.actor.optim.lr=1e-6
    actor_rollout_ref.actor.ppo_mini_batch_size=32
    actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=1
    actor_rollout_ref.actor.ppo_max_token_len_per_gpu=4096
    actor_rollout_ref.actor.use_dynamic_bsz=False
    actor_rollout_ref.actor.use_kl_loss=True
    actor_rollout_ref.actor.kl_loss_coef=0.01
    actor_rollout_ref.actor.kl_loss_type=low_var_kl
    actor_rollout_ref.actor.entropy_coeff=0
    actor_rollout_ref.actor.megatron.use_mbridge=True
    actor_rollout_ref.actor.megatron.vanilla_mbridge=True
    actor_rollout_ref.actor.megatron.use_remove_padding=False
    actor_rollout_ref.actor.megatron.tensor_model_parallel_size=${TP}
    actor_rollout_ref.actor.megatron.pipeline_model_parallel_size=${PP}
    actor_rollout_ref.actor.megatron.context_parallel_size=${CP}
    actor_rollout_ref.actor.megatron.expert_model_parallel_size=${EP}
    actor_rollout_ref.actor.megatron.expert_tensor_parallel_size=${ETP}
    actor_rollout_ref.actor.megatron.param_offload=${OFFLOAD}
    actor_rollout_ref.actor.megatron.optimizer_offload=${OFFLOAD}
    actor_rollout_ref.actor.megatron.grad_offload=${OFFLOAD}
    actor_rollout_ref.actor.megatron.dtype=bfloat16
    ++actor_rollout_ref.actor.megatron.override_transformer_config.attention_backend=auto
    +actor_rollout_ref.actor.megatron.override_transformer_config.recompute_method=uniform
    +actor_rollout_ref.actor.megatron.override_transformer_config.recompute_granularity=full
    +actor_rollout_ref.actor.megatron.override_transformer_config.recompute_num_layers=1
    +actor_rollout_ref.actor.megatron.override_transformer_config.moe_aux_loss_coeff=0.01
    +actor_rollout_ref.actor.megatron.override_transformer_config.moe_z_loss_coeff=0.001
    +actor_rollout_ref.actor.megatron.override_transformer_config.moe_permute_fusion=True
    +actor_rollout_ref.actor.megatron.override_transformer_config.moe_grouped_gemm=True
    +actor_rollout_ref.actor.optim.override_optimizer_config.optimizer_offload_fraction=1
    +actor_rollout_ref.actor.optim.override_optimizer_config.overlap_cpu_optimizer_d2h_h2d=True
    +actor_rollout_ref.actor.optim.override_optimizer_config.use_precision_aware_optimizer=True
    +actor_rollout_ref.actor.optim.override_optimizer_config.optimizer_cpu_offload=True
)
REF=(
    actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=1
    actor_rollout_ref.ref.log_prob_use_dynamic_bsz=False
    actor_rollout_ref.ref.log_prob_max_token_len_per_gpu=4096
    actor_rollout_ref.ref.megatron.tensor_model_parallel_size=${TP}
    actor_rollout_ref.ref.megatron.pipeline_model_parallel_size=${PP}
    actor_rollout_ref.ref.megatron.context_parallel_size=${CP}
    actor_rollout_ref.ref.megatron.expert_model_parallel_size=${EP}
    actor_rollout_ref.ref.megatron.expert_tensor_parallel_size=${ETP}
    actor_rollout_ref.ref.megatron.param_offload=${OFFLOAD}
)
TRAINER=(
    trainer.critic_warmup=0
    trainer.logger='["console","wandb"]'
    trainer.project_name=verl_grpo_qwen3_5_35b_geo3k
    trainer.experiment_name=qwen3_5_35b_megatron
    trainer.n_gpus_per_node=${per_node}
    trainer.nnodes=1
    trainer.save_freq=20
    trainer.val_before_train=False
    trainer.test_freq=5
    trainer.total_epochs=15
)
if [ "${DEVICE}" = npu ]; then
    export CPU_AFFINITY_CONF=1
    MODEL+=(actor_rollout_ref.model.use_remove_padding=True)
    ROLLOUT+=(
        actor_rollout_ref.rollout.log_prob_use_dynamic_bsz=True
        actor_rollout_ref.rollout.gpu_memory_utilization=0.65
        +actor_rollout_ref.rollout.engine_kwargs.vllm.mm_processor_cache_gb=0
    )
    ACTOR+=(
        actor_rollout_ref.actor.use_dynamic_bsz=True
        actor_rollout_ref.actor.megatron.vanilla_mbridge=False
        actor_rollout_ref.actor.checkpoint.strict=False
        actor_rollout_ref.actor.megatron.use_remove_padding=True
        +actor_rollout_ref.actor.megatron.override_transformer_config.use_flash_attn=True
        +actor_rollout_ref.actor.megatron.override_transformer_config.moe_token_dispatcher_type=alltoall
        +actor_rollout_ref.actor.megatron.override_transformer_config.use_naive_l2norm=True
    )
    REF+=(actor_rollout_ref.ref.log_prob_use_dynamic_bsz=True)
fi

LAUNCH=(python3)
RAY=(ray_kwargs.ray_init.runtime_env.py_executable=null)
if [ "${VERL_USE_UV:-1}" != 0 ] && [ "${DEVICE}" = gpu ]; then
    LAUNCH=(uv run --frozen python3)
    RAY=(ray_kwargs.ray_init.runtime_env.py_executable="uv run --frozen")
fi
"${LAUNCH[@]}" -m verl.trainer.main_ppo \
    "${DATA[@]}" "${ALGORITHM[@]}" "${MODEL[@]}" "${ROLLOUT[@]}" "${ACTOR[@]}" "${REF[@]}" "${TRAINER[@]}" \
    model_engine=megatron "${RAY[@]}" "$@"
