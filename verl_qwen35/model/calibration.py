"""The step-time model's efficiencies and error bands, fitted on measured phases (published rows or a user's runs).

A measurement names the phases it measured (verl's `timing_s/gen`, `old_log_prob`, `ref`, `update_actor`,
`update_weights`; `step` for a published total). Each phase's prediction is `a / efficiency + b`
(model/step_time.py), so the efficiency that makes one measured phase exact is `a / (measured - b)`; a constant
is the median of those values over the rows that measure its phases (a `step` row fits `gen`, the other phases at
their fitted values). Without rows, `log_prob` takes the `update` constant (the same forward kernels) and any
other constant the shipped fit's.

The band is not chosen: every row is predicted by a fit that did not see it (leave-one-out), and a phase's band
is the lowest and highest measured / predicted ratio of its rows (1 included). A phase measured by fewer than
two rows takes the band of all rows together.
"""

import dataclasses
import functools
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import yaml

from verl_qwen35.data import DATA_DIR
from verl_qwen35.model.layout import Layout
from verl_qwen35.model.memory import InputError, ModelFacts, Settings, estimate_layout, read_inputs
from verl_qwen35.model.step_time import (
    CONSTANT,
    CONSTANTS,
    FP32,
    PHASES,
    Calibration,
    Rates,
    Recipe,
    Terms,
    phase_seconds,
    step_time,
    training_terms,
)

SHIPPED = DATA_DIR / "calibration" / "measurements.yaml"
# Where a fit starts and what a constant falls back to when no row measures it (not used by the shipped fit,
# whose every constant has rows, but by a fit of rows that lack some phase).
START = {"gen": 0.5, "log_prob": 0.3, "update": 0.3, "update_weights": 0.75}
FIT_ORDER = ("update", "log_prob", "update_weights", "gen")


@dataclass(frozen=True)
class Row:
    """One measurement: its phases' terms (a, b) as the model computes them, and the seconds measured."""

    id: str
    terms: dict[str, Terms]
    measured: dict[str, float]  # phase (or "step") -> seconds
    fitted: frozenset[str]  # the measured phases the fit uses
    source: str = ""
    hardware: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def predict(self, eff: Mapping[str, float], phase: str) -> float:
        if phase == "step":
            return sum(self.predict(eff, p) for p in self.terms)
        return phase_seconds({phase: self.terms[phase]}, eff)[phase]


def _own(row: Row, phase: str, eff: Mapping[str, float]) -> float | None:
    """The efficiency that makes this row's `phase` (a `step` row: its gen) equal its measurement."""
    measured = row.measured[phase]
    target = "gen" if phase == "step" else phase
    if phase == "step":
        measured -= sum(row.predict(eff, p) for p in row.terms if p != "gen")
    a, b = row.terms[target]
    if a <= 0 or measured <= b:
        return None
    return min(1.0, a / (measured - b))


def fit(rows: Iterable[Row], fallback: Mapping[str, float] | None = None) -> dict[str, float]:
    """One efficiency per constant: the median of each row's own value (see the module's docstring)."""
    rows = list(rows)
    eff = dict(fallback or START)
    for constant in FIT_ORDER:
        values = []
        for row in rows:
            for phase in row.fitted:
                if (CONSTANT["gen"] if phase == "step" else CONSTANT[phase]) == constant:
                    value = _own(row, phase, eff)
                    values += [value] if value is not None else []
        if values:
            eff[constant] = statistics.median(values)
        elif constant == "log_prob":
            eff[constant] = eff["update"]
    return eff


def leave_one_out(rows: list[Row], fallback: Mapping[str, float] | None = None) -> list[tuple[Row, str, float]]:
    """(row, phase, measured / predicted) of every fitted measurement, predicted by the fit of the other rows."""
    out = []
    for i, row in enumerate(rows):
        others = rows[:i] + rows[i + 1 :]
        eff = fit(others, fallback)
        out += [(row, phase, row.measured[phase] / row.predict(eff, phase)) for phase in sorted(row.fitted)]
    return out


def bands(loo: list[tuple[Row, str, float]]) -> dict[str, tuple[float, float]]:
    """Each phase's (low, high) ratio from its rows' leave-one-out ratios (a `step` row counts for `gen`),
    1 included; with fewer than two, the band of all rows together."""
    counts = {p: sum(1 for _, q, _ in loo if q == p) for _, p, _ in loo}
    pooled = [ratio for _, p, ratio in loo if counts[p] >= 2]  # a phase of one row is predicted by no row
    wide = (min([1.0, *pooled]), max([1.0, *pooled]))
    out = {}
    for phase in PHASES:
        own = [ratio for _, p, ratio in loo if p == phase or (phase == "gen" and p == "step")]
        out[phase] = (min([1.0, *own]), max([1.0, *own])) if len(own) >= 2 and phase != "gen" else wide
        if phase == "gen" and len(own) >= 2:
            out[phase] = (min([1.0, *own]), max([1.0, *own]))
    return out


