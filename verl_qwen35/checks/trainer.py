"""Resume settings and trainer modes whose asserts fire only after Ray and the workers have started.

Upstream:
- resume: `_load_checkpoint` of `verl/trainer/ppo/ray_trainer.py` (verl 0.8.0; 0.9.1 with
  `trainer.use_v1=false`) and of `verl/trainer/ppo/v1/trainer_base.py` (0.9.1's default): resume_mode is
  auto, disable or resume_path (v1 logs anything else and fails on an unbound folder); resume_path asserts
  `isinstance(resume_from_path, str)` and `"global_step_" in resume_from_path`, then reads the step with
  `int(path.split("global_step_")[-1])` and loads `<path>/actor`; the v0 trainer raises
  NotImplementedError("load from hdfs is not implemented yet") when `default_hdfs_dir` is set; auto reads
  `<default_local_dir>/latest_checkpointed_iteration.txt` with `int(f.read().decode())` and loads
  `global_step_<N>`, or starts from scratch when that directory is missing (`find_latest_ckpt_path`,
  verl/utils/checkpoint/checkpoint_manager.py); the checkpoint's layout against the installed verl:
  checks/checkpoint_layout.py;
- modes: `RayPPOTrainer.__init__` asserts `actor_rollout_ref.hybrid_engine` (v0); verl 0.9.1's
  `PPOTrainerSeparateAsync.__init__` (`v1/trainer_separate_async.py`) asserts train_batch_size ==
  parameter_sync_step * ppo_mini_batch_size, rollout.nnodes > 0, rollout.n_gpus_per_node > 0 and a
  checkpoint engine other than "naive"; `v1/replay_buffer.py` `ReplayBuffer.__init__` asserts
  max_off_policy_threshold (a positive integer or null) and max_off_policy_strategy in drop|wait;
  `PPOTrainer._resolve_filter_groups_metric` raises when filter_groups is enabled without a metric, and
  `_validate_mode_config` wants a positive max_inflight_gen_batches with one.
"""

from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from verl_qwen35.checks.checkpoint_layout import mismatch
from verl_qwen35.checks.problem import Level, Problem, error, warning
from verl_qwen35.checks.schedule import parameter_sync_step, uses_v1_trainer
from verl_qwen35.disk import read_bytes
from verl_qwen35.errors import UserError
from verl_qwen35.installed import installed_verl_schema

TRACKER_MAX_BYTES = 4096  # a step number

RESUME_MODES = ("auto", "disable", "resume_path")
RESUME = "trainer.resume_from_path"
LOCAL_DIR = "trainer.default_local_dir"
TRACKER = "latest_checkpointed_iteration.txt"  # get_checkpoint_tracker_filename (verl 0.8.0 and 0.9.1)
ON_THIS_MACHINE = " [machine check: an error at launch and with dry_run=full]"


def drill_path(cfg: DictConfig) -> str | None:
    """The checkpoint a resume drill's job saves (trial.drill=save) or resumes (resume): trial.checkpoint_dir's
    global_step_<trial.steps> (conf/trial/drill_save.yaml, drill_resume.yaml); None for any other run."""
    trial = cfg.get("trial")
    if not hasattr(trial, "get") or trial.get("drill") not in ("save", "resume"):
        return None
    return f"{trial.get('checkpoint_dir')}/global_step_{trial.get('steps')}"


def drill_checkpoint(cfg: DictConfig, path: str) -> bool:
    """`path` is the checkpoint the resume drill's first job saves (conf/trial/drill_resume.yaml): not there before
    that job has run, which a dry run of the drill's sweep cannot wait for, nor its submission (the job waits for
    the save job on the cluster, or is refused: run/drill.py)."""
    trial = cfg.get("trial")
    return hasattr(trial, "get") and trial.get("drill") == "resume" and path == drill_path(cfg)


