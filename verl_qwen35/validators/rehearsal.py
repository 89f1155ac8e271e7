"""A CPU rehearsal of one training step's arithmetic: verl's and megatron-core's own code on tiny tensors.

For `dry_run=full` and the launch (before Ray starts), after the fast rules passed. What runs, as verl's
trainer and Megatron engine call it (verl 0.8.0 and 0.9.1):
- the advantage: `verl/trainer/ppo/ray_trainer.py` `compute_advantage` (which the v1 trainer's
  `compute_advantage_for_multi_trajectories` delegates to) with `algorithm.*` and `rollout.n`, on a fake
  batch of 2 prompts x n samples holding the fields the trainer holds (`checks.algorithm.advantage_inputs`),
  after `get_kl_controller` and `apply_kl_penalty` when `algorithm.use_kl_in_reward`;
- the actor's loss: `verl/workers/utils/losses.py` `ppo_loss` with the actor's own config dataclass (policy
  loss of `policy_loss.loss_mode`, clip ratios, `kl_penalty` of `kl_loss_type`, `loss_agg_mode`);
- the optimizer: `verl/utils/megatron/optimizer.py` `init_megatron_optim_config` (megatron-core's
  `OptimizerConfig`) and `get_megatron_optimizer_param_scheduler` (megatron-core's `OptimizerParamScheduler`)
  with the run's optimizer steps (`checks.schedule.training_steps`), stepped through the whole run;
- logging: the backends of `verl.utils.tracking.Tracking` and whether their package imports here.
Each refusal names the user's key. What depends on this machine (transformer-engine's FusedAdam, a logger's
package) is a warning, not a refusal.
"""

import importlib.util
import inspect
import math
import os
import re
from typing import Any

from omegaconf import DictConfig, OmegaConf, open_dict

from verl_qwen35.checks.algorithm import advantage_inputs, gdpo_keys
from verl_qwen35.checks.problem import Problem, error, warning
from verl_qwen35.checks.schedule import OPTIM, Steps, train_rows, training_steps
from verl_qwen35.checks.tracking import backends
from verl_qwen35.terminal import say
from verl_qwen35.validators.calling import quietly, said
from verl_qwen35.validators.startup import startup_rehearsal
from verl_qwen35.validators.trainer_init import trainer_init_problems

ALGO = "algorithm"
ACTOR = "actor_rollout_ref.actor"
GROUPS, PROMPT, RESPONSE = 2, 2, 4
# The package verl's Tracking imports for a backend (verl/utils/tracking.py Tracking.__init__).
LOGGER_PACKAGES = {
    "wandb": "wandb",
    "tracking": "wandb",
    "mlflow": "mlflow",
    "swanlab": "swanlab",
    "vemlp_wandb": "volcengine_ml_platform",
    "tensorboard": "tensorboard",
    "clearml": "clearml",
    "trackio": "trackio",
    "rl_insight": "rl_insight",
}
# Words of verl's loss messages and the keys they are about.
_LOSS_KEYS = [
    (r"clip_ratio_c", (f"{ACTOR}.clip_ratio_c",)),
    (r"clip_ratio should be larger", (f"{ACTOR}.policy_loss.clip_cov_ratio",)),
    (r"kl_cov_ratio", (f"{ACTOR}.policy_loss.kl_cov_ratio",)),
    (r"dro_beta", (f"{ACTOR}.policy_loss.dro_beta",)),
    (r"rollout_correction", (f"{ACTOR}.policy_loss.loss_mode", f"{ALGO}.rollout_correction.bypass_mode")),
    (r"loss_agg_mode", (f"{ACTOR}.loss_agg_mode",)),
    (r"loss_scale_factor", (f"{ACTOR}.loss_scale_factor",)),
]
# Names in megatron-core's OptimizerParamScheduler asserts and the keys behind them.
_SCHEDULER_KEYS = {
    "min_lr": (f"{OPTIM}.min_lr",),
    "max_lr": (f"{OPTIM}.lr",),
    "init_lr": (f"{OPTIM}.lr_warmup_init",),
    "lr_warmup_steps": (f"{OPTIM}.lr_warmup_steps", f"{OPTIM}.lr_warmup_steps_ratio"),
    "lr_decay_steps": (f"{OPTIM}.lr_decay_steps", "trainer.total_training_steps", "trainer.total_epochs"),
    "wsd_decay_steps": (f"{OPTIM}.lr_wsd_decay_steps",),
    "start_wd": (f"{OPTIM}.weight_decay",),
    "end_wd": (f"{OPTIM}.weight_decay",),
    "wd_incr_steps": ("trainer.total_training_steps",),
    "decay_ratio": (f"{OPTIM}.lr_decay_steps", f"{OPTIM}.lr_warmup_steps"),
}
# Words of megatron-core's OptimizerConfig asserts: (pattern, OptimizerConfig field, verl key when not overridden).
_OPTIMIZER_WORDS = [
    (r"only supported with adam", "optimizer", f"{OPTIM}.optimizer"),
    (
        r"only supported with distributed optimizer",
        "use_distributed_optimizer",
        f"{ACTOR}.megatron.use_distributed_optimizer",
    ),
]
MAX_STEPS = 200_000  # a schedule longer than this is stepped only this far (a fraction of a second)


