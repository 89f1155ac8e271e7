"""The estimate where a user needs it: runs that overflow are refused, long runs that fit pass (issue 20)."""

import json

import pytest

LOG_PROB = "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu"


def _estimate(cli, *overrides: str) -> tuple[int, dict, str]:
    run = cli("estimate", *overrides, "--json")
    return run.code, (json.loads(run.out) if run.out.strip() else {}), run.err


def test_a_log_prob_micro_batch_of_8_on_the_122b_npu_preset_is_refused(cli):
    """The old-policy pass keeps fp32 logits, their clone and entropy's copy: 8 x 7336 tokens do not fit a die."""
    code, e, err = _estimate(cli, "model=122b", "device=npu", f"{LOG_PROB}=8")
    assert code == 2 and not e["fits"]
    assert e["train_gib"] > 61.27 and e["log_prob_gib"] == e["train_gib"] > e["update_gib"]
    assert "old-policy log-prob pass is the peak" in err and LOG_PROB in err
    code, e, _ = _estimate(cli, "model=122b", "device=npu")  # the shipped micro-batch of 4
    assert code == 0 and e["fits"]


def test_35b_on_gpu_with_36k_token_responses_passes(cli):
    code, e, err = _estimate(cli, "model=35b", "device=gpu", "data.max_response_length=36864")
    assert code == 0 and e["fits"], err
    run = cli("model=35b", "device=gpu", "data.max_response_length=36864", "dry_run=true")
    assert run.code == 0, run.said


def test_hccl_buffers_follow_hccl_buffsize_on_npu_only(cli):
    _, base, _ = _estimate(cli, "model=35b", "device=npu")
    _, large, _ = _estimate(cli, "model=35b", "device=npu", "env.set.HCCL_BUFFSIZE='600'")
    # 8 communicators x 2 x HCCL_BUFFSIZE MB (CANN's HCCL_BUFFSIZE: a send and a receive buffer each).
    assert base["train_breakdown"]["hccl_buffers"] == pytest.approx(8 * 2 * 300 / 1024, abs=0.01)
    assert large["train_gib"] - base["train_gib"] == pytest.approx(8 * 2 * 300 / 1024, abs=0.02)
    assert large["rollout_breakdown"]["hccl_buffers"] == pytest.approx(8 * 2 * 600 / 1024, abs=0.01)
    _, gpu, _ = _estimate(cli, "model=35b", "device=gpu")
    assert gpu["train_breakdown"]["hccl_buffers"] == 0


def test_vllm_start_up_needs_room_for_one_whole_max_model_len_sequence(cli):
    """The rollout's own sequences fit, but vLLM's check_enough_kv_cache_memory refuses the engine."""
    tight = ("model=35b", "device=gpu", "actor_rollout_ref.rollout.gpu_memory_utilization=0.125")
    code, e, _ = _estimate(cli, *tight)
    assert code == 0 and e["startup_fits"]
    code, e, err = _estimate(cli, *tight, "actor_rollout_ref.rollout.max_model_len=262144")
    assert code == 2 and e["sequences_fit"] >= 1 and not e["startup_fits"] and not e["fits"]
    assert "vLLM would refuse to start" in err and "max_model_len=262144" in err


def test_the_gdn_state_is_padded_to_vllms_attention_page(cli):
    """vLLM's HybridAttentionMambaModelConfig for 35B at rollout TP 8: one KV head of 256, bf16, is 1 KiB a token
    and layer; a GDN state is 6 KiB of conv + 256 KiB of fp32 recurrent state, so the attention block is
    16 x ceil(262 KiB / 16 KiB) = 272 tokens and each GDN layer's state takes a 272 KiB page."""
    _, e, _ = _estimate(cli, "model=35b", "device=gpu")
    r = e["rollout_breakdown"]
    assert r["attention_block_tokens"] == 272
    assert r["gdn_state_per_sequence_mib"] == pytest.approx(30 * (6144 + 262144) / 2**20, abs=0.01)
    assert r["gdn_state_padded_per_sequence_mib"] == pytest.approx(30 * 272 * 1024 / 2**20, abs=0.01)


def test_hardware_a2_runs_35b_on_8_npus_a_node(cli):
    code, e, err = _estimate(cli, "hardware=a2")
    assert code == 0 and e["fits"], err
    assert e["device_memory_gib"] == pytest.approx(60.96)
    run = cli("hardware=a2", "dry_run=true")
    assert run.code == 0, run.said
    assert "device=npu" in run.err and "parallel=35b_a2" in run.err


def test_an_unknown_hardware_lists_the_known_ones(cli):
    run = cli("hardware=h900", "dry_run=true")
    assert run.code == 2
    assert "hardware=h900 is not a hardware of verl_qwen35; choose one of: a2, a3, b200, h100, h20, h200" in run.err


def test_a_layout_larger_than_the_node_and_a_device_mismatch_are_refused(cli):
    run = cli("model=35b", "device=gpu", "parallel.devices_per_node=16", "dry_run=true")
    assert run.code == 2 and "parallel.devices_per_node=16 is more than" in run.said
    run = cli("model=35b", "device=gpu", "hardware=a3", "dry_run=true")
    assert run.code == 2 and "hardware=a3 is an NPU machine" in run.said and "pass device=npu" in run.said