def resume_problems(cfg: DictConfig, missing: Level = "error") -> list[Problem]:
    mode = cfg.trainer.get("resume_mode", "auto")
    if mode not in RESUME_MODES:
        return [error("trainer.resume_mode", f"={mode!r} is not one of {list(RESUME_MODES)}")]
    if mode == "disable":
        return []
    found = []
    if not uses_v1_trainer(cfg) and cfg.trainer.get("default_hdfs_dir") is not None:
        found.append(
            error(
                ("trainer.default_hdfs_dir", "trainer.resume_mode"),
                "is set: verl's trainer cannot resume from HDFS (NotImplementedError); set it to null or "
                "trainer.resume_mode=disable",
            )
        )
    if mode == "auto":
        return found + _latest_problems(cfg)
    path = cfg.trainer.get("resume_from_path")
    if not isinstance(path, str) or "global_step_" not in path:
        return found + [
            error(
                (RESUME, "trainer.resume_mode"),
                f"={path!r}: resume_mode=resume_path needs the path of a checkpoint step, .../global_step_<N>",
            )
        ]
    step = path.split("global_step_")[-1]
    if not step.isdigit():
        return found + [
            error(RESUME, f"={path!r}: verl reads the step as int({step!r}); end the path with global_step_<N>")
        ]
    actor = Path(path).expanduser() / "actor"
    # A dry run, or a submission (run/job.py passes missing="warning" for a drill's resume job it submits)
    later = cfg.get("dry_run") in (True, "full") or missing != "error"
    if not actor.is_dir() and drill_checkpoint(cfg, path) and later:
        found.append(
            warning(
                RESUME,
                f"{actor} does not exist yet: the resume drill's first job (trial=drill_save, trial.steps="
                f"{cfg.trial.steps}, trial.checkpoint_dir={cfg.trial.checkpoint_dir}) writes it at its last step; "
                "run that job first (a -m sweep runs its jobs in order; submit=slurm queues this job after it, "
                "--dependency=afterok); at launch it is an error if still missing",
            )
        )
    elif not actor.is_dir():
        where = ON_THIS_MACHINE if missing == "warning" else ""
        found.append(Problem(missing, (RESUME,), f"{actor} does not exist; verl loads the actor from it{where}"))
    elif why := mismatch(actor, installed_verl_schema(), Path(path).expanduser().parent):
        found.append(error((RESUME, "trainer.resume_mode"), f"={path}: {why}"))
    return found


def _latest_problems(cfg: DictConfig) -> list[Problem]:
    """resume_mode=auto: the step the tracker file names, and the layout of its actor, as verl will read them."""
    root = cfg.trainer.get("default_local_dir")
    tracker = Path(str(root)).expanduser() / TRACKER if root else None
    if tracker is None or not tracker.is_file():
        return []  # nothing saved yet: verl starts from scratch
    try:  # in a shared checkpoint directory: a FIFO or a flood there is not waited on nor read whole
        text = read_bytes(tracker, TRACKER_MAX_BYTES).decode("utf-8", "replace")
    except (OSError, UserError):
        return [error("trainer.default_local_dir", f"{tracker} is not a readable plain file; verl reads it to resume")]
    try:
        step = int(text)
    except ValueError:
        return [
            error(
                (LOCAL_DIR, "trainer.resume_mode"),
                f"={root}: {tracker} holds {text.strip()[:40]!r}, not a step number; verl reads it with int() and "
                "fails; write the last saved step into it, or set trainer.resume_mode=disable",
            )
        ]
    step_dir = tracker.parent / f"global_step_{step}"
    if not step_dir.is_dir():
        return [
            warning(
                (LOCAL_DIR, "trainer.resume_mode"),
                f"={root}: {TRACKER} names step {step} but {step_dir} does not exist; verl would start from "
                "scratch (resume_mode=auto); point the tracker at a saved step, or set trainer.resume_mode=disable",
            )
        ]
    why = mismatch(step_dir / "actor", installed_verl_schema(), tracker.parent)
    return (
        [error((LOCAL_DIR, "trainer.resume_mode"), f"={root}: resume_mode=auto resumes {step_dir}: {why}")]
        if why
        else []
    )


