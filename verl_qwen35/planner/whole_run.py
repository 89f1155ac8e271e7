"""The whole configured run before booking it: steps, wall time, device-hours, checkpoints and their disk.

Upstream (verl 0.9.1, the same in 0.8.0):
- steps: `verl/trainer/ppo/ray_trainer.py` `RayPPOTrainer._create_dataloader`: total = len(train_dataloader)
  (`drop_last=True`, so rows // batch) x `trainer.total_epochs`, replaced by `trainer.total_training_steps`
  when set; counted once, in `checks/schedule.py` `training_steps`;
- saves: `RayPPOTrainer.fit` saves when `trainer.save_freq > 0` and the step is a multiple of it or the last
  one (`is_last_step`); `_save_checkpoint` hands `trainer.max_actor_ckpt_to_keep` to the checkpoint manager,
  which with keep >= 2 deletes down to keep - 1 before a save and with keep 1 deletes the old one only after
  the new one is written (`verl/utils/checkpoint/checkpoint_manager.py` `ensure_checkpoint_capacity`,
  `register_checkpoint`): keep 1 has two on disk while it saves;
- contents: `verl/utils/checkpoint/megatron_checkpoint_manager.py` `MegatronCheckpointManager`: `model` is
  Megatron's sharded weights (`dist_checkpointing`) with `megatron.use_dist_checkpointing`, else the HF
  weights through the bridge; `hf_model` adds the HF weights (once, when `model` already is HF);
  `optimizer` always goes through `dist_checkpointing`: megatron-core's distributed optimizer saves its fp32
  main weights and Adam's two moments (12 bytes a parameter, sharded over the data-parallel ranks);
  `extra` is the LR scheduler and RNG states (KiB).

Assumed, and named where printed: weights are saved in bf16; every node writes its shards at once at
`hardware.checkpoint_write_gbps` (the storage's rate a node, not measured); the step time is the step-time
model's (`seconds_per_step`, the one place to switch to its band); validation steps are not counted.
"""

import math
from dataclasses import asdict, dataclass
from typing import Any

from omegaconf import DictConfig, OmegaConf

from verl_qwen35.checks.schedule import train_rows, training_steps, uses_v1_trainer
from verl_qwen35.model.calibration import calibration_of
from verl_qwen35.model.layout import Layout
from verl_qwen35.model.memory import (
    InputError,
    ModelFacts,
    Settings,
    estimate_layout,
    or_unusable,
    read_inputs,
    rounded,
)
from verl_qwen35.model.run import Run
from verl_qwen35.model.step_time import Rates, Recipe, StepTime, step_time

GIB = 1 << 30
BF16 = 2
ADAM_FP32 = 12  # main weight, exp_avg, exp_avg_sq
ACTOR = "actor_rollout_ref.actor"
WRITE_RATE = "hardware.checkpoint_write_gbps"


@dataclass(frozen=True)
class Band:
    """A prediction: `low`..`high` around `point`; `banded` False while the model gives a point only."""

    point: float
    low: float
    high: float
    banded: bool

    def text(self, unit: str = "s", digits: int = 0) -> str:
        point = f"~{self.point:.{digits}f} {unit}"
        return f"{point} ({self.low:.{digits}f}-{self.high:.{digits}f} {unit})" if self.banded else point

    def scaled(self, factor: float, plus: float = 0.0) -> "Band":
        return Band(self.point * factor + plus, self.low * factor + plus, self.high * factor + plus, self.banded)


def predicted_step(run: Run) -> StepTime:
    """The step time of the run's own layout, as the plan predicts it, from what the builder derived once;
    `InputError` names an unusable key."""
    cfg = run.config
    m, s = inputs(run)
    rates = Rates.of(cfg.hardware)
    lo = layout_of(run)
    if undivided := undivided_groups(lo):
        raise undivided
    cal = calibration_of(cfg)
    return step_time(m, lo, s, run.estimate or estimate_layout(m, lo, s), rates, cal, Recipe.of(cfg).at(cal))


