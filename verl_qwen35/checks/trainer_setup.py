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
- the engine: this package composes verl's Megatron trainer config (`verl/trainer/config/actor/megatron_actor.yaml`
  `strategy: megatron`); `validate_config` (`verl/utils/config.py:104`) and the worker (`verl/workers/
  engine_workers.py:498`) branch on `actor.strategy`, so another value runs the other engine's checks and
  router-replay path over Megatron sections;
- `PPOTrainer._create_replay_buffer` (0.9.1 v1, `trainer_base.py:146-160`): a custom sampler is used only when
  both `custom_sampler.path` and `.name` are set, else the built-in ReplayBuffer runs, which stores
  `sampler_kwargs` and reads none of it (`verl/trainer/ppo/v1/replay_buffer.py:156`);
- `rollout.checkpoint_manager_class`: read only by the legacy trainer (`verl/trainer/ppo/ray_trainer.py:969`,
  `load_class_from_fqn`); the v1 trainer never reads it;
- the dataloader: `batch_size=gen_batch_size or train_batch_size` (`ray_trainer.py:407`; v1 `trainer_base.py:742`):
  a negative one is the DataLoader's ValueError when the trainer starts;
- nsys: `main_ppo.main` (`verl/trainer/main_ppo.py:79-90`) passes `controller_nsight_options` through
  `OmegaConf.to_container` (a null is a ValueError) and the worker groups assert `worker_nsight_options`
  (`trainer_base.py:296`; `ray_trainer.py:839`) when `tool=nsys` with profile steps;
- the critic's model: `validate_config` builds the critic's config (`verl/utils/config.py:189`), whose
  `HFModelConfig` loads config.json and the tokenizer from `critic.model.path` (`verl/workers/config/model.py:86-121`);
  verl's example default there (`verl/trainer/config/model/hf_model.yaml`, `~/models/deepseek-llm-7b-chat`) is no
  model of this run; the same build runs `CriticConfig.__post_init__` and `.validate` (`verl/workers/config/critic.py`
  103-130): without dynamic batch size exactly one of `ppo_micro_batch_size` / `_per_gpu`, a mini-batch the former
  divides, and `data.train_batch_size` >= the critic's mini-batch;
- the reward manager: `resolve_reward_manager_cls` (`verl/trainer/ppo/reward.py:92-108`) takes `source`
  register or importlib and raises ValueError for any other (after `migrate_legacy_reward_impl` copies the legacy
  `reward_model.reward_loop_source` over it, `verl/experimental/reward_loop/reward_loop.py:52`).
