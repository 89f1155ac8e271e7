"""Values verl rewrites at start-up: judged as verl will run them, never refused for what verl itself corrects.

Found by reading verl's start-up path (`verl/trainer/main_ppo.py` main -> `run_ppo` -> TaskRunner ->
trainer set-up, 0.9.1 and 0.8.0) for assignments into the config:
- `trainer.device`: `main` calls `verl.utils.device.auto_set_device` first. verl 0.9.1 sets it to the detected
  accelerator's name on any GPU or NPU host (`device.py` auto_set_device: `config.trainer.device = detected`);
  verl 0.8.0 only on an Ascend host (`config.trainer.device = "npu"`), and leaves any value alone on a GPU host.
  The machine is `hardware.device` (the planned one), so that, not the typed value, is what the rules judge
  (`model.layout.device_of`).
- `reward.reward_model.nnodes` / `n_gpus_per_node`: without `enable_resource_pool`, the TaskRunner copies the
  trainer's (`main_ppo_v0.py` TaskRunner.init_resource_pool_mgr; v1 `trainer_base.py` alike).
- v1 trainer only (`trainer.use_v1`): `_setup` sets the rollout's `checkpoint_engine.backend = "naive"` for the
  colocated replicas and `data.gen_batch_size = 1` where refills must be exact (`trainer_base.py`).
Each is a note saying what verl will run; only a value verl keeps and cannot run is an error. Not noted: what
verl sets on every run whatever the config says (`TaskRunnerV1.run`'s `transfer_queue.enable = True`).
"""

from omegaconf import DictConfig, OmegaConf
from packaging.version import Version

from verl_qwen35.checks.problem import Problem, error
from verl_qwen35.checks.schedule import uses_v1_trainer
from verl_qwen35.checks.verl_target import verl_in_use

DEVICE_NAMES = {"gpu": "cuda", "npu": "npu"}  # verl's device names (`get_platform().device_name`)
# verl 0.9.1 rewrites trainer.device on every accelerator host; 0.8.x only on Ascend.
REWRITES_ON_GPU = Version("0.9.1")


def device_rewrite(cfg: DictConfig) -> tuple[list[str], list[Problem]]:
    """`trainer.device` as verl's `auto_set_device` leaves it on the planned machine (`hardware.device`)."""
    machine = OmegaConf.select(cfg, "hardware.device", default=None)
    typed = OmegaConf.select(cfg, "trainer.device", default=None)
    if machine not in DEVICE_NAMES or typed == DEVICE_NAMES[machine]:
        return [], []
    wanted = DEVICE_NAMES[machine]
    verl = verl_in_use(cfg)
    version = verl.version
    if machine == "npu" or verl.release >= REWRITES_ON_GPU.release:
        return [
            f"trainer.device={typed}: verl {version}'s auto_set_device sets {wanted} on this {machine.upper()} "
            f"machine (hardware.device={machine}; verl/utils/device.py auto_set_device), so the run and these "
            f"checks use {wanted}"
        ], []
    return [], [
        error(
            "trainer.device",
            f"={typed} on a GPU machine (hardware.device=gpu): verl {version}'s auto_set_device changes it only on "
            f"an Ascend host (verl/utils/device.py), so the workers would ask for {typed} devices; set "
            "trainer.device=cuda",
        )
    ]


def _reward_pool_rewrite(cfg: DictConfig) -> list[str]:
    rm = OmegaConf.select(cfg, "reward.reward_model", default=None)
    if rm is None or rm.get("enable_resource_pool", False):
        return []
    pairs = [("nnodes", cfg.trainer.nnodes), ("n_gpus_per_node", cfg.trainer.n_gpus_per_node)]
    return [
        f"reward.reward_model.{name}={rm.get(name)}: without reward.reward_model.enable_resource_pool verl's "
        f"TaskRunner replaces it with the trainer's ({value}; verl/trainer/main_ppo_v0.py init_resource_pool_mgr)"
        for name, value in pairs
        if name in rm and rm.get(name) != value and rm.get("enable", False)
    ]


def _v1_rewrites(cfg: DictConfig) -> list[str]:
    if not uses_v1_trainer(cfg):
        return []
    notes = []
    backend = OmegaConf.select(cfg, "actor_rollout_ref.rollout.checkpoint_engine.backend", default="naive")
    if backend != "naive":
        notes.append(
            f"actor_rollout_ref.rollout.checkpoint_engine.backend={backend}: the v1 trainer's colocated replicas "
            "sync weights with backend naive whatever it says (verl/trainer/ppo/v1/trainer_base.py _setup)"
        )
    mode = OmegaConf.select(cfg, "trainer.v1.trainer_mode", default="sync")
    dapo = bool(OmegaConf.select(cfg, "algorithm.filter_groups.enable", default=False))
    refill = bool(OmegaConf.select(cfg, "trainer.v1.sampler.sync_refill_failed_groups", default=False))
    gen = OmegaConf.select(cfg, "data.gen_batch_size", default=None)
    if (mode != "sync" or dapo or refill) and gen not in (None, 1):
        notes.append(
            f"data.gen_batch_size={gen}: the v1 trainer fetches one prompt at a time where refills must be exact "
            f"(trainer.v1.trainer_mode={mode}, filter_groups or sync_refill_failed_groups) and sets it to 1 "
            "(verl/trainer/ppo/v1/trainer_base.py)"
        )
    return notes


def startup_rewrites(cfg: DictConfig) -> tuple[list[str], list[Problem]]:
    """What verl's start-up will change in this config (notes), and what it will keep and cannot run (errors)."""
    notes, found = device_rewrite(cfg)
    return notes + _reward_pool_rewrite(cfg) + _v1_rewrites(cfg), found
