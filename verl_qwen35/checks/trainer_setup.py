"""What verl's trainer construction refuses, stated from the config alone (no torch or verl import).

Fast twins of validators/trainer_init.py, which runs the real functions in `dry_run=full`;
tests/integration/test_trainer_init_agrees.py keeps the two agreeing. Upstream (verl 0.9.1; 0.8.0 where said):
- `verl/trainer/ppo/core_algos.py` `get_kl_controller` (0.8.0 and 0.9.1 alike): `kl_ctrl.type` "fixed" or
  "adaptive", anything else `raise NotImplementedError`; called by the trainer's `__init__` (v1
  `PPOTrainer.__init__`, legacy `RayPPOTrainer.__init__`) when `algorithm.use_kl_in_reward`;
- `verl/trainer/ppo/v1/trainer_base.py` `get_trainer_cls(trainer.v1.trainer_mode)` (0.9.1, `trainer.use_v1`):
  the `@register_trainer` names of trainer_sync.py, trainer_colocate_async.py, trainer_separate_async.py;
- `PPOTrainer._resolve_filter_groups_metric` (0.9.1 v1, without a custom sampler): DAPO's group filter asserts a
  reward computed at sampling time (no colocated reward model; its missing metric is checks/trainer.py's rule);
- `verl/utils/import_utils.py` `load_class_from_fqn`: a class name without a dot is a ValueError
  (`trainer.checkpoint_callback_class`, 0.9.1; `rollout.agent.agent_loop_manager_class`);
The legacy `RayPPOTrainer.__init__`'s hybrid-engine assert is checks/trainer.py's rule.
"""

from omegaconf import DictConfig, OmegaConf

from verl_qwen35.checks.problem import Problem, error
from verl_qwen35.checks.schedule import uses_v1_trainer

KL_CTRL_TYPES = ("fixed", "adaptive")
# verl 0.9.1 TRAINER_REGISTRY; tests/integration/test_trainer_init_agrees.py holds it against the installed verl.
TRAINER_MODES = ("colocate_async", "separate_async", "sync")
CORE_ALGOS = "verl/trainer/ppo/core_algos.py get_kl_controller"
TRAINER_BASE = "verl/trainer/ppo/v1/trainer_base.py"
FQN_KEYS = (
    ("actor_rollout_ref.rollout.agent.agent_loop_manager_class", "AgentLoopManager"),
    ("trainer.checkpoint_callback_class", "CheckpointCallback"),
)


def _get(cfg: DictConfig, key: str, default: object = None) -> object:
    return OmegaConf.select(cfg, key, default=default)


def kl_controller_type_problems(cfg: DictConfig) -> list[Problem]:
    kind = _get(cfg, "algorithm.kl_ctrl.type")
    if not _get(cfg, "algorithm.use_kl_in_reward") or kind in KL_CTRL_TYPES:
        return []
    return [
        error(
            "algorithm.kl_ctrl.type",
            f"={kind!r} with use_kl_in_reward=true: verl's trainer builds the KL controller when it starts and "
            f"{CORE_ALGOS} raises NotImplementedError for it; use one of {', '.join(KL_CTRL_TYPES)}",
        )
    ]


def trainer_mode_problems(cfg: DictConfig) -> list[Problem]:
    mode = _get(cfg, "trainer.v1.trainer_mode")
    if not uses_v1_trainer(cfg) or mode in TRAINER_MODES:
        return []
    return [
        error(
            "trainer.v1.trainer_mode",
            f"={mode!r}: verl's task runner asks {TRAINER_BASE} get_trainer_cls for it and raises ValueError "
            f"(Unknown trainer); registered: {', '.join(TRAINER_MODES)}",
        )
    ]


def filter_groups_problems(cfg: DictConfig) -> list[Problem]:
    """The missing metric is checks/trainer.py's rule; this is the assert after it (no custom sampler)."""
    if not uses_v1_trainer(cfg) or not _get(cfg, "algorithm.filter_groups.enable"):
        return []
    custom = _get(cfg, "trainer.v1.sampler.custom_sampler.path") and _get(cfg, "trainer.v1.sampler.custom_sampler.name")
    if custom or not _get(cfg, "algorithm.filter_groups.metric"):
        return []
    if _get(cfg, "reward.reward_model.enable") and not _get(cfg, "reward.reward_model.enable_resource_pool"):
        return [
            error(
                ("algorithm.filter_groups.enable", "reward.reward_model.enable_resource_pool"),
                "=true with a colocated reward model: verl's v1 trainer asserts the reward is computed at sampling "
                f"time ({TRAINER_BASE} _resolve_filter_groups_metric); set reward.reward_model.enable_resource_pool"
                "=true or use a rule-based reward",
            )
        ]
    return []


def class_name_problems(cfg: DictConfig) -> list[Problem]:
    found = []
    for key, what in FQN_KEYS:
        value = _get(cfg, key)
        if value and "." not in str(value):
            found.append(
                error(
                    key,
                    f"={value!r}: verl's load_class_from_fqn (verl/utils/import_utils.py) raises ValueError for a "
                    f"{what} without its module; write module.path.ClassName",
                )
            )
    return found


def trainer_setup_problems(cfg: DictConfig) -> list[Problem]:
    return (
        trainer_mode_problems(cfg)
        + kl_controller_type_problems(cfg)
        + filter_groups_problems(cfg)
        + class_name_problems(cfg)
    )
