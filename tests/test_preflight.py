"""Preflight refuses the misconfigurations users actually hit, naming the key to change."""

import pytest

from verl_qwen35.checks import preflight
from verl_qwen35.compose import compose


def errors(overrides: list[str]) -> list:
    cfg = compose(overrides)
    return [p for p in preflight(cfg, machine_missing="warning") if p.level == "error"]


def named(found: list, key: str) -> bool:
    return any(key in k for p in found for k in p.keys)


# (base preset, override(s), a key the report must name). Drawn from the layout constraints
# in shared/reference/README.md and the review findings on verl's Qwen3.5 scripts.
MISCONFIGURATIONS = [
    ("122b_npu", ["parallel.ep=12"], "parallel.ep"),  # EP must divide 256 experts
    ("122b_npu", ["parallel.tp=3"], "parallel.tp"),  # heads and world
    ("122b_npu", ["parallel.tp=32"], "parallel.tp"),  # Gated DeltaNet key heads (16)
    ("35b_gpu", ["parallel.cp=2"], "parallel.cp"),  # GDN has no CP in stock megatron-core
    ("122b_gpu", ["parallel.pp=5"], "parallel.pp"),  # 48 layers, world 32
    ("35b_npu", ["parallel.vpp=3"], "parallel.vpp"),  # 20 layers per stage
    ("35b_gpu", ["parallel.vpp=2"], "parallel.vpp"),  # VPP without PP
    ("122b_npu", ["parallel.nnodes=3"], "parallel.nnodes"),  # expert grid 64 vs world 48
    ("122b_npu", ["parallel.etp=2"], "parallel.etp"),  # expert grid 128 vs world 64
    ("35b_gpu", ["parallel.ep=16"], "parallel.ep"),  # expert grid 16 vs world 8
    ("35b_gpu", ["parallel.devices_per_node=6"], "parallel.devices_per_node"),
    ("122b_npu", ["parallel.gen_tp=32"], "parallel.gen_tp"),  # rollout TP vs linear heads
    ("122b_gpu", ["parallel.gen_tp=3"], "parallel.gen_tp"),  # rollout TP vs world and heads
    ("122b_npu", ["actor_rollout_ref.rollout.pipeline_model_parallel_size=2"], "rollout.pipeline_model_parallel_size"),
    ("122b_npu", ["parallel.gen_ep=4"], "parallel.gen_ep"),  # rollout EP must be 1 or rollout TP*DP
    ("397b_gpu", ["parallel.gen_dp=32"], "parallel.gen_dp"),  # 8*32 rollout devices on a world of 128
    ("397b_npu", ["actor_rollout_ref.rollout.expert_parallel_size=128"], "parallel.gen_ep"),  # past parallel.*
    ("35b_gpu", ["megatron.use_remove_padding=true"], "megatron.use_remove_padding"),  # packed GDN
    ("35b_npu", ["actor_rollout_ref.actor.use_dynamic_bsz=true"], "actor.use_dynamic_bsz"),
    ("122b_gpu", ["data.train_batch_size=16"], "data.train_batch_size"),  # < mini batch 64
    ("35b_gpu", ["actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=3"], "ppo_micro_batch_size_per_gpu"),
    ("35b_gpu", ["actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=null"], "rollout.log_prob_micro"),
    ("35b_gpu", ["actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=null"], "ref.log_prob_micro"),
    ("122b_gpu", ["data.max_response_length=16000"], "engine_kwargs.vllm.max_model_len"),
    ("35b_gpu", ["actor_rollout_ref.rollout.max_model_len=2048"], "rollout.max_model_len"),
    ("35b_npu", ["megatron.use_mbridge=false"], "megatron.use_mbridge"),
    ("35b_gpu", ["+megatron.override_transformer_config.use_flash_attn=true"], "use_flash_attn"),  # NPU-only key
    ("122b_gpu", ["+megatron.override_transformer_config.moe_grouped_gem=true"], "moe_grouped_gem"),
    ("122b_npu", ["actor_rollout_ref.ref.megatron.use_remove_padding=true"], "ref.megatron"),  # review finding
    ("122b_npu", ["actor_rollout_ref.ref.megatron.vanilla_mbridge=true"], "ref.megatron"),  # review finding
    ("122b_npu", ["actor_rollout_ref.rollout.gpu_memory_utilization=1.2"], "gpu_memory_utilization"),
    ("35b_npu", ["actor_rollout_ref.rollout.n=1"], "actor_rollout_ref.rollout.n"),  # GRPO needs a group
    ("35b_gpu", ["megatron.dtype=fp8"], "megatron.dtype"),
    ("122b_npu", ["trainer.nnodes=2"], "parallel.nnodes"),  # a layout number set past parallel.*
    ("35b_gpu", ["actor_rollout_ref.rollout.tensor_model_parallel_size=4"], "parallel.gen_tp"),
]


@pytest.mark.parametrize(
    ("preset", "overrides", "key"), MISCONFIGURATIONS, ids=[c[2] + str(i) for i, c in enumerate(MISCONFIGURATIONS)]
)
def test_misconfiguration_is_refused_naming_the_key(preset, overrides, key):
    model, device = preset.split("_")
    found = errors([f"model={model}", f"device={device}", *overrides])
    assert found, f"{overrides} was not refused"
    assert named(found, key), f"no error names {key}: {[str(p) for p in found]}"


def test_messages_say_what_would_be_right():
    (ep_error,) = [p for p in errors(["model=122b", "device=npu", "parallel.ep=12"]) if "num_experts" in p.message]
    assert "ep=12" in ep_error.message and "[1, 2, 4, 8, 16]" in ep_error.message
    (typo,) = errors(["model=122b", "device=gpu", "+megatron.override_transformer_config.moe_grouped_gem=true"])
    assert "did you mean moe_grouped_gemm" in typo.message


def test_shipped_presets_pass_with_zero_errors(combo):
    model, device = combo
    assert errors([f"model={model}", f"device={device}"]) == []


def test_npu_only_keys_are_accepted_on_npu_and_cp_is_a_warning_there():
    cfg = compose(
        [
            "model=35b",
            "device=npu",
            "parallel.cp=2",
            "+megatron.override_transformer_config.context_parallel_algo=megatron_cp_algo",
        ]
    )
    found = preflight(cfg, machine_missing="warning")
    assert not [p for p in found if p.level == "error"]
    assert any("parallel.cp" in k for p in found if p.level == "warning" for k in p.keys)
