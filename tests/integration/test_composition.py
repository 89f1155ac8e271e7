"""Every preset composes on the installed verl, passes verl's validate_config and matches the reference."""

import pytest
from omegaconf import OmegaConf

from tests.conftest import REFERENCE_LAYOUTS
from verl_qwen35.config import compose
from verl_qwen35.config.schema import PARALLEL_KEYS
from verl_qwen35.review.flat import flatten

# On every verl CI tests (-m each_verl): every preset composed on the installed verl's schema, its validate_config.
pytestmark = pytest.mark.each_verl


def test_preset_resolves_to_the_reference_layout(combo):
    model, device = combo
    cfg = compose([f"model={model}", f"device={device}"])
    actor = cfg.actor_rollout_ref.actor.megatron
    got = (
        cfg.trainer.nnodes,
        cfg.trainer.n_gpus_per_node,
        actor.tensor_model_parallel_size,
        actor.pipeline_model_parallel_size,
        actor.context_parallel_size,
        actor.expert_model_parallel_size,
        actor.expert_tensor_parallel_size,
        cfg.actor_rollout_ref.rollout.tensor_model_parallel_size,
        cfg.actor_rollout_ref.rollout.data_parallel_size,
        cfg.actor_rollout_ref.rollout.expert_parallel_size,
    )
    assert got == REFERENCE_LAYOUTS[combo]


def test_preset_passes_verls_own_validate_config(combo):
    from verl.trainer.ppo.utils import need_critic, need_reference_policy
    from verl.utils.config import validate_config

    model, device = combo
    cfg = compose([f"model={model}", f"device={device}"])
    OmegaConf.resolve(cfg)
    validate_config(cfg, use_reference_policy=need_reference_policy(cfg), use_critic=need_critic(cfg))


def test_resolved_config_has_no_interpolation_left(combo):
    model, device = combo
    flat = flatten(compose([f"model={model}", f"device={device}"]))
    assert not [k for k, v in flat.items() if isinstance(v, str) and "${" in v]


@pytest.mark.parametrize("key", ["tp", "pp", "ep", "etp", "cp", "vpp"])
def test_one_parallel_key_moves_actor_and_ref_together(key):
    value = 2 if key == "vpp" else 4
    cfg = compose(["model=122b", "device=npu", f"parallel.{key}={value}"])
    (name,) = [name for name, source in PARALLEL_KEYS.items() if source == f"parallel.{key}"]
    assert cfg.actor_rollout_ref.actor.megatron[name] == value
    assert cfg.actor_rollout_ref.ref.megatron[name] == value


def test_layout_numbers_are_written_once():
    """Trainer and rollout sizes follow the parallel node too."""
    cfg = compose(
        [
            "model=35b",
            "device=gpu",
            "parallel.nnodes=2",
            "parallel.devices_per_node=4",
            "parallel.gen_tp=4",
            "parallel.gen_dp=2",
            "parallel.gen_ep=8",
        ]
    )
    assert (cfg.trainer.nnodes, cfg.trainer.n_gpus_per_node) == (2, 4)
    rollout = cfg.actor_rollout_ref.rollout
    assert (rollout.tensor_model_parallel_size, rollout.data_parallel_size, rollout.expert_parallel_size) == (4, 2, 8)


def test_npu_and_gpu_differ_only_where_the_device_files_say():
    gpu = flatten(compose(["model=35b", "device=gpu"]))
    npu = flatten(compose(["model=35b", "device=npu"]))
    changed = {k for k in gpu.keys() | npu.keys() if gpu.get(k) != npu.get(k)}
    top = {k.split(".")[0] for k in changed}
    # critic: verl's critic.use_dynamic_bsz follows the actor's, which the 35B NPU tuning sets (verl PR #7372).
    assert top <= {"actor_rollout_ref", "critic", "env", "hardware", "megatron", "parallel", "trainer"}
    assert "megatron.vanilla_mbridge" in changed and "env.set.HCCL_BUFFSIZE" in changed


def test_flattened_verl_base_equals_live_composition_of_installed_verl():
    """conf/config.yaml starts from verl's committed _generated_ppo_megatron_trainer.yaml; it must
    still equal what verl's own ppo_trainer composes to with model_engine=megatron."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir

    from verl_qwen35.installed import verl_config_dir

    with initialize_config_dir(str(verl_config_dir()), version_base=None):
        live = hydra_compose("ppo_trainer", overrides=["model_engine=megatron"])
    flattened = OmegaConf.load(verl_config_dir() / "_generated_ppo_megatron_trainer.yaml")
    flattened.model_engine = "megatron"
    assert OmegaConf.to_container(live) == OmegaConf.to_container(flattened)