def _whole(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def mode_problems(cfg: DictConfig) -> list[Problem]:
    if not uses_v1_trainer(cfg):
        if not cfg.actor_rollout_ref.get("hybrid_engine", True):
            return [error("actor_rollout_ref.hybrid_engine", "=false: verl's trainer supports the hybrid engine only")]
        return []
    found = []
    v1 = cfg.trainer.v1
    if v1.get("trainer_mode") == "separate_async":
        sync, train = parameter_sync_step(cfg), cfg.data.train_batch_size
        mini = cfg.actor_rollout_ref.actor.ppo_mini_batch_size
        if train != sync * mini:
            found.append(
                error(
                    ("trainer.v1.separate_async.parameter_sync_step", "data.train_batch_size"),
                    f"separate_async needs train_batch_size ({train}) == parameter_sync_step ({sync}) * "
                    f"ppo_mini_batch_size ({mini})",
                )
            )
        rollout = cfg.actor_rollout_ref.rollout
        for name in ("nnodes", "n_gpus_per_node"):
            if not (_whole(rollout.get(name)) and rollout.get(name) > 0):
                found.append(
                    error(f"actor_rollout_ref.rollout.{name}", f"={rollout.get(name)}: separate_async needs > 0")
                )
        if OmegaConf.select(rollout, "checkpoint_engine.backend", default=None) == "naive":
            found.append(
                error(
                    "actor_rollout_ref.rollout.checkpoint_engine.backend",
                    "=naive: separate_async needs nccl, nixl, mooncake or another transfer backend",
                )
            )
    sampler = v1.get("sampler") or {}
    threshold = sampler.get("max_off_policy_threshold")
    if threshold is not None and not (_whole(threshold) and threshold > 0):
        found.append(
            error("trainer.v1.sampler.max_off_policy_threshold", f"={threshold!r}: a positive integer, or null")
        )
    strategy = sampler.get("max_off_policy_strategy", "drop")
    if strategy not in ("drop", "wait"):
        found.append(error("trainer.v1.sampler.max_off_policy_strategy", f"={strategy!r} is not one of drop, wait"))
    groups = cfg.algorithm.get("filter_groups") or {}
    custom = OmegaConf.select(sampler, "custom_sampler.path", default=None) if sampler else None
    if groups.get("enable") and not custom:
        inflight = groups.get("max_inflight_gen_batches", 1)
        if not groups.get("metric"):
            found.append(error("algorithm.filter_groups.metric", "must be set when filter_groups.enable=true"))
        elif not (_whole(inflight) and inflight > 0):
            found.append(
                error("algorithm.filter_groups.max_inflight_gen_batches", f"={inflight!r}: a positive integer")
            )
    return found


def checkpoint_dir_problems(cfg: DictConfig) -> list[Problem]:
    """verl joins `trainer.default_local_dir` with the working directory when it looks for the latest checkpoint
    at start-up (`ray_trainer.py` / `v1/trainer_base.py` `_load_checkpoint`: `os.path.isabs(checkpoint_folder)`)
    and with `global_step_<N>` at every save: a null or empty value raises there (TypeError) or saves into the
    working directory."""
    value = cfg.trainer.get("default_local_dir")
    if isinstance(value, str) and value:
        return []
    return [
        error(
            "trainer.default_local_dir",
            f"={value!r}: verl loads and saves checkpoints under this directory (os.path.join at start-up and at "
            "every save); set a path on storage every node shares, e.g. trainer.default_local_dir=/shared/ckpt",
        )
    ]


def trainer_problems(cfg: DictConfig, missing: Level = "error") -> list[Problem]:
    if found := checkpoint_dir_problems(cfg):
        return found  # the resume rules read the directory
    return resume_problems(cfg, missing) + mode_problems(cfg)