def inputs(run: Run) -> tuple[ModelFacts, Settings]:
    """The run's model facts and settings; where the builder could not read them, reading them again raises the
    `InputError` that names the key."""
    if run.facts is not None and run.settings is not None:
        return run.facts, run.settings
    return read_inputs(run.config)


def layout_of(run: Run) -> Layout:
    """The run's layout; where the builder could not derive it, deriving it again raises what names the value."""
    return run.layout if run.layout is not None else Layout.of(run.config)


def undivided_groups(lo: Layout) -> InputError | None:
    """Why the step-time model has no data-parallel group to time (it divides by their sizes), naming the keys;
    None when the layout splits its world."""
    if lo.world < 1:
        return InputError(
            "parallel.nnodes",
            f"parallel.nnodes x parallel.devices_per_node = {lo.nnodes} x {lo.devices_per_node}: no device to time",
        )
    if lo.dp < 1:
        grid = lo.tp * lo.pp * lo.cp
        return InputError("parallel.tp", f"world {lo.world} is smaller than tp*pp*cp = {grid} (parallel.tp, .pp, .cp)")
    if lo.expert_dp < 1:
        return InputError(
            "parallel.ep",
            f"world {lo.world} is smaller than etp*ep*pp = {lo.etp * lo.ep * lo.pp} (parallel.etp, .ep, .pp)",
        )
    return None


def seconds_per_step(run: Run) -> Band | None:
    """The step time of the run's own layout (`verl_qwen35/model/step_time.py`), None when its inputs are
    unusable; the one place a band replaces the point."""
    try:
        t = predicted_step(run)
    except InputError:
        return None
    return Band(t.total, t.low, t.high, banded=True)


@dataclass(frozen=True)
class Checkpoint:
    """One save of the actor: its parts in GiB, the time to write it, how many saves and how many stay on disk."""

    contents: list[str]
    parts_gib: dict[str, float]
    write_gbps_per_node: float
    write_seconds: float
    saves: int | None  # None: the step count is unknown
    kept_at_peak: int | None
    disk_gib: float | None

    @property
    def gib(self) -> float:
        return sum(self.parts_gib.values())


@dataclass(frozen=True)
class WholeRun:
    steps: int | None
    steps_from: str  # how verl counts them here, or why the count is unknown
    step: Band | None  # seconds
    wall_hours: Band | None  # steps + checkpoint writes
    device_hours: Band | None
    checkpoint: Checkpoint

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["checkpoint"]["gib_per_save"] = round(self.checkpoint.gib, 2)
        return rounded(out)


def _steps(cfg: DictConfig) -> tuple[int | None, str]:
    rows = train_rows(cfg)
    steps = training_steps(cfg, rows)
    trainer = cfg.trainer
    if trainer.get("total_training_steps") is not None:
        return steps.total, f"trainer.total_training_steps={trainer.total_training_steps}"
    batch_key = "data.train_batch_size"
    if not uses_v1_trainer(cfg) and cfg.data.get("gen_batch_size"):
        batch_key = "data.gen_batch_size"
    if steps.total is None:
        return None, (
            f"unknown: {cfg.data.train_files} is not readable here, and verl counts rows // {batch_key} x "
            "trainer.total_epochs; make data.train_files readable here or set trainer.total_training_steps"
        )
    return steps.total, (
        f"{rows} rows // {batch_key}={OmegaConf.select(cfg, batch_key)} = {steps.per_epoch} a epoch x "
        f"trainer.total_epochs={trainer.total_epochs}"
    )


def saved_params(run: Run) -> int:
    """Parameters the actor saves: the text model, its MTP layers and the vision tower."""
    m, s = inputs(run)
    mtp = s.mtp_layers * (m.attention_layer + m.moe_layer + m.mtp_extra)
    return m.params_total + mtp + m.vision_params


def write_rate(cfg: DictConfig) -> float:
    value = OmegaConf.select(cfg, WRITE_RATE, default=None)
    if not isinstance(value, int | float) or isinstance(value, bool) or not math.isfinite(value) or value <= 0:
        raise InputError(WRITE_RATE, f"{WRITE_RATE}={value!r}: the checkpoint write rate needs a number > 0 (GB/s)")
    return float(value)


