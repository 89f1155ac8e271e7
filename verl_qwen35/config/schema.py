"""The package's own config nodes, typed, and the verl keys they feed: the one place the layout keys are named."""

from dataclasses import dataclass, field

from hydra.core.config_store import ConfigStore
from omegaconf import MISSING

from verl_qwen35.config.backends import backends

ACTOR = "actor_rollout_ref.actor.megatron"
REF = "actor_rollout_ref.ref.megatron"
# Parallel sizes are part of the patch; each interpolates one `parallel.*` key.
PARALLEL_KEYS = {
    "tensor_model_parallel_size": "parallel.tp",
    "pipeline_model_parallel_size": "parallel.pp",
    "virtual_pipeline_model_parallel_size": "parallel.vpp",
    "context_parallel_size": "parallel.cp",
    "expert_model_parallel_size": "parallel.ep",
    "expert_tensor_parallel_size": "parallel.etp",
}

# verl keys outside actor/ref megatron that a `parallel.*` key feeds.
LAYOUT_FEEDS: dict[str, str] = {
    "trainer.nnodes": "parallel.nnodes",
    "trainer.n_gpus_per_node": "parallel.devices_per_node",
    "actor_rollout_ref.rollout.tensor_model_parallel_size": "parallel.gen_tp",
    "actor_rollout_ref.rollout.data_parallel_size": "parallel.gen_dp",
    "actor_rollout_ref.rollout.expert_parallel_size": "parallel.gen_ep",
}


# The typed nodes below are registered in Hydra's ConfigStore and merged under the YAML presets
# (conf/config.yaml's defaults list names each `verl_qwen35_schema/<node>`; each submit option its own), so a
# wrong type or a missing key of these nodes is refused by OmegaConf while composing, naming the key.
# A preset holds only what differs from these defaults.


@dataclass
class Parallel:
    """The one place a layout is set; verl's actor, ref, rollout and trainer keys interpolate it."""

    tp: int = 1
    pp: int = 1
    cp: int = 1
    ep: int = 1
    etp: int | None = 1
    vpp: int | None = None
    gen_tp: int = 1
    gen_dp: int = 1
    gen_ep: int = 1
    nnodes: int = MISSING
    # A whole node of the chosen hardware unless a layout or the command line sets fewer
    # (checks/hardware.py refuses more than the node holds).
    devices_per_node: int = "${hardware.devices_per_node}"  # type: ignore[assignment]  # an interpolation


@dataclass
class Model:
    """Architecture facts (the HF config.json's text_config) and the recipe numbers used in several keys."""

    name: str = MISSING
    hf_id: str = MISSING
    num_layers: int = MISSING
    hidden_size: int = MISSING
    num_attention_heads: int = MISSING
    num_key_value_heads: int = MISSING
    head_dim: int = MISSING
    num_experts: int = MISSING
    num_experts_per_tok: int = MISSING
    moe_intermediate_size: int = MISSING
    shared_expert_intermediate_size: int = MISSING
    linear_num_key_heads: int = MISSING
    linear_num_value_heads: int = MISSING
    linear_key_head_dim: int = MISSING
    linear_value_head_dim: int = MISSING
    full_attention_interval: int = MISSING
    linear_conv_kernel_dim: int = 4  # HF Qwen3.5 / Qwen3-Next default
    tie_word_embeddings: bool = False
    vocab_size: int = MISSING
    max_position_embeddings: int = MISSING
    mtp_num_layers: int | None = None
    # The vision tower (HF `vision_config`, defaults of transformers' Qwen3_5MoeVisionConfig, the 35B checkpoint's;
    # its output width is hidden_size): the memory estimate counts it in training and in vLLM. Set them from your
    # checkpoint's vision_config where it differs; vision_depth: 0 for a text-only model.
    vision_depth: int = 27
    vision_hidden_size: int = 1152
    vision_intermediate_size: int = 4304
    vision_patch_size: int = 16
    vision_temporal_patch_size: int = 2
    vision_spatial_merge_size: int = 2
    vision_num_position_embeddings: int = 2304
    train_batch_size: int = MISSING
    ppo_mini_batch_size: int = MISSING
    max_prompt_length: int = MISSING
    max_response_length: int = MISSING
    max_token_len_per_gpu: int = MISSING


