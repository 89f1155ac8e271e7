"""Boundary cases written from megatron-core 0.16.1's TransformerConfig, verl 0.9.1 and verl's Ascend docs:
refused naming a key, or accepted; the same verdict from the fast preflight and the real validators."""

import re
import warnings

import pytest

from tests.runs import preflight
from verl_qwen35.checks import device_of
from verl_qwen35.config import compose
from verl_qwen35.errors import UserError
from verl_qwen35.validators.real import real_problems

ADD = "+megatron.override_transformer_config"
M = "megatron.override_transformer_config"

# (preset, overrides, a key the refusal must name)
REFUSED = [
    ("35b_gpu", ["actor_rollout_ref.rollout.n=2.5"], "rollout.n"),
    ("35b_gpu", ["data.train_batch_size=abc"], "data.train_batch_size"),
    ("35b_gpu", ["data.train_batch_size=0"], "data.train_batch_size"),
    ("35b_gpu", ["actor_rollout_ref.actor.ppo_mini_batch_size=-4"], "ppo_mini_batch_size"),
    ("35b_gpu", ["actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=0.5"], "ppo_micro_batch_size_per_gpu"),
    ("35b_gpu", [f"{M}.recompute_num_layers=null"], "recompute_num_layers"),
    ("35b_gpu", [f"{M}.recompute_method=null"], "recompute_method"),
    ("35b_gpu", [f"{M}.recompute_granularity=selective"], "recompute_num_layers"),
    ("35b_gpu", [f"{M}.recompute_granularity=partial"], "recompute_granularity"),
    ("35b_gpu", [f"{M}.recompute_method=chunked"], "recompute_method"),
    (
        "35b_gpu",
        [
            f"{M}.recompute_granularity=selective",
            f"{M}.recompute_num_layers=null",
            f"{M}.recompute_method=null",
            f"{M}.recompute_modules=[mla_up_proj]",
        ],
        "recompute_modules",
    ),
    ("35b_gpu", [f"{ADD}.tensor_model_parallel_size=4"], "parallel.tp"),
    ("122b_npu", [f"{ADD}.context_parallel_size=2"], "parallel.cp"),
    ("35b_gpu", [f"{ADD}.sequence_parallel=true", "parallel.tp=1", "parallel.gen_tp=8"], "sequence_parallel"),
    ("35b_gpu", [f"{M}.attention_backend=flashy"], "attention_backend"),
    ("35b_gpu", [f"{M}.moe_grouped_gemm=yes"], "moe_grouped_gemm"),
    ("35b_gpu", [f"{ADD}.moe_token_dispatcher_type=alltoall_seq"], "moe_token_dispatcher_type"),
    (
        "35b_gpu",
        [f"{ADD}.moe_shared_expert_overlap=true", f"{ADD}.moe_token_dispatcher_type=allgather"],
        "moe_shared_expert_overlap",
    ),
    ("35b_gpu", [f"{ADD}.moe_router_enable_expert_bias=true"], "moe_router_enable_expert_bias"),
    ("35b_gpu", [f"{ADD}.fp8_param=true"], "fp8_param"),
    ("35b_gpu", [f"{ADD}.cpu_offloading=true"], "cpu_offloading"),
    ("35b_gpu", [f"{ADD}.num_hidden_layers=40"], "num_hidden_layers"),
    ("35b_gpu", [f"{ADD}.hidden_size=4096"], "hidden_size"),
    ("35b_gpu", [f"{M}.recompute_num_layers=3"], "recompute_num_layers"),  # 40 layers in one chunk
    ("122b_npu", ["parallel.vpp=4", f"{M}.recompute_num_layers=2"], "recompute_num_layers"),  # chunks of 3
    # pipeline stages (transformer_config.py / transformer_block.py)
    ("35b_npu", [f"{ADD}.num_layers_in_first_pipeline_stage=0"], "num_layers_in_first_pipeline_stage"),
    ("35b_npu", [f"{ADD}.num_layers_in_first_pipeline_stage=-2"], "num_layers_in_first_pipeline_stage"),
    (
        "35b_npu",
        [f"{ADD}.num_layers_in_first_pipeline_stage=20", f"{ADD}.num_layers_in_last_pipeline_stage=19"],
        "num_layers_in_first_pipeline_stage",
    ),
    ("122b_npu", [f"{ADD}.num_layers_in_first_pipeline_stage=10"], "num_layers_in_first_pipeline_stage"),
    ("35b_gpu", [f"{ADD}.num_layers_in_first_pipeline_stage=20"], "num_layers_in_first_pipeline_stage"),
    ("122b_npu", [f"{ADD}.account_for_embedding_in_pipeline_split=true"], "account_for_embedding"),
    (
        "35b_npu",
        [f"{ADD}.num_layers_in_first_pipeline_stage=19", f"{ADD}.account_for_loss_in_pipeline_split=true"],
        "num_layers_in_first_pipeline_stage",
    ),
    ("122b_npu", ["parallel.vpp=5"], "parallel.vpp"),
    ("35b_npu", [f"{ADD}.pipeline_model_parallel_layout='Et*20|t*19L'"], "pipeline_model_parallel_layout"),
    ("35b_npu", [f"{ADD}.pipeline_model_parallel_layout='Et*20|t*20'"], "pipeline_model_parallel_layout"),
    (
        "35b_npu",
        [f"{ADD}.pipeline_model_parallel_layout='Et*20|t*20L'", f"{ADD}.num_layers_in_first_pipeline_stage=20"],
        "pipeline_model_parallel_layout",
    ),
    # micro-batches (verl engine/utils.py prepare_micro_batches, megatron schedules.py)
    ("122b_npu", ["actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=5"], "log_prob_micro_batch_size"),
    (
        "35b_gpu",
        ["actor_rollout_ref.actor.use_kl_loss=true", "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=3"],
        "ref.log_prob_micro_batch_size_per_gpu",
    ),
    ("122b_npu", ["parallel.vpp=2", "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=8"], "parallel.vpp"),
    ("122b_npu", ["parallel.vpp=2", f"{ADD}.microbatch_group_size_per_vp_stage=2"], "microbatch_group_size"),
    # rollout
    ("122b_npu", ["parallel.gen_tp=8", "actor_rollout_ref.rollout.data_parallel_size=3"], "parallel.gen_tp"),
    ("35b_gpu", ["actor_rollout_ref.rollout.max_model_len=300000"], "max_model_len"),
    ("35b_gpu", ["actor_rollout_ref.model.path=Qwen/Qwen3.5-122B-A10B"], "actor_rollout_ref.model.path"),
    # verl dataclass enums (verl/workers/config/actor.py, rollout.py)
    ("35b_gpu", ["actor_rollout_ref.actor.loss_agg_mode=token-avg"], "loss_agg_mode"),
    ("35b_gpu", ["actor_rollout_ref.rollout.mode=sync"], "rollout.mode"),
    ("35b_gpu", ["megatron.dtype=fp32"], "megatron.dtype"),
    ("35b_gpu", ["actor_rollout_ref.actor.ppo_micro_batch_size=8"], "actor_rollout_ref.actor.ppo_micro_batch_size"),
    ("35b_gpu", ["actor_rollout_ref.rollout.log_prob_micro_batch_size=8"], "rollout.log_prob_micro_batch_size"),
    (
        "35b_gpu",
        ["actor_rollout_ref.rollout.val_kwargs.do_sample=true", "actor_rollout_ref.rollout.temperature=0"],
        "rollout.temperature",
    ),
    ("35b_gpu", ["+megatron.dynamic_context_parallel=true"], "max_seqlen_per_dp_cp_rank"),
    ("35b_gpu", [f"{ADD}.enable_cuda_graph=true"], "cuda_graph_scope"),
    ("35b_gpu", [f"{ADD}.cuda_graph_impl=local", f"{ADD}.cuda_graph_scope=[mlp]"], "cuda_graph_scope"),
    ("35b_gpu", ["+megatron.sequence_paralel=false"], "megatron.sequence_paralel"),
    ("35b_gpu", ["+megatron.override_ddp_config={bucket_sise: 40000000}"], "megatron.override_ddp_config.bucket_sise"),
    (
        "35b_gpu",
        ["+megatron.override_ddp_config={overlap_grad_reduce: maybe}"],
        "override_ddp_config.overlap_grad_reduce",
    ),
    # MTP
    ("35b_gpu", [f"{ADD}.mtp_num_layers=1"], "mtp_num_layers"),
    ("35b_gpu", ["actor_rollout_ref.model.mtp.enable=true", f"{ADD}.mtp_num_layers=2"], "mtp_num_layers"),
]
# Real settings that must pass: verl's Ascend docs, megatron-core boundaries.
ACCEPTED = [
    (
        "122b_npu",
        [
            f"{ADD}.use_fused_swiglu=true",
            f"{ADD}.use_fused_rotary_pos_emb=true",
            f"{ADD}.apply_rope_fusion=true",
            f"{ADD}.use_fused_rmsnorm=true",
            f"{ADD}.fused_permute_unpermute=true",
            f"{ADD}.use_ascend_mc2=true",
            f"{ADD}.use_distributed_optimizer=true",
            f"{ADD}.sequence_parallel=true",
            f"{ADD}.swap_optimizer=true",
            f"{ADD}.moe_alltoall_overlap_comm=true",
            f"{ADD}.position_embedding_type=rope",
            f"{ADD}.swiglu=true",
            f"{ADD}.use_fused_moe_token_permute_and_unpermute=true",
        ],
    ),
    ("35b_npu", ["parallel.cp=2", f"{ADD}.context_parallel_size=2", f"{ADD}.context_parallel_algo=megatron_cp_algo"]),
    ("122b_npu", ["parallel.vpp=2"]),
    ("122b_npu", ["parallel.vpp=3"]),
    ("122b_npu", ["parallel.vpp=4"]),
    ("35b_npu", [f"{ADD}.num_layers_in_first_pipeline_stage=18", f"{ADD}.num_layers_in_last_pipeline_stage=22"]),
    ("122b_npu", [f"{ADD}.num_layers_in_first_pipeline_stage=11", f"{ADD}.num_layers_in_last_pipeline_stage=13"]),
    ("122b_npu", [f"{ADD}.num_layers_in_first_pipeline_stage=12"]),
    (
        "35b_npu",
        [f"{ADD}.account_for_embedding_in_pipeline_split=true", f"{ADD}.account_for_loss_in_pipeline_split=true"],
    ),
    ("35b_npu", [f"{ADD}.pipeline_model_parallel_layout='Et*20|t*20L'"]),
    (
        "35b_gpu",
        [
            f"{M}.recompute_granularity=selective",
            f"{M}.recompute_num_layers=null",
            f"{M}.recompute_method=null",
            f"{M}.recompute_modules=[core_attn,moe_act]",
        ],
    ),
    ("35b_gpu", [f"{M}.recompute_method=block", f"{M}.recompute_num_layers=4"]),
    ("35b_gpu", [f"{M}.recompute_num_layers=4"]),
    ("35b_gpu", [f"{M}.recompute_method=block", f"{M}.recompute_num_layers=3"]),
    ("35b_gpu", [f"{ADD}.moe_router_dtype=fp32", f"{ADD}.moe_shared_expert_overlap=true"]),
    ("35b_gpu", [f"{ADD}.tensor_model_parallel_size=2"]),
    ("122b_gpu", ["data.max_response_length=11000"]),
    (
        "35b_gpu",
        ["actor_rollout_ref.actor.use_kl_loss=true", "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=4"],
    ),
    ("35b_gpu", ["actor_rollout_ref.model.mtp.enable=true", f"{ADD}.mtp_num_layers=1"]),
    ("35b_gpu", ["actor_rollout_ref.model.path=/models/Qwen3.5-35B-A3B"]),
    ("35b_gpu", [f"{ADD}.cuda_graph_impl=local", f"{ADD}.cuda_graph_scope=[full_iteration]"]),
    ("35b_gpu", ["+megatron.seed=7", "+megatron.use_distributed_optimizer=true"]),
    ("35b_gpu", ["+megatron.override_ddp_config={bucket_size: 40000000, grad_reduce_in_fp32: true}"]),
]


