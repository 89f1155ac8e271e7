#!/usr/bin/env bash
# Test input written for verl-qwen35 (issue 40): a short launch script in the style of verl's
# examples/grpo_trainer/run_qwen3_5_35b_megatron.sh (at 1dda039b), as a new user writes one for two
# Ascend A3 nodes of 16 dies: 15 overrides, a TensorBoard logger, a few exports.
set -xeuo pipefail

export HCCL_CONNECT_TIMEOUT=1500
export TENSORBOARD_DIR=${HOME}/tb/qwen35_35b

MODEL_PATH=${MODEL_PATH:-"${HOME}/models/Qwen3.5-35B-A3B"}
DATA_DIR=${DATA_DIR:-"${HOME}/data/geo3k"}

python3 -m verl.trainer.main_ppo \
    model_engine=megatron \
    algorithm.adv_estimator=grpo \
    data.train_files="${DATA_DIR}/train.parquet" \
    data.val_files="${DATA_DIR}/test.parquet" \
    data.train_batch_size=64 \
    actor_rollout_ref.model.path="${MODEL_PATH}" \
    actor_rollout_ref.actor.optim.lr=1e-6 \
    actor_rollout_ref.actor.ppo_mini_batch_size=16 \
    actor_rollout_ref.actor.megatron.tensor_model_parallel_size=2 \
    actor_rollout_ref.actor.megatron.expert_model_parallel_size=16 \
    actor_rollout_ref.rollout.name=vllm \
    actor_rollout_ref.rollout.tensor_model_parallel_size=4 \
    trainer.logger='["console","tensorboard"]' \
    trainer.nnodes=2 \
    trainer.n_gpus_per_node=16
