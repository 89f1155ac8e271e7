"""Fast and full agree on the rollout families: the fast rules (checks/rollout.py, checks/vllm.py, verl_settings)
refuse a setting exactly when the real code does (validators: verl's RolloutConfig and RolloutReplica; vLLM's
SamplingParams, serve parser and scheduler/cache configs where vLLM is importable).

Not compared, because the code that enforces them only runs with devices or a live server, and so only the fast
rules (tests/unit/test_vllm_rules.py, test_rules.py) judge them: vLLMHttpServer.launch_server's data-parallel
assert, generate's max_tokens cap by rollout.max_model_len, `_validate_configs`' max_position_embeddings bound,
and megatron-core's GatedDeltaNet.forward refusing packed sequences.
"""

import importlib.util
import warnings

import pytest
from omegaconf import OmegaConf

from tests.runs import preflight
from verl_qwen35.checks import device_of
from verl_qwen35.config import compose
from verl_qwen35.validators.real import real_problems

# On every verl CI tests (-m each_verl): the installed verl's RolloutConfig and RolloutReplica.
pytestmark = pytest.mark.each_verl

R = "actor_rollout_ref.rollout"
E = f"{R}.engine_kwargs.vllm"


def _cfg(preset: str, changes: dict):
    """The preset composed with the changes as command-line overrides (so every key that follows one agrees)."""
    model, device = preset.rsplit("_", 1)
    shown = {True: "true", False: "false"}
    cfg = compose([f"model={model}", f"device={device}", *(f"++{k}={shown.get(v, v)}" for k, v in changes.items())])
    OmegaConf.resolve(cfg)
    return cfg


def _verdicts(cfg) -> tuple[list[str], list[str]]:
    fast = [str(p) for p in preflight(cfg, machine_missing="warning") if p.level == "error"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        full = [str(p) for p in real_problems(cfg, device_of(cfg)) if p.level == "error"]
    return fast, full


LAYOUT = {"parallel.nnodes": 3, "parallel.devices_per_node": 8, "parallel.ep": 8}
# (preset, changes, the key the fast path names, or None for a setting both accept): verl's own code runs here.
VERL_CASES = [
    ("35b_gpu", {f"{R}.moe_tensor_parallel_size": 2}, f"{R}.moe_tensor_parallel_size"),
    ("35b_gpu", {f"{R}.mode": "sync"}, f"{R}.mode"),
    ("35b_gpu", {**LAYOUT, "parallel.gen_tp": 4, "parallel.gen_dp": 3}, "parallel.gen_tp"),  # replica of 12 on 8s
    ("35b_gpu", {"parallel.gen_ep": 4}, "parallel.gen_ep"),
    ("35b_gpu", {f"{R}.pipeline_model_parallel_size": 2}, f"{R}.pipeline_model_parallel_size"),
    ("35b_gpu", {}, None),
    ("35b_npu", {}, None),
    ("397b_gpu", {}, None),
    ("35b_gpu", {"parallel.gen_tp": 4, "parallel.gen_dp": 2}, None),
    ("35b_npu", {"megatron.use_remove_padding": True, "actor_rollout_ref.actor.use_dynamic_bsz": True}, None),
]


@pytest.mark.parametrize(("preset", "changes", "key"), VERL_CASES, ids=[f"{c[0]}-{c[1]}" for c in VERL_CASES])
def test_fast_and_full_agree_where_verls_rollout_code_runs(preset, changes, key):
    fast, full = _verdicts(_cfg(preset, changes))
    assert bool(fast) == bool(full), f"fast: {fast}\nfull: {full}"
    if key:
        assert any(key in line for line in fast), fast


VLLM_CASES = [
    ("35b_gpu", {f"{R}.temperature": -0.5}, f"{R}.temperature"),
    ("35b_gpu", {f"{R}.top_p": 0.0}, f"{R}.top_p"),
    ("35b_gpu", {f"{R}.top_k": -3}, f"{R}.top_k"),
    ("35b_gpu", {f"{E}.max_num_sequences": 64}, f"{E}.max_num_sequences"),
    ("35b_gpu", {f"{E}.gpu_memory_utilization": 1.5}, f"{E}.gpu_memory_utilization"),
    ("35b_gpu", {f"{R}.max_num_batched_tokens": 512, f"{R}.max_num_seqs": 1024}, f"{R}.max_num_batched_tokens"),
    ("35b_gpu", {f"{R}.temperature": 0}, None),
    ("35b_gpu", {f"{E}.max_num_seq": 64}, None),
    ("397b_gpu", {}, None),
    ("122b_npu", {}, None),
]


@pytest.mark.parametrize(("preset", "changes", "key"), VLLM_CASES, ids=[f"{c[0]}-{c[1]}" for c in VLLM_CASES])
def test_fast_and_full_agree_on_vllms_own_checks_where_vllm_is_importable(preset, changes, key):
    if importlib.util.find_spec("vllm") is None:
        pytest.skip("vLLM is not installed here: the fast rules alone judge sampling and engine arguments")
    fast, full = _verdicts(_cfg(preset, changes))
    assert bool(fast) == bool(full), f"fast: {fast}\nfull: {full}"
    if key:
        assert any(key in line for line in fast), fast