The legacy `RayPPOTrainer.__init__`'s hybrid-engine assert is checks/trainer.py's rule.
"""

from omegaconf import DictConfig, OmegaConf

from verl_qwen35.checks.algorithm import needs_critic
from verl_qwen35.checks.problem import Problem, error, warning
from verl_qwen35.checks.schedule import uses_v1_trainer
from verl_qwen35.config.yaml_files import load_yaml
from verl_qwen35.installed import verl_config_dir

KL_CTRL_TYPES = ("fixed", "adaptive")
# verl 0.9.1 TRAINER_REGISTRY; tests/integration/test_trainer_init_agrees.py holds it against the installed verl.
TRAINER_MODES = ("colocate_async", "separate_async", "sync")
CORE_ALGOS = "verl/trainer/ppo/core_algos.py get_kl_controller"
TRAINER_BASE = "verl/trainer/ppo/v1/trainer_base.py"
REWARD_SOURCES = ("register", "importlib")  # verl/trainer/ppo/reward.py:92-108, verl/workers/config/reward.py:53
FQN_KEYS = (
    ("actor_rollout_ref.rollout.agent.agent_loop_manager_class", "AgentLoopManager"),
    ("trainer.checkpoint_callback_class", "CheckpointCallback"),
    ("actor_rollout_ref.rollout.checkpoint_manager_class", "CheckpointEngineManager"),
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
        if key.endswith("checkpoint_manager_class") and uses_v1_trainer(cfg):
            continue  # the v1 trainer never loads it: checkpoint_manager_problems
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


def strategy_problems(cfg: DictConfig) -> list[Problem]:
    found = []
    for key in ("actor_rollout_ref.actor.strategy", "actor_rollout_ref.ref.strategy", "critic.strategy"):
        value = _get(cfg, key, "megatron")
        if value != "megatron" and (key != "critic.strategy" or needs_critic(cfg)):
            found.append(
                error(
                    key,
                    f"={value!r}: this package composes verl's Megatron trainer config (megatron_actor.yaml sets "
                    "strategy: megatron); verl's validate_config (verl/utils/config.py:104) and its worker "
                    "(verl/workers/engine_workers.py:498) would take another engine's branch over Megatron "
                    "sections. Use megatron, or verl's own script for that engine",
                )
            )
    return found


def sampler_problems(cfg: DictConfig) -> list[Problem]:
    if not uses_v1_trainer(cfg):
        return []
    base = "trainer.v1.sampler"
    path, name = _get(cfg, f"{base}.custom_sampler.path"), _get(cfg, f"{base}.custom_sampler.name")
    if bool(path) != bool(name):
        given, missing = ("path", "name") if path else ("name", "path")
        return [
            error(
                (f"{base}.custom_sampler.{given}", f"{base}.custom_sampler.{missing}"),
                f"custom_sampler.{given} is set and .{missing} is not: verl's v1 trainer uses a custom sampler only "
                f"with both ({TRAINER_BASE}:147) and would run its built-in ReplayBuffer instead, silently; set "
                f"{base}.custom_sampler.{missing} too",
            )
        ]
    kwargs = _get(cfg, f"{base}.sampler_kwargs")
    if not path and kwargs:
        return [
            warning(
                f"{base}.sampler_kwargs",
                "is set without a custom sampler: verl's built-in ReplayBuffer stores it and reads none of it "
                "(verl/trainer/ppo/v1/replay_buffer.py:156); it takes effect only with custom_sampler.path and .name",
            )
        ]
    return []


def checkpoint_manager_problems(cfg: DictConfig) -> list[Problem]:
    key = "actor_rollout_ref.rollout.checkpoint_manager_class"
    value = _get(cfg, key)
    if not value or not uses_v1_trainer(cfg):
        return []  # the legacy trainer loads it: class_name_problems judges its form
    return [
        warning(
            key,
            f"={value!r}: only verl's legacy trainer reads it (verl/trainer/ppo/ray_trainer.py:969); the v1 trainer "
            "this run uses (trainer.use_v1=true) never does, so the default manager runs. Set trainer.use_v1=false "
            "for it, or remove it",
        )
    ]


def gen_batch_problems(cfg: DictConfig) -> list[Problem]:
    value = _get(cfg, "data.gen_batch_size")
    if isinstance(value, int) and not isinstance(value, bool) and value < 0:
        return [
            error(
                "data.gen_batch_size",
                f"={value}: verl's dataloader takes it as its batch size (verl/trainer/ppo/ray_trainer.py:407, v1 "
                f"{TRAINER_BASE}:742) and the DataLoader raises ValueError when the trainer starts; give a positive "
                "number, or null for data.train_batch_size",
            )
        ]
    return []


def nsight_problems(cfg: DictConfig) -> list[Problem]:
    if _get(cfg, "global_profiler.tool") != "nsys" or not _get(cfg, "global_profiler.steps"):
        return []
    found = []
    for which, where in (
        ("controller_nsight_options", "verl/trainer/main_ppo.py:87 OmegaConf.to_container"),
        ("worker_nsight_options", f"{TRAINER_BASE}:296 assert"),
    ):
        key = f"global_profiler.global_tool_config.nsys.{which}"
        if not OmegaConf.is_dict(_get(cfg, key)):
            found.append(
                error(
                    key,
                    f"={_get(cfg, key)!r} with global_profiler.tool=nsys and profile steps: verl needs a mapping of "
                    f"nsys options there ({where}) and stops at start-up without one; give nsys options, e.g. "
                    "{trace: 'cuda,nvtx'}",
                )
            )
    return found


def reward_source_problems(cfg: DictConfig) -> list[Problem]:
    legacy = _get(cfg, "reward_model.reward_loop_source")
    key = "reward_model.reward_loop_source" if legacy is not None else "reward.reward_manager.source"
    source = legacy if legacy is not None else _get(cfg, "reward.reward_manager.source", "register")
    if source in REWARD_SOURCES:
        return []
    return [
        error(
            key,
            f"={source!r}: verl's resolve_reward_manager_cls (verl/trainer/ppo/reward.py:92-108) raises ValueError "
            f"for it when the trainer starts; use one of {', '.join(REWARD_SOURCES)}",
        )
    ]


def legacy_reward_loop_problems(cfg: DictConfig) -> list[Problem]:
    """verl 0.9.1's migrate_legacy_reward_impl (verl/experimental/reward_loop/reward_loop.py:52-55) copies
    `reward_model.reward_loop_module_path` / `_class_name` only when `reward_loop_source` is set, and copies the
    class name to `reward.reward_manager.module.name`, which resolve_reward_manager_cls never reads: it loads
    `reward.reward_manager.name` from the module (verl/trainer/ppo/reward.py:96-104)."""
    found = []
    source = _get(cfg, "reward_model.reward_loop_source")
    for leaf in ("reward_loop_module_path", "reward_loop_class_name"):
        key = f"reward_model.{leaf}"
        if _get(cfg, key) is not None and source is None:
            found.append(
                warning(
                    key,
                    f"={_get(cfg, key)!r} is ignored: verl copies it into reward.reward_manager only with "
                    "reward_model.reward_loop_source set (verl/experimental/reward_loop/reward_loop.py:52); set "
                    "reward.reward_manager.source=importlib, .module.path and .name instead",
                )
            )
    name = _get(cfg, "reward_model.reward_loop_class_name") if source is not None else None
    name_key = "reward_model.reward_loop_class_name" if name is not None else "reward.reward_manager.module.name"
    name = name if name is not None else _get(cfg, "reward.reward_manager.module.name")
    default = _get(cfg, "reward.reward_manager.name")
    source = source if source is not None else _get(cfg, "reward.reward_manager.source")
    if source == "importlib" and name is not None and name != default:
        found.append(
            error(
                (name_key, "reward.reward_manager.name"),
                f"={name!r} is never read: verl loads reward.reward_manager.name ({default!r}) from the module "
                "(verl/trainer/ppo/reward.py:104 resolve_reward_manager_cls; the class name is copied to "
                "reward.reward_manager.module.name, which nothing reads), so the trainer stops at start-up or loads "
                f"another class; set reward.reward_manager.name={name}",
            )
        )
    return found


def example_model_path() -> str | None:
    """verl's example default model path (its `model/hf_model.yaml`, which every HFModelConfig node defaults to)."""
    try:
        data = load_yaml(verl_config_dir() / "model" / "hf_model.yaml")
    except (OSError, ValueError):
        return None
    path = data.get("path") if isinstance(data, dict) else None
    return str(path) if path is not None else None