def _cfg(preset, overrides):
    model, device = preset.rsplit("_", 1)
    return compose([f"model={model}", f"device={device}", *overrides])


@pytest.mark.parametrize(("preset", "overrides", "key"), REFUSED, ids=[f"{c[2]}-{i}" for i, c in enumerate(REFUSED)])
def test_refused_naming_the_key(preset, overrides, key):
    found = [p for p in preflight(_cfg(preset, overrides), machine_missing="warning") if p.level == "error"]
    assert any(key in k for p in found for k in p.keys), f"{overrides}: {[str(p) for p in found]}"


@pytest.mark.parametrize(("preset", "overrides"), ACCEPTED, ids=[str(i) for i in range(len(ACCEPTED))])
def test_accepted_by_fast_and_real_validators(preset, overrides):
    cfg = _cfg(preset, overrides)
    assert [str(p) for p in preflight(cfg, machine_missing="warning") if p.level == "error"] == []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert [str(p) for p in real_problems(cfg, device_of(cfg))] == []


def test_real_validator_refusals_name_our_keys():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cfg = _cfg("122b_npu", [f"{ADD}.num_layers_in_first_pipeline_stage=10"])
        (problem,) = real_problems(cfg, device_of(cfg))
        assert "megatron.override_transformer_config.num_layers_in_first_pipeline_stage" in problem.keys
        cfg = _cfg("35b_gpu", ["parallel.tp=1", "parallel.gen_tp=8", f"{ADD}.sequence_parallel=true"])
        (problem,) = real_problems(cfg, device_of(cfg))
        assert "megatron.override_transformer_config.sequence_parallel" in problem.keys