def calibrate(rows: list[Row], source: str, base: Calibration | None = None) -> Calibration:
    """The calibration these rows give; constants and bands they cannot fit come from `base`."""
    eff = fit(rows, base.efficiency if base else None)
    loo = leave_one_out(rows, base.efficiency if base else None)
    band = bands(loo)
    if base is not None:  # a phase the user's runs do not measure twice keeps the shipped band
        for phase in PHASES:
            own = [r for r, p, _ in loo if p == phase or (phase == "gen" and p == "step")]
            if len(own) < 2:
                band[phase] = base.band[phase]
    return Calibration(efficiency=eff, band=band, source=source, rows=len(rows))


# -- the shipped rows -----------------------------------------------------------------------------------


def load_measurements() -> list[dict[str, Any]]:
    return yaml.safe_load(SHIPPED.read_text())["measurements"]


def row_facts(row: Mapping[str, Any]) -> ModelFacts:
    """A measured model's facts; models without Qwen3.5's gated query (Qwen3) count q_proj once."""
    facts = ModelFacts.of(row["model"])
    if not row["model"].get("attention_output_gate", True):
        model = row["model"]
        q_and_o = 2 * model["num_attention_heads"] * model["head_dim"] * model["hidden_size"]
        facts = dataclasses.replace(facts, attn_split=q_and_o)
    return facts


def _settings(r: Mapping[str, Any], hw: Mapping[str, Any]) -> Settings:
    prompt = r.get("prompt_length", 0)
    return Settings(
        device_memory_gib=hw.get("device_memory_gib", 80.0), host_memory_gib=2048.0, reserved_gib=4.0,
        prompt_length=prompt, response_length=r["sequence_length"] - prompt, max_model_len=None,
        micro_batch=r.get("micro_batch_size", 1), max_token_len=r.get("max_token_len"),
        mini_batch_sequences=r.get("train_batch_sequences", r.get("global_batch_size")),
        step_sequences=r.get("generated_sequences", r.get("global_batch_size")), param_offload=False,
        grad_offload=False, optimizer_offload=False, optimizer_cpu_offload=False, optimizer_offload_fraction=0.0,
        grad_bytes=FP32, optimizer_bytes=12, recompute_granularity=r.get("recompute"), recompute_method=None,
        recompute_num_layers=None, sequence_parallel=True, uses_reference=bool(r.get("reference", False)),
        mtp_layers=0, gpu_memory_utilization=r.get("gpu_memory_utilization", 0.6),
        max_num_seqs=r.get("max_num_seqs", 256), log_prob_max_token_len=r.get("max_token_len"),
    )  # fmt: skip


def shipped_row(row: Mapping[str, Any]) -> Row:
    """A published measurement as the model sees it: a pre-training iteration is one `update_actor` of
    `global_batch_size` sequences; a GRPO row is a whole colocated step."""
    m, r, hw = row_facts(row), row["run"], row["hardware"]
    lo = Layout(
        r["nodes"], r["devices_per_node"], r["tp"], r["pp"], r["cp"], r["ep"], r.get("etp", 1), r.get("vpp"),
        r.get("gen_tp", 1), r.get("gen_dp", 1), 1, r.get("gen_ep", 1),
    )  # fmt: skip
    s, rates = _settings(r, hw), Rates.of(hw)
    # The run's megatron `overlap_moe_expert_parallel_comm`, where its source says the expert all-to-all overlaps.
    recipe = Recipe(overlap_ep=bool(r.get("overlap_moe_expert_parallel_comm", False)))
    if row["kind"] == "pretrain":
        terms = {"update_actor": training_terms(m, lo, s, rates, recipe)[0]["update_actor"]}
    else:
        t = step_time(m, lo, s, estimate_layout(m, lo, s), rates, UNIT, recipe)
        terms = {p: ab for p, ab in t.terms.items() if ab != (0.0, 0.0)}
    measured = {str(k): float(v) for k, v in row["phases"].items()}
    fitted = frozenset(row.get("fit", list(measured)) or [])
    return Row(row["id"], terms, measured, fitted, " ".join(row["source"].split()), hw.get("name", ""))


UNIT = Calibration(efficiency=dict.fromkeys(CONSTANTS, 1.0), band={p: (1.0, 1.0) for p in PHASES}, source="-", rows=0)


@functools.cache
def shipped_rows() -> tuple[Row, ...]:
    return tuple(shipped_row(row) for row in load_measurements())


@functools.cache
def shipped() -> Calibration:
    """The calibration of the published rows (verl_qwen35/data/calibration/measurements.yaml), once per process."""
    rows = [r for r in shipped_rows() if r.fitted]
    return calibrate(rows, "verl_qwen35/data/calibration/measurements.yaml (published runs)")


def run_row(name: str, cfg: Any, measured: Mapping[str, float], response_mean: int | None = None) -> Row:
    """A user's run as a row: its recorded config's terms, responses at the mean length it logged (`response_mean`,
    verl's `response_length/mean`; else the config's), and the median seconds of the phases it measured."""
    m, s = read_inputs(cfg)
    lo = Layout.of(cfg)
    recipe = Recipe.of(cfg)
    if response_mean:
        recipe = dataclasses.replace(recipe, response_length=response_mean)
    t = step_time(m, lo, s, estimate_layout(m, lo, s), Rates.of(cfg.hardware), UNIT, recipe)
    terms = {p: ab for p, ab in t.terms.items() if ab != (0.0, 0.0)}
    kept = {p: float(v) for p, v in measured.items() if p in terms}
    return Row(name, terms, kept, frozenset(kept), name, str(cfg.hardware.get("name", "")))