def critic_model_problems(cfg: DictConfig) -> list[Problem]:
    if not needs_critic(cfg):
        return []
    path = _get(cfg, "critic.model.path")
    if path is None or str(path) != example_model_path():
        return []
    return [
        error(
            "critic.model.path",
            f"={path!r} is verl's example default (verl/trainer/config/model/hf_model.yaml), not this run's critic: "
            "verl builds the critic's HFModelConfig from it at start-up (verl/utils/config.py:189, "
            "verl/workers/config/model.py:86-121) and stops there without that directory; set critic.model.path "
            "(a critic from the actor's weights: critic.model.path=${actor_rollout_ref.model.path})",
        )
    ]


def critic_batch_problems(cfg: DictConfig) -> list[Problem]:
    if not needs_critic(cfg) or _get(cfg, "critic.use_dynamic_bsz"):
        return []
    micro, per_gpu = _get(cfg, "critic.ppo_micro_batch_size"), _get(cfg, "critic.ppo_micro_batch_size_per_gpu")
    mini, train = _get(cfg, "critic.ppo_mini_batch_size"), _get(cfg, "data.train_batch_size")
    where = "verl's CriticConfig raises ValueError when validate_config builds it (verl/workers/config/critic.py"
    if micro is None and per_gpu is None:
        return [
            error(
                "critic.ppo_micro_batch_size_per_gpu",
                f"is not set (nor critic.ppo_micro_batch_size): {where}:149) at start-up; set "
                "critic.ppo_micro_batch_size_per_gpu, or critic.use_dynamic_bsz=true",
            )
        ]
    if micro is not None and per_gpu is not None:
        return [
            error(
                ("critic.ppo_micro_batch_size", "critic.ppo_micro_batch_size_per_gpu"),
                f"are both set: {where}:152); remove critic.ppo_micro_batch_size (deprecated)",
            )
        ]
    found = []
    if isinstance(micro, int) and isinstance(mini, int) and micro > 0 and mini % micro:
        found.append(
            error(
                ("critic.ppo_mini_batch_size", "critic.ppo_micro_batch_size"),
                f"={mini} is not divisible by critic.ppo_micro_batch_size={micro}: {where}:111)",
            )
        )
    if isinstance(mini, int) and isinstance(train, int) and train < mini:
        found.append(
            error(
                ("critic.ppo_mini_batch_size", "data.train_batch_size"),
                f"={mini} exceeds data.train_batch_size={train}: {where}:125 validate)",
            )
        )
    return found


def trainer_setup_problems(cfg: DictConfig) -> list[Problem]:
    return (
        critic_model_problems(cfg)
        + critic_batch_problems(cfg)
        + trainer_mode_problems(cfg)
        + kl_controller_type_problems(cfg)
        + filter_groups_problems(cfg)
        + class_name_problems(cfg)
        + strategy_problems(cfg)
        + sampler_problems(cfg)
        + checkpoint_manager_problems(cfg)
        + gen_batch_problems(cfg)
        + nsight_problems(cfg)
        + reward_source_problems(cfg)
        + legacy_reward_loop_problems(cfg)
    )
