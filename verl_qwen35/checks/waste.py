"""Settings verl accepts without an error while the run resumes the wrong thing, stops early, trains on cut or
unweighted data, or keeps nothing: each rule read where verl reads the key (verl 0.9.1 lines; 0.8.0 alike
unless noted, checked in its tree).

- resume: `_load_checkpoint` (`verl/trainer/ppo/ray_trainer.py` 1052-1080, the v0 trainer and all of 0.8.0;
  `verl/trainer/ppo/v1/trainer_base.py` 850-873, 0.9.1's default) reads `trainer.resume_from_path` only when
  `resume_mode == "resume_path"`; `auto` loads `find_latest_ckpt_path(default_local_dir)`
  (`verl/utils/checkpoint/checkpoint_manager.py` 222-252: the tracker file's step) or trains from scratch,
  `disable` loads nothing. The step comes from the folder name (`int(path.split("global_step_")[-1])`);
  `fit` then runs while `global_steps <= total_training_steps` (v1 `trainer_base.py` 467) or stops after the
  first step with `is_last_step` (v0 `ray_trainer.py` 1507, 1808);
- run length: both `fit` loops also stop after `trainer.total_epochs` passes over the data (v0
  `for epoch in range(current_epoch, total_epochs)`, `ray_trainer.py` 1465, 0.8.0 1422; v1 `while current_epoch
  < total_epochs and ...`, `trainer_base.py` 467), while the optimizer's schedule spans
  `total_training_steps` (`ray_trainer.py` 435-447, `trainer_base.py` 767-784); the step that saves and
  validates "at the last step" (`is_last_step = global_steps >= total_training_steps`) is then never reached;
- saving: `save_freq > 0 and (is_last_step or global_steps % save_freq == 0)` (`ray_trainer.py` 1704, v1
  `trainer_base.py` 481): `save_freq <= 0` saves nothing at all, not even the last step;
- load contents: `MegatronCheckpointManager.load_checkpoint` loads weights only when "model" or "hf_model" is
  in `load_contents` (`verl/utils/checkpoint/megatron_checkpoint_manager.py` 257-266, 909-944);
- lengths: the agent loop caps every response at `rollout.response_length`
  (`verl/experimental/agent_loop/single_turn_agent_loop.py` 96) and left-truncates every prompt longer than
  `rollout.prompt_length` (`agent_loop.py` 437-445; 0.8.0 `agent_loop.py` 341-356); both default to
  `data.max_*_length` (`verl/trainer/config/rollout/rollout.yaml` 34-39), which nothing else reads but
  RLHFDataset's overlong-prompt filter (`verl/utils/dataset/rl_dataset.py` 199-271) and this package's rules;
  `data.truncation` is stored (`rl_dataset.py` 118) and never read by the RL path;
- rollout correction: IS weights and rejection sampling run only when `"rollout_log_probs" in batch`
  (`ray_trainer.py` 1650-1653, 0.8.0 1610; v1 `trainer_base.py` 1767-1769), which the agent loop fills only
  with `rollout.calculate_log_probs` (`agent_loop.py` 595; verl 0.9.1's rollout.yaml defaults it to True (237),
  0.8.0's to False (225), so on 0.8.0 a correction asked for alone is skipped); bypass mode raises without them
  (`verl/trainer/ppo/rollout_corr_helper.py` 1131-1135);
- single-sample groups: the group-baseline estimators of `verl/trainer/ppo/core_algos.py` give a lone
  response mean 0 (std 1): its raw reward (grpo 315, rloo 622, opo 678, gpg 817, the optimal-token baselines
  950 and 1085), or 0 for `rloo_vectorized` (`* (c > 1)`, 864); reinforce_plus_plus_baseline and gdpo then
  whiten over the batch (582, 466), a batch baseline;
- KL: `policy_loss += kl_loss * kl_loss_coef` (`verl/workers/utils/losses.py` 140) and the KL controllers'
  `value` (`core_algos.py` 153-190: an adaptive one multiplies its value, so 0 stays 0) while the reference
  model still runs every step (`need_reference_policy`, `verl/trainer/ppo/utils.py` 75);
- validation: `AgentLoopManager` sends `val_kwargs.temperature/top_p/top_k` (`agent_loop.py` 604-607), never
  `val_kwargs.do_sample`; `ValidationGenerationsLogger.log` (`verl/utils/tracking.py` 668-684) writes tables
  only to wandb, swanlab, mlflow, trackio, clearml, tensorboard and vemlp_wandb.
"""

