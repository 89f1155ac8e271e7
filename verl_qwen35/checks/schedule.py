"""The run's step counts and the learning-rate schedule verl hands megatron-core, checked without torch.

Upstream (verl 0.8.0 and 0.9.1 alike unless noted):
- steps: `verl/trainer/ppo/ray_trainer.py` `RayPPOTrainer._create_dataloader` (verl 0.8, and 0.9 with
  `trainer.use_v1=false`): a `StatefulDataLoader(drop_last=True)` of `gen_batch_size or train_batch_size`,
  `assert len(self.train_dataloader) >= 1, "Train dataloader is empty!"`, total = len * total_epochs unless
  `trainer.total_training_steps`; verl 0.9's v1 trainer (`verl/trainer/ppo/v1/trainer_base.py`
  `_create_dataloader`): steps_per_epoch = len(dataset) // train_batch_size (0 divides `global_steps` in
  `fit`), and the optimizer's horizon is total * `parameter_sync_step` of the trainer mode;
- schedule: `verl/utils/megatron/optimizer.py` `get_megatron_optimizer_param_scheduler` (lr_decay_steps
  defaults to the optimizer's total_training_steps; lr_warmup_steps_ratio applies when lr_warmup_steps is
  None or <= 0) and megatron-core `optimizer_param_scheduler.py` `OptimizerParamScheduler.__init__`
  (min_lr >= 0, lr >= min_lr, lr_warmup_init <= lr, lr_decay_steps > 0, warmup < decay, WSD needs
  lr_wsd_decay_steps, weight_decay >= 0).

The number of rows is read from the parquet footers (verl's RLHFDataset may drop overlong prompts, so the
real count can only be lower). `validators/rehearsal.py` builds the real scheduler from the same numbers.
"""

import importlib.util
from dataclasses import dataclass
from pathlib import Path

from omegaconf import DictConfig, ListConfig, OmegaConf

from verl_qwen35.checks.problem import Problem, error

OPTIM = "actor_rollout_ref.actor.optim"


def parquet_rows(paths: str | ListConfig | list) -> int | None:
    """Rows of these parquet files (their footers), or None when one is absent or unreadable here."""
    files = [paths] if isinstance(paths, str) else list(paths)
    if not all(Path(path).is_file() for path in files) or importlib.util.find_spec("pyarrow") is None:
        return None
    import pyarrow.parquet as pq  # only when every file is there: pyarrow costs ~0.3 s to import

    rows = 0
    for path in files:
        try:
            rows += pq.ParquetFile(path).metadata.num_rows
        except Exception:  # data_problems reports an unreadable file
            return None
    return rows


def uses_v1_trainer(cfg: DictConfig) -> bool:
    """verl 0.9's `main_ppo.main` runs the v1 trainer when `trainer.use_v1` (0.8 has no such key)."""
    return bool(OmegaConf.select(cfg, "trainer.use_v1", default=False))


def parameter_sync_step(cfg: DictConfig) -> int:
    """`PPOTrainer.__init__` (v1): `trainer.v1.<trainer_mode>.parameter_sync_step`, default 1."""
    if not uses_v1_trainer(cfg):
        return 1
    mode = OmegaConf.select(cfg, "trainer.v1.trainer_mode", default="sync")
    value = OmegaConf.select(cfg, f"trainer.v1.{mode}.parameter_sync_step", default=1)
    return value if isinstance(value, int) and not isinstance(value, bool) else 1


@dataclass(frozen=True)
class Steps:
    per_epoch: int | None  # None: the data set is not readable here
    total: int | None  # trainer steps
    optimizer: int | None  # what verl writes into actor.optim.total_training_steps


def train_rows(cfg: DictConfig) -> int | None:
    """Rows verl's RL dataset starts from: the files, capped by `data.train_max_samples` (> 0)."""
    rows = parquet_rows(cfg.data.train_files)
    cap = OmegaConf.select(cfg, "data.train_max_samples", default=-1)
    if rows is not None and isinstance(cap, int) and cap > 0:
        rows = min(rows, cap)
    return rows


def training_steps(cfg: DictConfig, rows: int | None) -> Steps:
    data, trainer = cfg.data, cfg.trainer
    batch = data.train_batch_size if uses_v1_trainer(cfg) else (data.get("gen_batch_size") or data.train_batch_size)
    per_epoch = None if rows is None or not _whole(batch) or batch < 1 else rows // batch
    total = trainer.get("total_training_steps")
    epochs = trainer.get("total_epochs")
    if total is None and _whole(epochs) and (per_epoch is not None or epochs <= 0):
        total = max(epochs, 0) * (per_epoch or 0)  # 0 epochs: 0 steps whatever the data
    if not _whole(total):
        return Steps(per_epoch, None, None)  # a value of another type is reported by the type rules
    return Steps(per_epoch, total, None if total is None else total * parameter_sync_step(cfg))


