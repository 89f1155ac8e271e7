"""Preflight refuses the misconfigurations users actually hit, naming the key to change."""

import pytest

from tests.runs import preflight
from verl_qwen35.config import compose


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
    # the 35B NPU preset packs (verl PR #7372); dynamic batches without packing are still refused
    (
        "35b_npu",
        ["megatron.use_remove_padding=false", "actor_rollout_ref.actor.use_dynamic_bsz=true"],
        "actor.use_dynamic_bsz",
    ),
    # verl's actor worker asserts its training and log-prob passes share the dynamic-batch switch
    ("35b_npu", ["actor_rollout_ref.rollout.log_prob_use_dynamic_bsz=false"], "rollout.log_prob_use_dynamic_bsz"),
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
    model, device = preset.rsplit("_", 1)
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


def test_npu_only_keys_are_accepted_on_npu_and_cp_warns_only_without_mindspeeds_algorithm():
    """CP on NPU runs through MindSpeed's context_parallel_algo (stock megatron-core 0.16 has none for Gated
    DeltaNet): without it a warning names the key, with it (verl's Ascend 122B 32k script) nothing is said."""
    algo = "+megatron.override_transformer_config.context_parallel_algo=megatron_cp_algo"
    for extra, warned in (([algo], False), ([], True)):
        found = preflight(compose(["model=35b", "device=npu", "parallel.cp=2", *extra]), machine_missing="warning")
        assert not [p for p in found if p.level == "error"]
        cp = [p for p in found if p.level == "warning" and any("parallel.cp" in k for k in p.keys)]
        assert bool(cp) == warned and all("context_parallel_algo" in p.message for p in cp)


# --- preflight's wiring: each check's own findings reach the verdict, each exactly once ---------------------
OTC = "megatron.override_transformer_config"


def _cfg(preset: str, overrides: list[str]):
    model, device = preset.rsplit("_", 1)
    return compose([f"model={model}", f"device={device}", *overrides])


def _family(name: str):
    """The check a family of problems comes from, called as preflight calls it."""
    from verl_qwen35 import checks
    from verl_qwen35.config.secrets import ADVICE, config_findings
    from verl_qwen35.model.layout import Layout

    def layout_of(cfg):
        return Layout.of(cfg)

    return {
        "secrets": lambda cfg: [checks.error(k, f"{why}. Instead, {ADVICE}.") for k, why in config_findings(cfg)],
        "sequence_parallel": lambda cfg: checks.sequence_parallel_problems(cfg, layout_of(cfg)),
        "rollout": lambda cfg: checks.rollout_problems(layout_of(cfg), cfg.model, cfg.actor_rollout_ref.rollout.name),
        "rollout_settings": checks.rollout_setting_problems,
        "weights": checks.weights_problems,
        "verl_settings": checks.verl_setting_problems,
        "batches": lambda cfg: checks.batch_problems(cfg, layout_of(cfg), checks.uses_reference(cfg)),
        "lengths": checks.length_problems,
        "memory": checks.memory_problems,
        "patch_values": checks.patch_value_problems,
        "override_keys": lambda cfg: checks.override_key_problems(
            cfg, checks.device_of(cfg), checks.transformer_config_fields()
        ),
        "ddp": checks.override_ddp_problems,
        "data": lambda cfg: checks.data_problems(cfg, "warning"),
        "model_path": lambda cfg: checks.model_path_problems(cfg, "warning"),
        "submit": checks.submit_problems,
    }[name]


@pytest.mark.parametrize(
    ("family", "preset", "overrides"),
    [
        ("sequence_parallel", "35b_gpu", ["parallel.tp=1", "parallel.gen_tp=1", "+megatron.sequence_parallel=true"]),
        ("rollout", "122b_npu", ["parallel.gen_tp=8", "actor_rollout_ref.rollout.data_parallel_size=3"]),
        ("rollout_settings", "35b_gpu", ["actor_rollout_ref.rollout.n=1"]),
        ("weights", "35b_gpu", ["actor_rollout_ref.model.path=Qwen/Qwen3.5-122B-A10B"]),
        ("verl_settings", "35b_gpu", ["actor_rollout_ref.rollout.mode=sync"]),
        ("batches", "122b_npu", ["actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=5"]),
        ("lengths", "35b_gpu", ["actor_rollout_ref.rollout.max_model_len=1000"]),
        ("memory", "35b_gpu", ["hardware.device_memory_gib=20"]),
        ("patch_values", "35b_gpu", ["megatron.use_mbridge=false"]),
        ("override_keys", "35b_gpu", [f"+{OTC}.not_a_field=1"]),
        ("ddp", "35b_gpu", ["+megatron.override_ddp_config={bucket_sise: 40000000}"]),
        ("data", "35b_gpu", ["data.train_files=/nonexistent/train.parquet"]),
        ("model_path", "35b_gpu", ["actor_rollout_ref.model.path=/nonexistent/Qwen3.5-35B-A3B"]),
        ("submit", "35b_gpu", ["submit=ray_job", "submit.address=ftp://head:1"]),
    ],
)
def test_each_checks_findings_reach_the_preflight_verdict_exactly_once(family, preset, overrides):
    cfg = _cfg(preset, overrides)
    _check_reaches_the_verdict_once(family, cfg)