from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from verl_qwen35.checks.algorithm import needs_critic
from verl_qwen35.checks.problem import Problem, error, warning
from verl_qwen35.checks.schedule import Steps
from verl_qwen35.disk import read_bytes
from verl_qwen35.errors import UserError

T = "trainer"
ROLLOUT = "actor_rollout_ref.rollout"
ACTOR = "actor_rollout_ref.actor"
CORRECTION = "algorithm.rollout_correction"
TRACKER = "latest_checkpointed_iteration.txt"  # checkpoint_manager.py get_checkpoint_tracker_filename
WEIGHTS = ("model", "hf_model")
# core_algos.py: a one-response group gets mean 0 (std 1), i.e. its raw reward: no baseline at all.
RAW_REWARD_ALONE = ("rloo", "opo", "gpg", "grpo_vectorized", "optimal_token_baseline", "tir_optimal_token_baseline")
ZERO_ALONE = ("rloo_vectorized",)  # `* (c > 1)`: every lone response's advantage is 0
BATCH_WHITENED_ALONE = ("reinforce_plus_plus_baseline", "gdpo")  # masked_whiten over the batch is what is left
# verl/utils/tracking.py ValidationGenerationsLogger.log (0.8.0 405-419, 0.9.1 668-684).
GENERATION_LOGGERS = ("wandb", "swanlab", "mlflow", "trackio", "clearml", "tensorboard", "vemlp_wandb")


def _get(cfg: DictConfig, key: str, default: object = None) -> object:
    return OmegaConf.select(cfg, key, default=default)