# Our typed nodes (config/schema.py): a wrong type or a null where none is allowed is refused while composing.
SCHEMA_REFUSED = ["parallel.vpp=2.5", "parallel.tp=two", "parallel.pp=null", "parallel.nnodes=null"]


@pytest.mark.parametrize("override", SCHEMA_REFUSED)
def test_a_wrong_type_of_our_nodes_is_refused_while_composing_naming_the_key(override):
    key = override.split("=")[0]
    with pytest.raises(UserError, match=re.escape(key)):
        _cfg("35b_gpu", [override])


@pytest.mark.parametrize("override", SCHEMA_REFUSED)
def test_a_wrong_type_of_our_nodes_exits_2_with_one_message(cli, override):
    run = cli("model=35b", "device=gpu", override, "dry_run=true")
    assert run.code == 2 and "Traceback" not in run.err, run.err
    (message,) = [line for line in run.err.splitlines() if line.startswith("verl-qwen35: error:")]
    assert override.split("=")[0] in message
    assert not [line for line in run.err.splitlines() if line.startswith("ERROR")], "refused before any preflight"


@pytest.mark.parametrize(
    "override",
    [
        "data.train_batch_size=abc",
        "actor_rollout_ref.rollout.n=2.5",
        "parallel.pp=0",
        "actor_rollout_ref.rollout.gpu_memory_utilization=abc",
        "megatron.override_transformer_config.recompute_num_layers=-1",
    ],
)
def test_bad_values_exit_2_without_traceback(cli, override):
    run = cli("model=35b", "device=gpu", override, "dry_run=true")
    assert run.code == 2, run.err
    assert "Traceback" not in run.err and override.split("=")[0] in run.err
    assert len([line for line in run.err.splitlines() if line.startswith("ERROR")]) == 1, run.err