def fake_batch(cfg: DictConfig) -> tuple[Any, Any]:
    """(DataProto for compute_advantage, the tensors ppo_loss reads): 2 prompts x n samples, 4 tokens each."""
    import numpy as np
    import torch
    from verl import DataProto

    n = cfg.actor_rollout_ref.rollout.n
    size = GROUPS * n
    gen = torch.Generator().manual_seed(0)
    mask = torch.ones(size, RESPONSE, dtype=torch.int64)
    mask[0, -1] = 0  # one shorter response
    scores = torch.zeros(size, RESPONSE)
    scores[torch.arange(size), mask.sum(-1) - 1] = torch.randint(0, 2, (size,), generator=gen).float()
    old = -torch.rand(size, RESPONSE, generator=gen)
    tensors = {"response_mask": mask, "token_level_scores": scores, "old_log_probs": old}
    inputs = advantage_inputs(cfg)
    if "ref_log_prob" in inputs:
        tensors["ref_log_prob"] = old - 0.05 * torch.rand(size, RESPONSE, generator=gen)
    if "values" in inputs:
        tensors["values"] = torch.rand(size, RESPONSE, generator=gen)
    if "reward_baselines" in inputs:
        tensors["reward_baselines"] = torch.rand(size, generator=gen)
    if "sum_pi_squared" in inputs:
        tensors["sum_pi_squared"] = torch.rand(size, RESPONSE, generator=gen)
    extra = {k: np.random.default_rng(0).random(size).astype(np.float32) for k in gdpo_keys(cfg) if k in inputs}
    uid = np.array([f"prompt{i // n}" for i in range(size)], dtype=object)
    data = DataProto.from_dict(tensors=tensors, non_tensors={"uid": uid, **extra})
    prompts = torch.ones(size, PROMPT, dtype=torch.int64)
    responses = torch.ones(size, RESPONSE, dtype=torch.int64)
    if not gdpo_keys(cfg):
        return data, (prompts, responses)
    data.batch["prompts"] = prompts  # GDPO places each component at the last response token
    data.batch["attention_mask"] = torch.cat([torch.ones_like(prompts), mask], dim=1)
    return data, (prompts, responses)