@dataclass
class Hardware:
    """One machine type (conf/hardware/NAME.yaml): per device unless named per node, each number's source in `sources`.

    The memory estimate reads device_memory_gib (what torch sees, not the datasheet size), reserved_gib and
    host_memory_gib; the planner's step-time model the rates; parallel.devices_per_node defaults to devices_per_node.
    """

    name: str = MISSING
    device: str = MISSING  # gpu or npu: the `device` group it runs with
    device_memory_gib: float = MISSING
    reserved_gib: float = 4.0
    host_memory_gib: float = MISSING  # per node
    devices_per_node: int = MISSING
    bf16_tflops: float = MISSING  # dense bf16 peak
    hbm_gbps: float = MISSING
    intra_node_gbps: float = MISSING  # one direction, NVLink / HCCS
    inter_node_gbps: float = MISSING  # one direction, InfiniBand / RoCE
    fast_domain_devices: int = MISSING  # devices one NVLink / HCCS domain connects
    # GB/s a node writes checkpoint shards at, every node at once: an assumption (a shared file system over a
    # 25-100 Gb/s NIC, ~1-4 GB/s a node), not measured; set it to your storage's rate.
    checkpoint_write_gbps: float = 2.0
    sources: dict[str, str] = field(default_factory=dict)


@dataclass
class Env:
    """Variables for the driver and every Ray worker (a value in the shell wins); `unset` is cleared."""

    set: dict[str, str] = field(default_factory=dict)
    unset: list[str] = field(default_factory=list)


@dataclass
class LaunchChecks:
    """At launch only: the software stack against the device's matrix, and the cluster's devices."""

    stack: bool = True
    devices: bool = True


@dataclass
class Plan:
    """What the plan of a dry run draws besides its lines (`verl-qwen35 plan --picture` is the same for the planner)."""

    # A .png or .svg file (chosen by the suffix): the layout's nodes x devices, each device's TP/CP/PP/EP/DP ranks,
    # the groups that cross a node boundary (review/picture.py). null: no picture.
    picture: str | None = None
    # The expected mean response length (verl's response_length/mean) the step time is predicted at; null: every
    # response at data.max_response_length (the prediction says which it assumes).
    response_length: int | None = None
    # A calibration file written by `verl-qwen35 calibrate RUN_DIR...` (your runs' timings); null: the shipped
    # published rows (verl_qwen35/data/calibration/measurements.yaml).
    calibration: str | None = None
    # The megatron-core release ("0.18") whose rules a dry run follows, to plan for a machine whose megatron-core
    # is not this one's (verl main pins 0.18: Gated DeltaNet with cp > 1 and packed sequences). null: the installed
    # one, else 0.16 (the Ascend image's). A launch follows the installed one and refuses a different value here.
    megatron_core: str | None = None
    # The verl release ("0.8.0") whose version rules a dry run follows, to judge for a cluster whose verl is not
    # this one's (the Ascend 9.0.0 image runs 0.8.0). The config is still composed from the installed verl's
    # files. null: the installed one. A launch refuses one other than the installed.
    verl: str | None = None
    # A stack of the version matrices (`ascend_9.0.0_a3`, `gpu_verl_main`, ...): plan.verl and plan.megatron_core
    # default to its pins. null: none.
    stack: str | None = None


@dataclass
class Trial:
    """A short real run of the same layout and recipe (conf/trial/, docs/planning.md "Trial runs"): how many steps,
    and the resume drill's part and checkpoint folder. `trial=none` (the default) changes nothing in verl's keys."""

    # The option in force: none, short, drill_save, drill_resume (or a `verl-qwen35 plan --trial` job's own file).
    name: str = "none"
    # Steps a trial runs (trainer.total_training_steps); the first is warm-up: calibrate and report take the median
    # of each phase over the steps after each start's first.
    steps: int = 4
    # The resume drill: none; save (a checkpoint at the last step); resume (from that checkpoint, one more step).
    drill: str = "none"
    # Where the drill saves and resumes (trainer.default_local_dir of both jobs): an absolute path on storage both
    # jobs see (`plan --trial DIR` writes DIR/resume_drill); a relative one is taken from each job's working
    # directory, as verl does (ray_trainer.py _load_checkpoint: os.getcwd()).
    checkpoint_dir: str = "checkpoints/${trainer.project_name}/trial_resume_drill"


SCHEMA_GROUP = "verl_qwen35_schema"
# Our top-level nodes; the rest of the config is verl's own. `dry_run` is false, true or "full": a bool
# or a string, which OmegaConf cannot type as one (run/job.py's mode_of checks it).
NODES = {
    "parallel": Parallel,
    "model": Model,
    "hardware": Hardware,
    "env": Env,
    "launch_checks": LaunchChecks,
    "plan": Plan,
    "trial": Trial,
}


def register_schema() -> None:
    """Store the typed nodes in Hydra's ConfigStore (its public registry; storing twice replaces)."""
    store = ConfigStore.instance()
    for name, node in NODES.items():
        store.store(group=SCHEMA_GROUP, name=name, node=node, package=name)
    for name, backend in backends().items():  # each conf/submit/<name>.yaml extends its own
        store.store(group=SCHEMA_GROUP, name=f"submit_{name}", node=backend.options)