def test_a_secret_already_in_the_config_reaches_the_verdict_once():
    """A secret in a config file (not typed as an override, which is refused before composing)."""
    from omegaconf import open_dict

    cfg = _cfg("35b_gpu", [])
    with open_dict(cfg):
        cfg.trainer.note = "WANDB_API_KEY=0123456789abcdef0123456789abcdef"
    _check_reaches_the_verdict_once("secrets", cfg)


def _check_reaches_the_verdict_once(family, cfg):
    from verl_qwen35.builder.build import build_run

    own = [str(p) for p in _family(family)(build_run(cfg, mode="dry")[0].config)]  # the Run's, as preflight reads
    assert own, f"the case no longer triggers the {family} check"
    verdict = [str(p) for p in preflight(cfg, machine_missing="warning")]
    for problem in own:
        assert verdict.count(problem) == 1, (problem, verdict)


def test_a_missing_section_is_the_whole_verdict():
    """Nothing else can read inside a section that is not there: the structure problems alone."""
    from omegaconf import open_dict

    from verl_qwen35.checks.sections import structure_problems

    cfg = _cfg("35b_gpu", [])
    with open_dict(cfg):
        cfg.actor_rollout_ref.ref = None
    assert structure_problems(cfg)
    assert preflight(cfg, machine_missing="warning") == structure_problems(cfg)


def test_the_engines_sequence_parallel_reaches_the_transformer_rules():
    """megatron.sequence_parallel (tp > 1) with distribute_saved_activations: refused by TransformerConfig. Through
    Megatron-Bridge (vanilla_mbridge=false) verl passes the engine's flag on; mbridge sets sequence_parallel from
    TP alone (mbridge/core/llm_bridge.py), so with it the flag changes nothing."""
    key = f"{OTC}.distribute_saved_activations"
    refusal = "=true cannot be used with sequence_parallel"

    def said(*overrides: str) -> list[str]:
        cfg = _cfg("35b_gpu", [*overrides, f"+{key}=true"])
        return [p.message for p in preflight(cfg, machine_missing="warning") if key in p.keys]

    bridge = "megatron.vanilla_mbridge=false"
    on = said(bridge, "+megatron.sequence_parallel=true")
    assert len(on) == 1 and on[0].startswith(refusal) and "transformer_impl.py" in on[0]
    assert said(bridge, "+megatron.sequence_parallel=false") == []
    mbridge = said("+megatron.sequence_parallel=false")
    assert len(mbridge) == 1 and mbridge[0].startswith(refusal) and "mbridge" in mbridge[0]


def test_a_bad_pipeline_split_is_reported_once():
    """layout_problems judges the split; the transformer rules are told not to say it again."""
    cfg = _cfg("35b_npu", [f"+{OTC}.num_layers_in_first_pipeline_stage=40"])  # pp=2: nothing left
    first = f"{OTC}.num_layers_in_first_pipeline_stage"
    found = [p for p in preflight(cfg, machine_missing="warning") if first in p.keys]
    assert [p.message for p in found] == [
        "40 layers with first=40 last=None leave 0 layers for 1 middle stage(s) (pp=2); "
        "the first/last counts must leave layers exactly when middle stages remain"
    ]


def test_mtp_counts_as_off_when_the_config_has_no_mtp_section():
    """verl's default: model.mtp.enable false; a config without the node builds no MTP layers."""
    from omegaconf import open_dict

    cfg = _cfg("35b_gpu", [])
    with open_dict(cfg):
        del cfg.actor_rollout_ref.model["mtp"]
        cfg.model.mtp_num_layers = 0  # MTP on would be refused for a model without MTP layers
    assert not [p for p in preflight(cfg, machine_missing="warning") if "mtp" in " ".join(p.keys)]