def advantage_problems(cfg: DictConfig, data: Any) -> tuple[list[Problem], Any]:
    """verl's KL-in-reward and compute_advantage, as the trainer calls them."""
    import torch
    from verl.trainer.ppo import core_algos
    from verl.trainer.ppo.ray_trainer import apply_kl_penalty, compute_advantage

    algo = cfg.algorithm
    if algo.get("use_kl_in_reward"):
        try:
            kl_ctrl = core_algos.get_kl_controller(algo.kl_ctrl)
        except Exception as err:  # AssertionError (horizon), NotImplementedError (type)
            key = f"{ALGO}.kl_ctrl.horizon" if "horizon" in str(err) else f"{ALGO}.kl_ctrl.type"
            return [error(key, f"verl's get_kl_controller refused it: {said(err)}")], None
        try:
            data, _ = apply_kl_penalty(data, kl_ctrl=kl_ctrl, kl_penalty=algo.kl_penalty)
        except Exception as err:  # NotImplementedError for a penalty kl_penalty lacks
            return [error(f"{ALGO}.kl_penalty", f"verl's kl_penalty refused it: {said(err)}")], None
    else:
        data.batch["token_level_rewards"] = data.batch["token_level_scores"]
    try:
        data = quietly(
            compute_advantage,
            data,
            adv_estimator=algo.adv_estimator,
            gamma=algo.gamma,
            lam=algo.lam,
            num_repeat=cfg.actor_rollout_ref.rollout.n,
            norm_adv_by_std_in_grpo=algo.get("norm_adv_by_std_in_grpo", True),
            config=algo,
        )
    except Exception as err:  # AssertionError, ValueError, TypeError (an input the trainer does not hold)
        keys = (f"{ALGO}.adv_estimator", "actor_rollout_ref.rollout.n")
        if "gdpo_reward_keys" in str(err):
            keys = (f"{ALGO}.gdpo_reward_keys",)
        elif "sum_pi_squared" in str(err):
            keys = (f"{ALGO}.adv_estimator", f"{ACTOR}.calculate_sum_pi_squared")
        return [error(keys, f"verl's compute_advantage refused it on a fake batch: {said(err)}")], None
    advantages = data.batch["advantages"]
    if not torch.isfinite(advantages).all():
        keys = (f"{ALGO}.adv_estimator", f"{ALGO}.gamma", f"{ALGO}.lam")
        return [error(keys, "verl's compute_advantage gives non-finite advantages on a fake batch")], None
    return [], advantages


def loss_problems(cfg: DictConfig, advantages: Any, data: Any, shapes: tuple[Any, Any]) -> list[Problem]:
    """verl's ppo_loss (policy loss, entropy and KL loss) with the actor's own config dataclass."""
    import torch
    from tensordict import TensorDict
    from verl.utils import tensordict_utils as tu
    from verl.utils.config import omega_conf_to_dataclass
    from verl.workers.utils.losses import ppo_loss

    if OmegaConf.select(cfg, f"{ALGO}.rollout_correction.bypass_mode", default=False):
        say("rehearsal  policy loss not rehearsed: rollout_correction.bypass_mode rewrites it at run time")
        return []
    actor = quietly(omega_conf_to_dataclass, cfg.actor_rollout_ref.actor)
    prompts, responses = shapes
    mask = data.batch["response_mask"]
    size = mask.shape[0]
    attention = torch.cat([torch.ones_like(prompts), mask], dim=1)
    fields = {
        "prompts": prompts,
        "responses": responses,
        "attention_mask": attention,
        "response_mask": mask,
        "old_log_probs": data.batch["old_log_probs"],
        "advantages": advantages,
    }
    if actor.use_kl_loss:
        fields["ref_log_prob"] = data.batch["ref_log_prob"]
    batch = TensorDict(fields, batch_size=[size])
    tu.assign_non_tensor(batch, dp_size=1, batch_num_tokens=int(mask.sum()), global_batch_size=size)
    tokens = int(attention.sum())
    gen = torch.Generator().manual_seed(1)
    output = {"log_probs": -torch.rand(tokens, generator=gen)}
    if actor.entropy_coeff:
        output["entropy"] = torch.rand(tokens, generator=gen)
    try:
        loss, _ = quietly(ppo_loss, actor, output, batch)
    except NotImplementedError as err:
        return [error(f"{ACTOR}.kl_loss_type", f"verl's kl_penalty does not implement it: {said(err)}")]
    except Exception as err:  # AssertionError / ValueError of the policy loss or the aggregation
        message = said(err)
        keys = next(
            (k for pattern, k in _LOSS_KEYS if re.search(pattern, message)), (f"{ACTOR}.policy_loss.loss_mode",)
        )
        return [error(keys, f"verl's ppo_loss refused it on a fake batch: {message}")]
    if not torch.isfinite(loss).all():
        return [error(f"{ACTOR}.policy_loss", "verl's ppo_loss gives a non-finite loss on a fake batch")]
    return []