def _whole(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def scheduler_arguments(optim: DictConfig, optimizer_steps: int) -> dict:
    """What `get_megatron_optimizer_param_scheduler` passes to OptimizerParamScheduler (the numbers)."""
    decay = optim.get("lr_decay_steps")
    if decay is None:
        decay = optimizer_steps
    warmup = optim.get("lr_warmup_steps")
    ratio = optim.get("lr_warmup_steps_ratio")
    if ratio is not None and (warmup is None or warmup <= 0):
        warmup = int(ratio * decay)
    return {
        "init_lr": optim.get("lr_warmup_init", 0.0),
        "max_lr": optim.lr,
        "min_lr": optim.get("min_lr", 0.0),
        "lr_warmup_steps": warmup,
        "lr_decay_steps": decay,
        "lr_decay_style": optim.get("lr_decay_style", "linear"),
        "wsd_decay_steps": optim.get("lr_wsd_decay_steps"),
        "weight_decay": optim.get("weight_decay", 0.0),
    }


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def schedule_problems(cfg: DictConfig, steps: Steps) -> list[Problem]:
    """The asserts of verl's dataloader and megatron-core's OptimizerParamScheduler, with the run's steps."""
    found: list[Problem] = []
    batch_key = "data.train_batch_size"
    if not uses_v1_trainer(cfg) and cfg.data.get("gen_batch_size"):
        batch_key = "data.gen_batch_size"
    if steps.per_epoch == 0:  # also with trainer.total_training_steps: v0 asserts, v1 divides by it
        found.append(
            error(
                ("data.train_files", batch_key),
                f"the training data has fewer rows than one batch ({batch_key}={OmegaConf.select(cfg, batch_key)}): "
                "verl's train dataloader (drop_last=True) is empty and the trainer stops before step 1",
            )
        )
        return found
    if steps.total is not None and steps.total <= 0:  # megatron-core's scheduler asserts lr_decay_steps > 0
        set_steps = cfg.trainer.get("total_training_steps") is not None
        key = "trainer.total_training_steps" if set_steps else "trainer.total_epochs"
        return found + [
            error(
                key,
                f"={OmegaConf.select(cfg, key)}: the run has {steps.total} training steps; verl hands megatron-core's "
                "OptimizerParamScheduler lr_decay_steps=0, which asserts when the workers start; train at least "
                "one step",
            )
        ]
    optim = OmegaConf.select(cfg, OPTIM)
    if optim is None or not all(_number(optim.get(k)) for k in ("lr", "min_lr", "weight_decay")):
        return found  # the type rules report these
    lr, min_lr = optim.lr, optim.get("min_lr", 0.0)
    if min_lr < 0:
        found.append(error(f"{OPTIM}.min_lr", f"={min_lr} must be >= 0 (megatron-core OptimizerParamScheduler)"))
    elif lr < min_lr:
        found.append(error((f"{OPTIM}.lr", f"{OPTIM}.min_lr"), f"lr={lr} is below min_lr={min_lr}"))
    init = optim.get("lr_warmup_init", 0.0)
    if _number(init) and init > lr:
        found.append(error(f"{OPTIM}.lr_warmup_init", f"={init} is above lr={lr} (OptimizerParamScheduler)"))
    if optim.weight_decay < 0:
        found.append(error(f"{OPTIM}.weight_decay", f"={optim.weight_decay} must be >= 0 (OptimizerParamScheduler)"))
    if optim.get("lr_decay_style") == "WSD" and optim.get("lr_wsd_decay_steps") is None:
        found.append(
            error(f"{OPTIM}.lr_wsd_decay_steps", "is null; lr_decay_style=WSD needs it (OptimizerParamScheduler)")
        )
    if steps.optimizer is None and optim.get("lr_decay_steps") is None:
        ratio, warmup = optim.get("lr_warmup_steps_ratio"), optim.get("lr_warmup_steps")
        if _number(ratio) and ratio >= 1 and (warmup is None or (_number(warmup) and warmup <= 0)):
            found.append(  # int(ratio * decay) >= decay for any horizon
                error(
                    f"{OPTIM}.lr_warmup_steps_ratio",
                    f"={ratio} gives at least as many warmup steps as lr_decay_steps, whatever the run's length: "
                    "megatron-core's OptimizerParamScheduler asserts lr_warmup_steps < lr_decay_steps when the "
                    "workers start; give a ratio below 1",
                )
            )
        return found  # the data set is not here: the horizon is unknown
    args = scheduler_arguments(optim, steps.optimizer if steps.optimizer is not None else -1)
    decay, warmup = args["lr_decay_steps"], args["lr_warmup_steps"]
    if not (_number(decay) and _number(warmup)):
        return found
    where = "" if optim.get("lr_decay_steps") is not None else f" (= the run's {steps.optimizer} optimizer steps)"
    decay_keys = (
        (f"{OPTIM}.lr_decay_steps",)
        if optim.get("lr_decay_steps") is not None
        else (
            "trainer.total_training_steps",
            "trainer.total_epochs",
        )
    )
    if decay <= 0:
        found.append(error(decay_keys, f"lr_decay_steps={decay}{where} must be > 0 (OptimizerParamScheduler)"))
    elif warmup >= decay:
        ratio_used = optim.get("lr_warmup_steps") is None or optim.lr_warmup_steps <= 0
        warm_key = f"{OPTIM}.lr_warmup_steps_ratio" if ratio_used else f"{OPTIM}.lr_warmup_steps"
        found.append(
            error(
                (warm_key, *decay_keys),
                f"{warm_key.rsplit('.', 1)[1]} gives {warmup} warmup steps, not fewer than lr_decay_steps={decay}"
                f"{where}: megatron-core's OptimizerParamScheduler asserts lr_warmup_steps < lr_decay_steps",
            )
        )
    return found