@pytest.mark.parametrize(
    ("override", "key"),
    [
        ("actor_rollout_ref.actor.loss_agg_mode=token-avg", "actor_rollout_ref.actor.loss_agg_mode"),
        ("actor_rollout_ref.rollout.mode=sync", "actor_rollout_ref.rollout"),
        ("+actor_rollout_ref.actor.megatron.not_a_field=1", "not_a_field"),
    ],
)
def test_verl_refusals_name_a_key(override, key):
    from verl_qwen35.validators.real import real_verl_problems

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        (problem,) = real_verl_problems(_cfg("35b_gpu", [override]))
    assert any(key in k for k in problem.keys), str(problem)


def test_version_dependent_rules_follow_megatron_core_and_say_what_was_assumed():
    from verl_qwen35.checks.layout import layout_problems
    from verl_qwen35.checks.sequences import packing_problems
    from verl_qwen35.model.layout import Layout

    cfg = _cfg("35b_gpu", ["parallel.cp=2", "megatron.use_remove_padding=true"])
    arch, lo = cfg.model, Layout.of(cfg)
    assert [p for p in layout_problems(lo, arch, "gpu", mcore=(0, 18)) if p.level == "error"] == []
    assert packing_problems(cfg, (0, 18)) == []
    (cp,) = [p for p in layout_problems(lo, arch, "gpu", mcore=None) if p.level == "error"]
    assert "parallel.cp" in cp.keys[0] and "assumed" in cp.message
    (packed, *_) = packing_problems(cfg, None)
    assert "assumed" in packed.message
    (cp,) = [p for p in layout_problems(lo, arch, "gpu", mcore=(0, 16)) if p.level == "error"]
    assert "assumed" not in cp.message


def test_pipeline_layout_as_a_list_of_stages():
    from verl_qwen35.model.pipeline import Split, split_problems

    good = [["embedding"] + ["decoder"] * 20, ["decoder"] * 20 + ["loss"]]
    assert split_problems(40, 2, None, Split(layout=good)) == []
    assert split_problems(40, 2, None, Split(layout=[good[0], good[1][:-1]]))
