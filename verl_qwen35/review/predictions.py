"""The plan's predictions of a run (from its launch.yaml) beside what the run measured.

Predicted exactly as the dry-run plan predicts them (planner/summary.py): the memory estimate
(checks/memory.py `estimate_of`, model/memory.py) and the step-time model (`predicted_step`,
model/step_time.py) of the recorded config.

Which prediction meets which measurement:
- step time: the model's whole step against verl's `timing_s/step`; the rollout (prefill + decode) against
  `timing_s/gen`. Medians over the steps after each start's first (warm-up).
- training memory: the estimate's training peak, the larger of the update and the forward-only log-prob passes
  (`train_breakdown`, `log_prob_pass`), less the reserve and HCCL buffers it adds for what torch does not allocate
  (context, NCCL/HCCL buffers, fragmentation), against verl's `actor/perf/max_memory_allocated_gb`: torch's peak in
  the actor worker since it started, which spans the update and the log-prob passes (review/quantities.py).
- rollout memory: predicted (vLLM's budget beside what the actor keeps), but verl logs none.

Far from the prediction: a ratio (measured / predicted) outside FAR. The step-time model's fitted rows sit
within +-10% of their measurements, and the one row of a regime it does not model (FP8 training) is +48%
(docs/planning.md, `scripts/calibrate.py`). A ratio within 2/3..3/2 is the model's known error plus what it
leaves out on purpose (overlap, stragglers, responses shorter than the maximum); outside it, something the
model does not describe dominates the run, and the plan's numbers for this setup should not be trusted.
No published measurement checks the memory estimate, so it gets the same band.
"""

import dataclasses
from dataclasses import dataclass

from omegaconf import DictConfig

from verl_qwen35.builder.build import build_run
from verl_qwen35.checks.memory import applies, estimable, estimate_of, input_problems
from verl_qwen35.model.layout import Layout, device_of
from verl_qwen35.model.memory import InputError
from verl_qwen35.model.step_time import Calibration
from verl_qwen35.planner.whole_run import predicted_step
from verl_qwen35.review.quantities import Measured

FAR = (2 / 3, 3 / 2)
# Responses averaging under this share of data.max_response_length make the (full-length) rollout shorter.
SHORT_RESPONSES = 2 / 3


@dataclass(frozen=True)
class Prediction:
    name: str
    unit: str
    predicted: float | None
    measured: float | None
    statistic: str  # how the measurement was taken over the steps
    key: str | None  # the verl metric measured
    note: str = ""

    @property
    def ratio(self) -> float | None:
        if self.predicted is None or self.measured is None or self.predicted <= 0:
            return None
        return self.measured / self.predicted

    @property
    def far(self) -> bool:
        return self.ratio is not None and not FAR[0] <= self.ratio <= FAR[1]

    def as_dict(self) -> dict[str, object]:
        return {
            "name": self.name,
            "unit": self.unit,
            "predicted": self.predicted,
            "measured": self.measured,
            "statistic": self.statistic,
            "key": self.key,
            "ratio": self.ratio,
            "far": self.far,
            "note": self.note,
        }


def _short_responses(cfg: DictConfig, measured: dict[str, Measured]) -> str:
    length = measured["response_length"].median
    longest = cfg.data.max_response_length
    if length is None or not isinstance(longest, int) or length >= SHORT_RESPONSES * longest:
        return ""
    return f"responses average {length:.0f} of {longest} tokens; the model takes every response at full length"


def _median(m: Measured) -> str:
    return "median after warm-up" if m.points else "-"


def time_predictions(
    cfg: DictConfig, measured: dict[str, Measured], calibration: Calibration | None = None
) -> tuple[list[Prediction], list[str]]:
    """Step and rollout time as the plan predicts them; with `calibration` (a `calibrate` file), each again under
    it ("after"), beside the record's own ("before")."""
    try:
        before = predicted_step(build_run(cfg, mode="dry")[0])  # the record's own values, as the plan reads them
    except InputError as err:
        return [], [f"step time not predicted: {err}"]
    short = _short_responses(cfg, measured)
    step, gen = measured["step_time"], measured["rollout_time"]
    rows, notes = [], [f"predicted with {before.calibration.describe()}"]
    shown = [("", before)]
    if calibration is not None and calibration.device != device_of(cfg):
        notes.append(
            f"(after): not shown: the calibration was fitted on {calibration.device} runs and this run ran on "
            f"{device_of(cfg)} (trainer.device); efficiencies do not carry from one device kind to another"
        )
    elif calibration is not None:
        shown.append((" (after)", dataclasses.replace(before, calibration=calibration)))
        notes.append(f"(after): predicted with {calibration.describe()}")
    for suffix, t in shown:
        band = t.calibration.band["gen"]
        for name, predicted, low, high, m in (
            ("step time", t.total, t.low, t.high, step),
            ("rollout time", t.phases["gen"], t.phases["gen"] * band[0], t.phases["gen"] * band[1], gen),
        ):
            below = m.median is not None and m.median < low
            note = f"band {low:.0f}-{high:.0f} s"
            note += f"; {short}" if below and short else ""
            rows.append(Prediction(name + suffix, "s", predicted, m.median, _median(m), m.key, note))
    return rows, notes


def memory_predictions(cfg: DictConfig, measured: dict[str, Measured]) -> list[Prediction]:
    e = estimate_of(cfg)
    assert e is not None, "called for an estimable config only"
    t = e.train_breakdown
    allocated = e.train_gib - t["reserved"] - t["hccl_buffers"]
    update = e.update_gib - t["reserved"] - t["hccl_buffers"]
    peak = measured["memory_allocated"]
    lo = Layout.of(cfg)
    note = f"the larger of: update {update:.1f}, log-prob pass {t['log_prob_pass']:.1f} GiB"
    if lo.pp > 1 and e.train_stage != lo.pp - 1:
        note += f"; the estimate's peak is pipeline stage {e.train_stage}, verl measures the last ({lo.pp - 1})"
    rows = [
        Prediction("training peak (torch)", "GiB", allocated, peak.high, "max" if peak.points else "-", peak.key, note),
        Prediction(
            "rollout peak (device)", "GiB", e.rollout_gib, None, "-", None, "verl logs no memory of vLLM's processes"
        ),
    ]
    return rows


def predictions(
    cfg: DictConfig, measured: dict[str, Measured], calibration: Calibration | None = None
) -> tuple[list[Prediction], list[str]]:
    """The predictions of a launch record's config beside the measurements, and why any is missing; the step
    times also under `calibration` when one is given."""
    if not applies(cfg):
        return [], ["no predictions: the recorded config has no hardware.* capacities or model.* facts"]
    if not estimable(cfg):
        why = "; ".join(str(p) for p in input_problems(cfg)) or "the recorded parallel.* layout does not split evenly"
        return [], [f"no predictions: {why}"]
    time_rows, notes = time_predictions(cfg, measured, calibration)
    return time_rows + memory_predictions(cfg, measured), notes