def algorithm_rehearsal(cfg: DictConfig) -> list[Problem]:
    data, shapes = fake_batch(cfg)
    found, advantages = advantage_problems(cfg, data)
    if found:
        return found
    return loss_problems(cfg, advantages, data, shapes)


def _optimizer_config(cfg: DictConfig, optim: Any) -> Any:
    """megatron-core's OptimizerConfig as verl's Megatron engine builds it (`_build_optimizer`)."""
    import torch
    from verl.utils.megatron.optimizer import init_megatron_optim_config
    from verl.utils.torch_dtypes import PrecisionType

    megatron = cfg.actor_rollout_ref.actor.megatron
    dtype = PrecisionType.to_dtype(megatron.get("dtype") or cfg.megatron.dtype)
    kwargs = {"use_distributed_optimizer": megatron.get("use_distributed_optimizer", True)}
    kwargs["fp16"] = dtype == torch.float16
    if "bf16" in inspect.signature(init_megatron_optim_config).parameters:  # verl 0.9 has it, 0.8 does not
        kwargs["bf16"] = dtype == torch.bfloat16
    return quietly(init_megatron_optim_config, optim, **kwargs)


def _machine_matter(message: str) -> bool:
    """What this CPU install lacks and the cluster has (transformer-engine's FusedAdam, its version)."""
    return bool(re.search(r"TransformerEngine|transformer[-_]engine|TE >=|'NoneType' and 'Version'", message))


def _optimizer_refusal(node: DictConfig, said: str) -> Problem:
    """The overrides named in megatron-core's message, and the verl keys behind its words."""
    override = dict(node.get("override_optimizer_config") or {})
    keys = [f"{OPTIM}.override_optimizer_config.{k}" for k in override if re.search(rf"\b{re.escape(k)}\b", said)]
    for pattern, name, key in _OPTIMIZER_WORDS:
        if re.search(pattern, said):
            keys.append(f"{OPTIM}.override_optimizer_config.{name}" if name in override else key)
    return error(tuple(dict.fromkeys(keys)) or (OPTIM,), f"megatron-core's OptimizerConfig refused it: {said}")


def optimizer_rehearsal(cfg: DictConfig, steps: Steps) -> list[Problem]:
    import torch
    from verl.utils.config import omega_conf_to_dataclass
    from verl.utils.megatron.optimizer import get_megatron_optimizer_param_scheduler

    node = cfg.actor_rollout_ref.actor.optim
    if steps.optimizer is not None:
        node = OmegaConf.create(OmegaConf.to_container(node, resolve=True))
        with open_dict(node):
            node.total_training_steps = steps.optimizer  # what verl's trainer writes before the workers start
    try:
        optim = quietly(omega_conf_to_dataclass, node)
    except Exception as err:  # verl's McoreOptimizerConfig.__post_init__
        return [error(OPTIM, f"verl's optimizer config refused it: {said(err)}")]
    try:
        _optimizer_config(cfg, optim)
    except Exception as err:  # TypeError for an unknown field, AssertionError/ValueError from __post_init__
        message = said(err)
        if not _machine_matter(message):
            return [_optimizer_refusal(node, message)]
        # megatron-core asks transformer-engine's version after its config asserts: the rest is the cluster's
        say("rehearsal  OptimizerConfig: its transformer-engine checks are left to the cluster (not installed here)")
    if steps.optimizer is None and node.get("lr_decay_steps") is None:
        say("rehearsal  LR schedule not built: the training data is not on this machine, so its steps are unknown")
        return []
    holder = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=optim.lr)
    try:
        scheduler = quietly(get_megatron_optimizer_param_scheduler, holder, optim)
        for _ in range(min(steps.optimizer or 0, MAX_STEPS)):
            scheduler.step(1)
            lr = holder.param_groups[0]["lr"]
            if not (math.isfinite(lr) and lr >= 0):
                keys = (f"{OPTIM}.lr_decay_style", f"{OPTIM}.lr_wsd_decay_steps", f"{OPTIM}.lr_decay_steps")
                return [error(keys, f"the LR schedule reaches lr={lr} at step {scheduler.num_steps}")]
    except Exception as err:  # megatron-core asserts
        message = said(err)
        named = [keys for name, keys in _SCHEDULER_KEYS.items() if re.search(rf"\b{name}\b", message)]
        keys = tuple(dict.fromkeys(k for group in named for k in group)) or (OPTIM,)
        return [error(keys, f"megatron-core's OptimizerParamScheduler refused it ({steps.optimizer} steps): {message}")]
    return []