def _whole(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def path_step(path: str) -> int | None:
    """The step verl reads from a checkpoint folder's name (`int(path.split("global_step_")[-1])`), or None."""
    tail = path.split("global_step_")[-1] if "global_step_" in path else ""
    return int(tail) if tail.isdigit() else None


def tracked_step(root: object) -> int | None:
    """The step `find_latest_ckpt_path` resumes under `default_local_dir` (its tracker file), if any."""
    if not root:
        return None
    tracker = Path(str(root)).expanduser() / TRACKER
    try:
        step = int(read_bytes(tracker, 64).decode("utf-8", "replace"))
    except (OSError, UserError, ValueError):
        return None  # absent or unreadable: checks/trainer.py says which
    return step if (tracker.parent / f"global_step_{step}").is_dir() else None


def _same_folder(a: str, b: Path) -> bool:
    return Path(a).expanduser().resolve(strict=False) == b.expanduser().resolve(strict=False)


def resume_ignored_problems(cfg: DictConfig) -> list[Problem]:
    """A resume path that the resume mode does not read: the run starts from scratch or from another step."""
    path, mode = _get(cfg, f"{T}.resume_from_path"), _get(cfg, f"{T}.resume_mode", "auto")
    if path is None or path == "" or mode not in ("auto", "disable"):
        return []
    root = _get(cfg, f"{T}.default_local_dir")
    step = tracked_step(root) if mode == "auto" else None
    if step is not None and _same_folder(str(path), Path(str(root)) / f"global_step_{step}"):
        return []  # auto resumes this very folder
    does = (
        "loads nothing (resume_mode=disable)"
        if mode == "disable"
        else (
            f"resumes the newest checkpoint under {T}.default_local_dir={root} "
            f"({'step ' + str(step) if step is not None else 'none there: it trains from scratch'})"
        )
    )
    return [
        error(
            (f"{T}.resume_from_path", f"{T}.resume_mode"),
            f"={path!r} is ignored with resume_mode={mode}: verl reads resume_from_path only when "
            f"resume_mode=resume_path (_load_checkpoint: ray_trainer.py 1067-1077, v1 trainer_base.py 856-868); "
            f"this run {does}. Set {T}.resume_mode=resume_path to resume that checkpoint, or drop "
            f"{T}.resume_from_path",
        )
    ]


def resume_past_end_problems(cfg: DictConfig, steps: Steps) -> list[Problem]:
    """A resumed step at or beyond the run's last: verl loads the checkpoint, then has nothing to train."""
    mode, total = _get(cfg, f"{T}.resume_mode", "auto"), steps.total
    if total is None or total <= 0:
        return []  # unknown here, or refused by checks/schedule.py
    if mode == "resume_path":
        path = _get(cfg, f"{T}.resume_from_path")
        step, key = (path_step(path) if isinstance(path, str) else None), f"{T}.resume_from_path"
    elif mode == "auto":
        step, key = tracked_step(_get(cfg, f"{T}.default_local_dir")), f"{T}.default_local_dir"
    else:
        return []
    if step is None or step < total:
        return []
    length = f"{T}.total_training_steps" if _get(cfg, f"{T}.total_training_steps") is not None else f"{T}.total_epochs"
    return [
        error(
            (key, length),
            f"resumes step {step} of a run of {total} training steps: verl loads it and then trains nothing "
            "(v1 fit runs while global_steps <= total_training_steps, trainer_base.py 467; v0 stops after one "
            f"step, ray_trainer.py 1507/1808); raise {length} above {step} to train on, or resume an earlier step",
        )
    ]


def run_length_problems(cfg: DictConfig, steps: Steps) -> list[Problem]:
    """total_training_steps beyond total_epochs x steps per epoch: the run ends early at the last epoch."""
    asked, epochs = _get(cfg, f"{T}.total_training_steps"), _get(cfg, f"{T}.total_epochs")
    per_epoch = steps.per_epoch
    if not (_whole(asked) and _whole(epochs) and per_epoch) or epochs <= 0 or asked <= epochs * per_epoch:
        return []
    reached = epochs * per_epoch
    needed = -(-asked // per_epoch)
    return [
        error(
            (f"{T}.total_training_steps", f"{T}.total_epochs"),
            f"={asked} steps, but {epochs} epoch(s) of {per_epoch} steps end the run after {reached}: verl's fit "
            "loop stops after total_epochs (ray_trainer.py 1465, v1 trainer_base.py 467) while the learning-rate "
            f"schedule spans {asked} steps, and the last step, which saves and validates, is never reached; "
            f"set {T}.total_epochs={needed}, or {T}.total_training_steps={reached}",
        )
    ]


def saving_problems(cfg: DictConfig) -> list[Problem]:
    freq = _get(cfg, f"{T}.save_freq", -1)
    if not _whole(freq) or freq > 0:
        return []
    if _get(cfg, f"{T}.val_only") and _get(cfg, f"{T}.val_before_train", True):
        return []  # a validation-only run trains nothing to save
    if _get(cfg, "trial.name", "none") != "none":
        return []  # a trial (conf/trial/) saves nothing on purpose; its resume drill (drill_save) saves the last step
    return [
        warning(
            f"{T}.save_freq",
            f"={freq}: verl saves only when save_freq > 0 (ray_trainer.py 1704, v1 trainer_base.py 481), so this "
            "run keeps no checkpoint, not even of its last step: the trained weights are gone when it ends and a "
            f"crash cannot resume; set {T}.save_freq to a positive step count (it also saves the last step)",
        )
    ]


def keep_count_problems(cfg: DictConfig) -> list[Problem]:
    """A keep count of 0 or less keeps every checkpoint: verl prunes only when `max_ckpt_to_keep > 0`
    (verl/utils/checkpoint/checkpoint_manager.py:174, :188; 0.8.0 :152, :167); a Megatron checkpoint of these models
    with its optimizer state is hundreds of GB, so the disk, not the run, decides when it stops."""
    freq = _get(cfg, f"{T}.save_freq", -1)
    if not _whole(freq) or freq <= 0 or _get(cfg, f"{T}.remove_previous_ckpt_in_save", False):
        return []  # nothing saved (saving_problems), or verl keeps one
    sides = ["actor"] + (["critic"] if needs_critic(cfg) else [])
    found = []
    for side in sides:
        key = f"{T}.max_{side}_ckpt_to_keep"
        value = _get(cfg, key)
        if _whole(value) and value <= 0:
            found.append(
                warning(
                    key,
                    f"={value}: verl prunes old checkpoints only when the count is above 0 "
                    "(verl/utils/checkpoint/checkpoint_manager.py:174, :188), so this run keeps every checkpoint it "
                    f"saves (one each {freq} steps); give the number to keep, or null to keep all on purpose",
                )
            )
    return found


def profile_steps_problems(cfg: DictConfig, steps: Steps) -> list[Problem]:
    """verl profiles a step when `global_steps in global_profiler.steps` (v1 trainer_base.py:459, legacy
    ray_trainer.py alike); steps count from 1 to the last step, so an entry outside that is never profiled."""
    chosen = _get(cfg, "global_profiler.steps")
    if _get(cfg, "global_profiler.tool") is None or not OmegaConf.is_list(chosen):
        return []
    last = steps.total if steps is not None else None
    never = [s for s in chosen if not _whole(s) or s < 1 or (last is not None and s > last)]
    if chosen and not never:
        return []
    said = f"{list(never)!r} are never a step number (1 to {last or 'the last step'})" if never else "is empty"
    return [
        warning(
            "global_profiler.steps",
            f"={list(chosen)!r}: verl profiles a step only when its number is in this list (verl/trainer/ppo/v1/"
            f"trainer_base.py:459), and {said}, so those profiles are never taken; list step numbers from 1",
        )
    ]


def no_update_problems(cfg: DictConfig) -> list[Problem]:
    """A step that never updates: verl's `train_mini_batch` iterates `make_iterator(.., epochs=ppo_epochs)`
    (verl/workers/engine_workers.py:273; verl/utils/tensordict_utils.py:608 `for _ in range(epochs)`), so 0 or less
    runs no mini-batch, raises nothing, and the rollouts and log-prob passes of every step are thrown away; with
    `optim.lr=0` megatron-core's OptimizerParamScheduler holds every learning rate at 0 (max_lr=lr)."""
    found = []
    for side in [ACTOR] + (["critic"] if needs_critic(cfg) else []):
        epochs = _get(cfg, f"{side}.ppo_epochs", 1)
        if _whole(epochs) and epochs <= 0:
            found.append(
                error(
                    f"{side}.ppo_epochs",
                    f"={epochs}: verl's train_mini_batch runs `range(ppo_epochs)` passes over the step's mini-batches "
                    "(verl/workers/engine_workers.py:273, tensordict_utils.py:608), so this run never updates and "
                    "every step's rollouts are thrown away, without an error; give 1 or more",
                )
            )
    lr = _get(cfg, f"{ACTOR}.optim.lr")
    if isinstance(lr, int | float) and not isinstance(lr, bool) and lr == 0:
        found.append(
            warning(
                f"{ACTOR}.optim.lr",
                "=0: megatron-core's OptimizerParamScheduler takes it as max_lr, so every step's update moves no "
                "weight: the run measures speed and learns nothing; give the learning rate (e.g. 1e-6)",
            )
        )
    return found


# verl/utils/profiler/profile.py DistProfiler.__init__ (0.9.1 :156-178; 0.8.0 :120-136): these tools get a profiler,
# any other name the no-op one.
PROFILER_TOOLS = ("nsys", "npu", "torch", "torch_memory", "precision_debugger")


def profiler_tool_problems(cfg: DictConfig) -> list[Problem]:
    tool = _get(cfg, "global_profiler.tool")
    if tool is None or tool in PROFILER_TOOLS:
        return []
    return [
        warning(
            "global_profiler.tool",
            f"={tool!r}: verl's DistProfiler builds a profiler only for {', '.join(PROFILER_TOOLS)} and falls back "
            "to a no-op one for any other name (verl/utils/profiler/profile.py:156-178), so nothing is profiled; "
            "use one of those, or null",
        )
    ]


def load_contents_problems(cfg: DictConfig) -> list[Problem]:
    """A resume that loads the optimizer and step but not the saved weights trains on from the base model."""
    if _get(cfg, f"{T}.resume_mode", "auto") == "disable":
        return []
    found = []
    for side in [ACTOR] + (["critic"] if needs_critic(cfg) else []):
        key = f"{side}.checkpoint.load_contents"
        value = _get(cfg, key)
        if value is None:
            continue
        given = list(value) if OmegaConf.is_list(value) or isinstance(value, list) else [value]
        saved = _get(cfg, f"{side}.checkpoint.save_contents")
        saved = ["model"] if saved is None else saved  # verl's default: model, optimizer, extra
        saved = list(saved) if OmegaConf.is_list(saved) or isinstance(saved, list) else [saved]
        if not any(v in WEIGHTS for v in saved):
            continue  # checkpoints without weights: checks/startup.py warns on save_contents
        if given and not any(v in WEIGHTS for v in given):
            found.append(
                error(
                    key,
                    f"={given} loads no weights (neither 'model' nor 'hf_model'; megatron_checkpoint_manager.py "
                    "257-266): a resume sets the step, the optimizer and the schedule from the checkpoint but trains "
                    f"on from the base model; add 'model' to {key} (or set {T}.resume_mode=disable)",
                )
            )
    return found


def length_problems(cfg: DictConfig) -> list[Problem]:
    """The rollout's own prompt/response lengths against data.max_*: verl runs the rollout's, our rules read data's."""
    found = []
    for rollout_name, data_name, what in (
        ("prompt_length", "max_prompt_length", "left-truncates every longer prompt (agent_loop.py 437-445)"),
        ("response_length", "max_response_length", "cuts every response there (single_turn_agent_loop.py 96)"),
    ):
        ours, data = _get(cfg, f"{ROLLOUT}.{rollout_name}"), _get(cfg, f"data.{data_name}")
        if _whole(ours) and _whole(data) and ours != data:
            found.append(
                error(
                    (f"{ROLLOUT}.{rollout_name}", f"data.{data_name}"),
                    f"={ours} differs from data.{data_name}={data}: verl's agent loop {what} at "
                    f"rollout.{rollout_name}, "
                    f"while the data filter, the token budgets and the memory plan use data.{data_name}; set "
                    f"data.{data_name}={ours} and leave {ROLLOUT}.{rollout_name} to follow it (verl's default)",
                )
            )
    truncation = _get(cfg, "data.truncation", "error")
    if not _get(cfg, "data.filter_overlong_prompts", False) and truncation != "left":
        found.append(
            warning(
                ("data.truncation", "data.filter_overlong_prompts"),
                f"={truncation!r} is not read by verl's RL data path (rl_dataset.py 118 stores it only): with "
                "filter_overlong_prompts=false a prompt longer than rollout.prompt_length is left-truncated by the "
                "agent loop (agent_loop.py 437-445), its beginning silently lost; set data.filter_overlong_prompts="
                "true to drop such prompts instead",
            )
        )
    return found


def correction_problems(cfg: DictConfig) -> list[Problem]:
    if _get(cfg, f"{ROLLOUT}.calculate_log_probs", False) or _get(cfg, CORRECTION) is None:
        return []
    if _get(cfg, f"{CORRECTION}.bypass_mode", False):
        return [
            error(
                (f"{CORRECTION}.bypass_mode", f"{ROLLOUT}.calculate_log_probs"),
                "=true uses the rollout's log-probs as the old policy's, but calculate_log_probs=false leaves them "
                "out of the batch: verl raises at the first step (rollout_corr_helper.py 1131-1135); set "
                f"{ROLLOUT}.calculate_log_probs=true",
            )
        ]
    asked = [k for k in ("rollout_is", "rollout_rs") if _get(cfg, f"{CORRECTION}.{k}") is not None]
    if not asked:
        return []
    return [
        error(
            (f"{CORRECTION}.{asked[0]}", f"{ROLLOUT}.calculate_log_probs"),
            f"={_get(cfg, f'{CORRECTION}.{asked[0]}')!r} is silently skipped: verl computes the rollout correction "
            "only when the batch holds rollout_log_probs (ray_trainer.py 1650-1653, v1 trainer_base.py 1767-1769), "
            f"which the rollout returns only with calculate_log_probs=true; set {ROLLOUT}.calculate_log_probs=true",
        )
    ]


def single_sample_problems(cfg: DictConfig) -> list[Problem]:
    """n=1 with an estimator whose baseline is the prompt's group (grpo and grpo_passk: rollout.py, algorithm.py)."""
    n, name = _get(cfg, f"{ROLLOUT}.n", 1), cfg.algorithm.get("adv_estimator")
    if not _whole(n) or n != 1:
        return []
    keys = (f"{ROLLOUT}.n", "algorithm.adv_estimator")
    fix = "use n >= 2 (the presets use 5 and 6)"
    if name in ZERO_ALONE:
        said = "gives a lone response advantage 0 (core_algos.py 864: `* (c > 1)`), so the actor learns nothing"
        return [error(keys, f"=1: {name} {said}; {fix}")]
    if name in RAW_REWARD_ALONE:
        said = "takes a lone response's group baseline as 0, so each advantage is its raw reward (no baseline)"
        return [error(keys, f"=1: {name} {said} (core_algos.py); {fix}, or a batch-baseline estimator")]
    if name in BATCH_WHITENED_ALONE:
        said = "has no group to compare a lone response with; only its whitening over the batch remains"
        return [warning(keys, f"=1: {name} {said} (core_algos.py); {fix} for its group baseline")]
    return []


def kl_problems(cfg: DictConfig) -> list[Problem]:
    found = []
    actor_coef = _get(cfg, f"{ACTOR}.kl_loss_coef")
    if _get(cfg, f"{ACTOR}.use_kl_loss") and _number(actor_coef) and actor_coef == 0:
        found.append(
            warning(
                (f"{ACTOR}.use_kl_loss", f"{ACTOR}.kl_loss_coef"),
                "=true with kl_loss_coef=0: the KL term is multiplied by 0 (losses.py 140) while the reference model "
                f"still runs its log-prob pass every step; set {ACTOR}.use_kl_loss=false, or a positive kl_loss_coef",
            )
        )
    reward_coef = _get(cfg, "algorithm.kl_ctrl.kl_coef")
    if _get(cfg, "algorithm.use_kl_in_reward") and _number(reward_coef) and reward_coef == 0:
        found.append(
            warning(
                ("algorithm.use_kl_in_reward", "algorithm.kl_ctrl.kl_coef"),
                "=true with kl_ctrl.kl_coef=0: the KL controller's value is 0 and stays 0 (an adaptive one "
                "multiplies it; core_algos.py 153-190) while the reference model runs every step; set "
                "algorithm.use_kl_in_reward=false, or a positive algorithm.kl_ctrl.kl_coef",
            )
        )
    elif _get(cfg, "algorithm.use_kl_in_reward") and _get(cfg, f"{ACTOR}.use_kl_loss"):
        found.append(
            warning(
                ("algorithm.use_kl_in_reward", f"{ACTOR}.use_kl_loss"),
                "both are true: the KL to the reference is penalised twice, in the reward and in the loss (verl "
                "only prints a NOTICE, verl/utils/config.py 184-185); keep one of them",
            )
        )
    return found


def _validates(cfg: DictConfig) -> bool:
    freq = _get(cfg, f"{T}.test_freq", -1)
    return bool(_get(cfg, f"{T}.val_before_train", True)) or (_whole(freq) and freq > 0)


def validation_problems(cfg: DictConfig) -> list[Problem]:
    if not _validates(cfg):
        return []
    found = []
    val = f"{ROLLOUT}.val_kwargs"
    temperature, n, sample = _get(cfg, f"{val}.temperature", 0), _get(cfg, f"{val}.n", 1), _get(cfg, f"{val}.do_sample")
    greedy = _number(temperature) and temperature <= 0
    if greedy and (sample or (_whole(n) and n > 1)):
        asked = f"do_sample=true{f', n={n}' if _whole(n) and n > 1 else ''}" if sample else f"n={n}"
        found.append(
            warning(
                (f"{val}.temperature", f"{val}.do_sample", f"{val}.n"),
                f"={temperature} with {asked}: verl's agent loop sends val_kwargs.temperature and never reads "
                "val_kwargs.do_sample (agent_loop.py 604-607), so validation decodes greedily and its n samples of a "
                f"prompt are identical; set {val}.temperature > 0 (e.g. 0.6) to sample, or n=1",
            )
        )
    elif sample is False and _number(temperature) and temperature > 0:
        found.append(
            warning(
                (f"{val}.do_sample", f"{val}.temperature"),
                f"=false, but verl's agent loop never reads it and samples validation at val_kwargs.temperature="
                f"{temperature} (agent_loop.py 604-607); set {val}.temperature=0 for greedy validation",
            )
        )
    shown = _get(cfg, f"{T}.log_val_generations", 0)
    loggers = _get(cfg, f"{T}.logger") or []
    loggers = [loggers] if isinstance(loggers, str) else list(loggers)
    if _whole(shown) and shown > 0 and not set(loggers) & set(GENERATION_LOGGERS):
        found.append(
            warning(
                (f"{T}.log_val_generations", "logger"),
                f"={shown}, but none of the loggers {loggers} takes generation tables: verl writes them only to "
                f"{', '.join(GENERATION_LOGGERS)} (tracking.py 668-684); add one (logger=[console,tensorboard]) or "
                f"set {T}.log_val_generations=0",
            )
        )
    return found


def waste_problems(cfg: DictConfig, steps: Steps) -> list[Problem]:
    return (
        resume_ignored_problems(cfg)
        + resume_past_end_problems(cfg, steps)
        + run_length_problems(cfg, steps)
        + saving_problems(cfg)
        + keep_count_problems(cfg)
        + no_update_problems(cfg)
        + profile_steps_problems(cfg, steps)
        + profiler_tool_problems(cfg)
        + load_contents_problems(cfg)
        + length_problems(cfg)
        + correction_problems(cfg)
        + single_sample_problems(cfg)
        + kl_problems(cfg)
        + validation_problems(cfg)
    )