def fit_lines(cal: Calibration, rows: Sequence[Row], fallback: Mapping[str, float] | None = None) -> list[str]:
    """The fit as `scripts/calibrate.py` and `verl-qwen35 calibrate` print it: the efficiencies, each phase's band,
    and every row's measured, predicted and leave-one-out measured / predicted seconds."""
    from tabulate import tabulate

    loo = {(r.id, p): ratio for r, p, ratio in leave_one_out([r for r in rows if r.fitted], fallback)}
    body = []
    for row in rows:
        for phase, measured in row.measured.items():
            ratio = loo.get((row.id, phase))
            body.append((
                row.id, row.hardware, phase, "yes" if phase in row.fitted else "no", f"{measured:.1f}",
                f"{row.predict(cal.efficiency, phase):.1f}", "-" if ratio is None else f"{ratio:.2f}",
            ))  # fmt: skip
    head = ("row", "hardware", "phase", "fitted", "measured s", "predicted s", "leave-one-out measured/predicted")
    return [
        "fitted: " + " ".join(f"{k}={v:.4f}" for k, v in cal.efficiency.items()),
        "bands (measured / predicted): " + ", ".join(f"{p} {lo:.2f}-{hi:.2f}" for p, (lo, hi) in cal.band.items()),
        tabulate(body, headers=head, tablefmt="plain", disable_numparse=True),
    ]


# -- a user's calibration file (written by `verl-qwen35 calibrate`) -----------------------------------------

MAX_FILE_BYTES = 1 << 20


def _ratio_pair(value: Any, where: str) -> tuple[float, float]:
    ok = isinstance(value, list) and len(value) == 2 and all(_positive(v) for v in value) and value[0] <= value[1]
    if not ok:
        raise InputError("plan.calibration", f"{where}: expected [low, high] ratios > 0, got {value!r}")
    return float(value[0]), float(value[1])


def _positive(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and 0 < v < float("inf")


def read_file(path: str) -> Calibration:
    """A calibration file as plain data (yaml.safe_load, bounded size); a broken one names plan.calibration."""
    where = f"plan.calibration={path}"
    try:
        with open(path, "rb") as f:
            text = f.read(MAX_FILE_BYTES + 1)
    except OSError as err:
        raise InputError("plan.calibration", f"{where}: cannot read it ({err.strerror})") from None
    if len(text) > MAX_FILE_BYTES:
        raise InputError("plan.calibration", f"{where}: larger than {MAX_FILE_BYTES} bytes, not a calibration")
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError:
        data = None
    node = data.get("calibration") if isinstance(data, dict) else None
    if (
        not isinstance(node, dict)
        or not isinstance(node.get("efficiency"), dict)
        or not isinstance(node.get("band"), dict)
    ):
        raise InputError("plan.calibration", f"{where}: not a file of verl-qwen35 calibrate (no calibration: node)")
    eff, band = dict(shipped().efficiency), dict(shipped().band)
    for name, value in node["efficiency"].items():
        if name not in CONSTANTS or not _positive(value) or value > 1:
            raise InputError(
                "plan.calibration", f"{where}: efficiency.{name}={value!r} is not one of {CONSTANTS} in (0, 1]"
            )
        eff[name] = float(value)
    for phase, value in node["band"].items():
        if phase not in PHASES:
            raise InputError("plan.calibration", f"{where}: band.{phase}: not one of {PHASES}")
        band[phase] = _ratio_pair(value, f"{where}: band.{phase}")
    runs = node.get("runs")
    count = len(runs) if isinstance(runs, list) else 0
    return Calibration(efficiency=eff, band=band, source=str(path), rows=count)


def as_yaml(cal: Calibration, runs: list[str]) -> str:
    node = {
        "efficiency": {k: round(v, 6) for k, v in cal.efficiency.items()},
        "band": {k: [round(lo, 4), round(hi, 4)] for k, (lo, hi) in cal.band.items()},
        "runs": runs,
    }
    head = (
        "# Written by verl-qwen35 calibrate: the step-time model's efficiencies fitted to these runs' timings,\n"
        "# each phase's band from their leave-one-out error (shipped values where the runs measure too little).\n"
        "# Use it with plan.calibration=<this file> (the dry run, verl-qwen35 plan and report).\n"
    )
    return head + yaml.safe_dump({"calibration": node}, sort_keys=False)


def calibration_of(cfg: Any) -> Calibration:
    """The calibration a config chooses: `plan.calibration` (a file of `verl-qwen35 calibrate`), else the shipped."""
    plan = cfg.get("plan") if hasattr(cfg, "get") else None
    path = plan.get("calibration") if hasattr(plan, "get") else None
    return read_file(str(path)) if path else shipped()