def logger_notes(cfg: DictConfig) -> list[Problem]:
    """Each backend of `trainer.logger` whose package does not import here (a property of the machine)."""
    from verl.utils.tracking import Tracking

    loggers = backends(cfg)
    found = []
    for name in loggers:
        if name not in Tracking.supported_backend and name != "tracking":
            continue  # the name rules answer this
        package = LOGGER_PACKAGES.get(name)
        if package and importlib.util.find_spec(package) is None:
            found.append(
                warning(
                    "trainer.logger",
                    f"{name}: its package {package} does not import here; verl's Tracking imports it on the "
                    "driver at start-up [machine check]",
                )
            )
    if "mlflow" in loggers and importlib.util.find_spec("mlflow") is not None:
        found += mlflow_store_notes(cfg)
    return found


def mlflow_store_notes(cfg: DictConfig) -> list[Problem]:
    """An sqlite tracking store (verl's default, and logger=mlflow's) needs SQLAlchemy and alembic.

    mlflow-skinny alone refuses it ("unsupported URI 'sqlite:...' for model registry data storage"), and
    verl 0.8.0 / 0.9.1 `verl/utils/tracking.py` Tracking.__init__ catches that, warns and goes on without
    MLflow: the run's metrics would not be kept."""
    uri = os.environ.get("MLFLOW_TRACKING_URI") or cfg.env.set.get("MLFLOW_TRACKING_URI") or "sqlite:////tmp/mlruns.db"
    missing = [name for name in ("sqlalchemy", "alembic") if importlib.util.find_spec(name) is None]
    if not str(uri).startswith("sqlite:") or not missing:
        return []
    return [
        warning(
            "env.set.MLFLOW_TRACKING_URI",
            f"mlflow with the sqlite store {uri} needs {' and '.join(missing)}, which do not import here; verl would "
            "go on without MLflow and keep none of its metrics: pip install sqlalchemy alembic (or the full "
            "mlflow package), or point MLFLOW_TRACKING_URI at an MLflow server [machine check]",
        )
    ]


def rehearsal_problems(cfg: DictConfig) -> list[Problem]:
    """The rehearsal of a resolved config that passed the fast preflight."""
    steps = training_steps(cfg, train_rows(cfg))
    found = trainer_init_problems(cfg)  # verl builds the trainer before its datasets
    if not found:
        found, _ = startup_rehearsal(cfg)
    if found:
        return found + logger_notes(cfg)  # the steps below start from what failed here
    found = algorithm_rehearsal(cfg) + optimizer_rehearsal(cfg, steps)
    notes = logger_notes(cfg)
    if not found:
        horizon = "" if steps.optimizer is None else f", {steps.optimizer} optimizer steps"
        say(
            f"rehearsal  {cfg.algorithm.adv_estimator} advantage (n={cfg.actor_rollout_ref.rollout.n}), "
            f"{OmegaConf.select(cfg, f'{ACTOR}.policy_loss.loss_mode', default='vanilla')} loss, "
            f"optimizer and LR schedule{horizon} (verl's and megatron-core's own): OK"
        )
    return found + notes