def checkpoint(run: Run, steps: int | None) -> Checkpoint:
    """The actor's checkpoint per `save_contents`, its write time, the saves of `steps` and the disk they keep."""
    cfg = run.config
    contents = [str(c) for c in OmegaConf.select(cfg, f"{ACTOR}.checkpoint.save_contents", default=[]) or []]
    dist = bool(OmegaConf.select(cfg, f"{ACTOR}.megatron.use_dist_checkpointing", default=False))
    params = saved_params(run)
    parts: dict[str, float] = {}
    if "model" in contents:
        parts["model_dist_ckpt" if dist else "model_hf"] = params * BF16 / GIB
    if "hf_model" in contents and "model_hf" not in parts:
        parts["model_hf"] = params * BF16 / GIB
    if "optimizer" in contents:
        parts["optimizer"] = params * ADAM_FP32 / GIB
    rate = write_rate(cfg)
    lo = layout_of(run)
    if undivided := undivided_groups(lo):
        raise undivided
    nodes = lo.nnodes
    seconds = sum(parts.values()) * GIB / 1e9 / (rate * nodes)
    freq, keep = cfg.trainer.get("save_freq"), cfg.trainer.get("max_actor_ckpt_to_keep")
    saves = kept = disk = None
    if steps is not None and isinstance(freq, int):
        saves = 0 if freq <= 0 or not parts else steps // freq + (steps % freq != 0)
        held = saves if not isinstance(keep, int) or keep <= 0 else max(keep, 2)
        kept = min(saves, held)
        disk = kept * sum(parts.values())
    return Checkpoint(contents, parts, rate, seconds, saves, kept, disk)


def whole_run(run: Run) -> WholeRun:
    """The configured run: `InputError` names a key the checkpoint size or write rate cannot use."""
    steps, steps_from = _steps(run.config)
    step = seconds_per_step(run)
    ckpt = checkpoint(run, steps)
    wall = device = None
    if steps is not None and step is not None:
        writes = (ckpt.saves or 0) * ckpt.write_seconds
        wall = step.scaled(steps / 3600, writes / 3600)
        device = wall.scaled(layout_of(run).world)
    return WholeRun(steps, steps_from, step, wall, device, ckpt)


@or_unusable("run        not computed")
def whole_run_lines(run: Run) -> list[str]:
    """The plan's lines for the whole run (docs/planning.md, "The whole run")."""
    cfg = run.config
    w = whole_run(run)
    c = w.checkpoint
    lines = [f"run        {w.steps if w.steps is not None else '?'} training steps ({w.steps_from})"]
    if w.wall_hours is not None and w.device_hours is not None and w.step is not None:
        lines.append(
            f"           {w.wall_hours.text('h', 1)} wall, {w.device_hours.text('device-hours', 0)}: {w.steps} steps x "
            f"{w.step.text()} + {c.saves or 0} checkpoint write(s); validation not counted"
            + ("" if w.step.banded else "; points: the step-time model has no error band yet")
        )
    elif w.step is None:
        lines.append("           no wall time: the step time is not predicted (see the time line)")
    parts = ", ".join(f"{k} {v:.0f}" for k, v in c.parts_gib.items()) or "nothing (save_contents is empty)"
    lines.append(
        f"saves      {c.gib:.0f} GiB a save ({parts} GiB; {ACTOR}.checkpoint.save_contents={c.contents}), "
        f"~{c.write_seconds:.0f} s to write at {WRITE_RATE}={c.write_gbps_per_node:g} GB/s a node (an assumption: "
        "your storage's rate)"
    )
    freq, keep = cfg.trainer.get("save_freq"), cfg.trainer.get("max_actor_ckpt_to_keep")
    if c.saves is None:
        lines.append(f"           saves and disk unknown until the step count is (trainer.save_freq={freq})")
    else:
        lines.append(
            f"           {c.saves} save(s) at trainer.save_freq={freq}, {c.kept_at_peak} on disk at the peak "
            f"(trainer.max_actor_ckpt_to_keep={keep}): {c.disk_gib:.0f} GiB of disk for checkpoints"
        )
    return lines
