"""The step-time model's efficiencies and error bands per device kind, fitted on measured phases (published rows or
a user's runs).

A measurement names the phases it measured (verl's `timing_s/gen`, `old_log_prob`, `ref`, `update_actor`,
`update_weights`; `step` for a published total). Each phase's prediction is `a / efficiency + b`
(model/step_time.py), so the efficiency that makes one measured phase exact is `a / (measured - b)`; a constant
is the median of those values over the rows that measure its phases (a `step` row fits `gen`, the other phases at
their fitted values). Without rows, `log_prob` takes the `update` constant of the same device (the same forward
kernels) and any other constant the shipped fit's.

Per device kind (the `device` of a row's hardware, `gpu` or `npu`, as in conf/hardware/*.yaml; a config's
`trainer.device`): a constant true of one backend is not applied to another. A GPU prediction uses the GPU rows
only. An NPU prediction uses the constants its NPU rows measure; a constant none of them measures is the GPU
constant times the NPU rows' common factor (their measured constants over the GPU's) where those factors agree
within AGREE: the stack then runs every measured kernel at one share of the GPU rows' share of peak, and the
unmeasured phase most likely does too. Where the factors differ by phase (the Ascend rows' rollouts run at ~0.6x
the GPU rows' share, their training passes at ~0.2-0.3x), nothing says which one the unmeasured phase shares, and it
takes the GPU constant.

The band is not chosen: every row is predicted by a fit that did not see it (leave-one-out), and a phase's band is
the central 80% of its rows' measured / predicted ratios: the 10th to the 90th percentile (nearest rank: the
lowest and highest tenth of the ratios, rounded down, left out; 1 included). It holds at least 8 of every 10
published runs predicted without themselves, not the most extreme one of ten (scripts/calibrate.py prints how many
each band holds); with fewer than ten rows nothing is left out. A phase needs
MIN_BAND_ROWS rows of its device kind for a band of its own; with fewer, an NPU phase takes the GPU phase's band
(its rows' ratios were predicted by the GPU fit, an error the NPU fit no longer makes), a user's phase the shipped
band of its device kind, and a GPU phase the band of all GPU ratios together (of phases two or more rows measure)
stretched to hold its own.

A user's runs (`verl-qwen35 calibrate`: several layouts of one stack, e.g. a trial sweep) fit the same way, with a
band of their own where two or more of them measure a phase: each run predicted by the fit of the others (its error
across layouts) times the run's own step-to-step spread (10th and 90th percentile of its steps over their median),
the band the envelope of those products, 1 included (fewer than ten runs: none left out). One run gives no error
across layouts: its phases keep the published band, and the output says so. A phase whose measurement is at or
below the model's fixed part (`b`: collectives, offload, the sync's gathers) fits nothing; `unfitted` names it and
the efficiency it keeps.
"""

import copy
import dataclasses
import functools
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from verl_qwen35.config.yaml_files import parse_yaml, read_limited
from verl_qwen35.data import DATA_DIR
from verl_qwen35.errors import UserError
from verl_qwen35.installed import conf_dir
from verl_qwen35.model.layout import Layout, device_of
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
    model_bytes,
    phase_seconds,
    step_time,
    training_terms,
)

SHIPPED = DATA_DIR / "calibration" / "measurements.yaml"
# Where a fit starts and what a constant falls back to when no row measures it (not used by the shipped fit,
# whose every constant has rows, but by a fit of rows that lack some phase).
START = {"gen": 0.5, "log_prob": 0.3, "update": 0.3, "update_weights": 0.75}
FIT_ORDER = ("update", "log_prob", "update_weights", "gen")
# Device kinds as conf/hardware/*.yaml's `device` and verl's `trainer.device` name them; GPU is the kind most rows
# measure, the one another kind falls back to.
DEVICES = ("gpu", "npu")
REFERENCE = "gpu"
# An assumption, not a fit: factors within 1.5x of each other are one factor (the GPU rows' own ratios of one
# phase spread wider than that).
AGREE = 1.5
MIN_BAND_ROWS = 3  # fewer rows give no spread to speak of
BAND_TAIL_PERCENT = 10  # the band: the 10th to the 90th percentile of the leave-one-out ratios


@dataclass(frozen=True)
class Row:
    """One measurement: its phases' terms (a, b) as the model computes them, and the seconds measured."""

    id: str
    terms: dict[str, Terms]
    measured: dict[str, float]  # phase (or "step") -> seconds
    fitted: frozenset[str]  # the measured phases the fit uses
    source: str = ""
    hardware: str = ""
    device: str = REFERENCE  # the device kind it ran on (DEVICES)
    extra: dict[str, Any] = field(default_factory=dict)
    model_bytes: float = 0.0  # bf16 bytes of the model: the weight sync's size
    # A user's run: the lengths it logged (prompt, response mean, longest) and each phase's step-to-step spread
    # (its steps' 10th and 90th percentile over their median).
    lengths: dict[str, int] = field(default_factory=dict)
    spread: dict[str, tuple[float, float]] = field(default_factory=dict)

    def predict(self, eff: Mapping[str, float], phase: str) -> float:
        if phase == "step":
            return sum(self.predict(eff, p) for p in self.terms)
        return phase_seconds({phase: self.terms[phase]}, eff)[phase]


def _phase(measured: str) -> str:
    """The phase a measurement's band and constant are those of (a whole `step` fits `gen`)."""
    return "gen" if measured == "step" else measured


def _own(row: Row, phase: str, eff: Mapping[str, float]) -> float | None:
    """The efficiency that makes this row's `phase` (a `step` row: its gen) equal its measurement."""
    measured = row.measured[phase]
    target = _phase(phase)
    if phase == "step":
        measured -= sum(row.predict(eff, p) for p in row.terms if p != "gen")
    a, b = row.terms[target]
    if a <= 0 or measured <= b:
        return None
    return min(1.0, a / (measured - b))


def fit(rows: Iterable[Row], fallback: Mapping[str, float] | None = None) -> dict[str, float]:
    """One efficiency per constant from rows of one device kind: the median of each row's own value (see the
    module's docstring)."""
    rows = list(rows)
    eff = dict(fallback or START)
    for constant in FIT_ORDER:
        values = []
        for row in rows:
            for phase in row.fitted:
                if CONSTANT[_phase(phase)] == constant:
                    value = _own(row, phase, eff)
                    values += [value] if value is not None else []
        if values:
            eff[constant] = statistics.median(values)
        elif constant == "log_prob":
            eff[constant] = eff["update"]
    return eff


def unfitted(rows: Iterable[Row], eff: Mapping[str, float]) -> list[tuple[Row, str, float, float]]:
    """(row, phase, measured, fixed part) of every fitted measurement at or below the model's fixed part (`b`, for a
    `step` the other phases too): it gives no efficiency, the fit keeps what the others give (or the base)."""
    out = []
    for row in rows:
        for phase in sorted(row.fitted):
            if _own(row, phase, eff) is None and row.terms[_phase(phase)][0] > 0:
                fixed = row.terms[_phase(phase)][1]
                if phase == "step":
                    fixed += sum(row.predict(eff, p) for p in row.terms if p != "gen")
                out.append((row, phase, row.measured[phase], fixed))
    return out


def unfitted_lines(rows: Iterable[Row], cal: Calibration) -> list[str]:
    """`unfitted` as the output says it."""
    return [
        f"  {row.id}: {phase} measured {measured:.2f} s is at or below the model's fixed part {fixed:.2f} s "
        f"(collectives, offload, gathers): it fits nothing; {CONSTANT[_phase(phase)]} keeps "
        f"{cal.efficiency[CONSTANT[_phase(phase)]]:.4f} from the other rows or the published fit"
        for row, phase, measured, fixed in unfitted(rows, cal.efficiency)
    ]


def measured_constants(rows: Iterable[Row]) -> set[str]:
    return {CONSTANT[_phase(p)] for row in rows for p in row.fitted}


def common_factor(own: Mapping[str, float], reference: Mapping[str, float], constants: Iterable[str]) -> float | None:
    """The one factor by which `own`'s measured constants differ from the reference's, where they agree within
    AGREE (their geometric mean); None where they differ by phase."""
    factors = [own[c] / reference[c] for c in sorted(constants)]
    if not factors or max(factors) > AGREE * min(factors):
        return None
    return statistics.geometric_mean(factors)


def fit_device(rows: Iterable[Row], device: str, fallback: Mapping[str, float] | None = None) -> dict[str, float]:
    """The efficiencies of a `device` prediction (the module's docstring): the GPU rows' fit for a GPU; for
    another kind its own rows' fit, a constant they do not measure from the GPU rows' fit (times their common
    factor where there is one). `fallback`: the constants no row of either kind measures."""
    rows = list(rows)
    reference_rows = [r for r in rows if r.device == REFERENCE]
    reference = fit(reference_rows, fallback)
    own = [r for r in rows if r.device == device]
    if device == REFERENCE or not own:
        return reference
    first = fit(own, reference)
    measured = measured_constants(own)
    factor = common_factor(first, reference, measured) if reference_rows else None
    if factor is None:
        return first
    scaled = {c: v if c in measured else min(1.0, v * factor) for c, v in reference.items()}
    return fit(own, scaled)  # again: a `step` row's gen is fitted with the other phases at their scaled values


def leave_one_out(
    rows: list[Row], fallback: Mapping[str, float] | None = None, device: str = REFERENCE
) -> list[tuple[Row, str, float]]:
    """(row, phase, measured / predicted) of every fitted measurement of a `device` row, predicted by the
    `device` fit of the other rows."""
    out = []
    for i, row in enumerate(rows):
        if row.device != device:
            continue
        eff = fit_device(rows[:i] + rows[i + 1 :], device, fallback)
        out += [(row, phase, row.measured[phase] / row.predict(eff, phase)) for phase in sorted(row.fitted)]
    return out


def interval(ratios: Sequence[float]) -> tuple[float, float]:
    """The 10th to 90th percentile of the ratios by nearest rank, outward: the lowest and the highest tenth of
    them (rounded down) left out, 1 included. Rounded down, so the band holds at least 80% of the ratios it is
    made of; an interpolated percentile (`statistics.quantiles`) cuts inside the outermost kept ratios and holds
    2 of 4 (its inclusive method) or reaches past the data (its exclusive method) with few rows."""
    ordered = sorted(ratios)
    if not ordered:
        return 1.0, 1.0
    cut = len(ordered) * BAND_TAIL_PERCENT // 100
    return min(1.0, ordered[cut]), max(1.0, ordered[-1 - cut])


def by_phase(loo: Iterable[tuple[Row, str, float]]) -> dict[str, list[float]]:
    """Each phase's leave-one-out ratios (a `step` row's count for `gen`)."""
    out: dict[str, list[float]] = {p: [] for p in PHASES}
    for _, measured, ratio in loo:
        out[_phase(measured)].append(ratio)
    return out


def bands(
    loo: list[tuple[Row, str, float]], fallback: Mapping[str, tuple[float, float]] | None = None
) -> dict[str, tuple[float, float]]:
    """Each phase's band from its rows' leave-one-out ratios (`interval`); a phase of fewer than MIN_BAND_ROWS
    takes `fallback`'s band, without one the band of every phase's ratios together (`pooled`) stretched to hold
    its own (of fewer than ten ratios `interval` leaves none out either)."""
    ratios = by_phase(loo)
    out = {}
    for phase in PHASES:
        if len(ratios[phase]) >= MIN_BAND_ROWS:
            out[phase] = interval(ratios[phase])
        elif fallback is not None:
            out[phase] = fallback[phase]
        else:
            low, high = interval(pooled(loo))
            out[phase] = min([low, *ratios[phase]]), max([high, *ratios[phase]])
    return out


def pooled(loo: list[tuple[Row, str, float]]) -> list[float]:
    """Every phase's ratios together, but those of a phase one row measures (a fit of no row of it predicted it)."""
    return [r for values in by_phase(loo).values() if len(values) >= 2 for r in values]


def coverage(loo: list[tuple[Row, str, float]], band: Mapping[str, tuple[float, float]]) -> dict[str, tuple[int, int]]:
    """Each phase's (held, of): how many of its rows' leave-one-out ratios lie inside its band."""
    return {
        p: (sum(1 for r in values if band[p][0] <= r <= band[p][1]), len(values)) for p, values in by_phase(loo).items()
    }


def calibrate(rows: list[Row], source: str, device: str = REFERENCE, base: Calibration | None = None) -> Calibration:
    """The calibration of `device` these rows give; constants and bands they cannot fit come from `base`
    (a user's runs: the shipped calibration of their device kind), else from the GPU rows (module docstring)."""
    fallback = base.efficiency if base else None
    band_base = base.band if base else None
    if base is None and device != REFERENCE:
        band_base = calibrate(rows, source, REFERENCE).band
    loo = leave_one_out(rows, fallback, device)
    band = bands(loo, band_base)
    if base is not None:
        band = {**band, **own_bands(loo)}
    used = [r for r in rows if r.device in (device, REFERENCE)]
    own = [r for r in rows if r.device == device]
    support = {
        c: tuple(r.id for r in own if any(CONSTANT[_phase(p)] == c for p in r.fitted)) for c in measured_constants(own)
    }
    if base is not None:  # what the runs do not fit rests on the base's rows
        support = {**base.support, **support}
    sizes = [r.model_bytes for r in rows if r.model_bytes and "update_weights" in r.fitted and r.device == device]
    sizes = sizes or [r.model_bytes for r in rows if r.model_bytes and "update_weights" in r.fitted]
    sync = (min(sizes), max(sizes)) if sizes else (base.sync_bytes if base else None)
    return Calibration(
        fit_device(rows, device, fallback), band, source, len(used), device, len(own),
        lengths=run_lengths(own), support=support, sync_bytes=sync,
    )  # fmt: skip


def own_bands(loo: list[tuple[Row, str, float]]) -> dict[str, tuple[float, float]]:
    """The bands a user's runs earn (module docstring): for each phase two or more of them measure, the envelope of
    every run's leave-one-out ratio times its step-to-step spread, 1 included."""
    by: dict[str, list[tuple[float, float]]] = {}
    for row, phase, ratio in loo:
        low, high = row.spread.get(phase, (1.0, 1.0))
        by.setdefault(_phase(phase), []).append((ratio * low, ratio * high))
    return {p: (min(1.0, *(lo for lo, _ in v)), max(1.0, *(hi for _, hi in v))) for p, v in by.items() if len(v) >= 2}


def run_lengths(rows: Sequence[Row]) -> dict[str, int] | None:
    """The lengths user runs logged (each the median over the runs that logged it); None: no run logged them."""
    out = {}
    for key in ("prompt", "response", "longest"):
        values = [r.lengths[key] for r in rows if r.lengths.get(key)]
        if values:
            out[key] = round(statistics.median(values))
    return out if out.get("response") else None


# -- the shipped rows -----------------------------------------------------------------------------------


def load_measurements() -> list[dict[str, Any]]:
    return yaml.safe_load(SHIPPED.read_text())["measurements"]


def row_hardware(row: Mapping[str, Any]) -> dict[str, Any]:
    """A row's machine: `preset: NAME` is conf/hardware/NAME.yaml, the one place its numbers and sources live (the
    keys beside it override them: the H800 is an H100 with slower NVLink); else the keys as written."""
    hw = dict(row["hardware"])
    preset = hw.pop("preset", None)
    if preset is None:
        return hw
    return {**copy.deepcopy(hardware_preset(preset)), **hw}


@functools.cache
def hardware_preset(name: str) -> dict[str, Any]:
    """conf/hardware/NAME.yaml without its sources, read once a process (the shipped rows name a few presets
    many times); callers copy it."""
    base = yaml.safe_load((conf_dir() / "hardware" / f"{name}.yaml").read_text())
    base.pop("sources", None)
    return base


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
        response_cap=r.get("max_response_length"),
    )  # fmt: skip


def shipped_row(row: Mapping[str, Any]) -> Row:
    """A published measurement as the model sees it: a pre-training iteration is one `update_actor` of
    `global_batch_size` sequences; a GRPO row is a whole colocated step; a serving benchmark (`serve`) is one
    `gen` of `generated_sequences` (its engines' layout stands in for the training layout it does not have)."""
    m, r, hw = row_facts(row), row["run"], row_hardware(row)
    if row["kind"] == "serve":
        r = {**r, "tp": r["gen_tp"], "pp": 1, "cp": 1, "ep": r.get("gen_ep", 1)}
        r.setdefault("train_batch_sequences", r["generated_sequences"])
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
        kept = ("gen",) if row["kind"] == "serve" else PHASES
        terms = {p: ab for p, ab in t.terms.items() if p in kept and ab != (0.0, 0.0)}
    measured = {str(k): float(v) for k, v in row["phases"].items()}
    fitted = frozenset(row.get("fit", list(measured)) or [])
    device = hw["device"]  # the hardware anchor's kind, as conf/hardware/*.yaml's `device`
    if device not in DEVICES:
        raise ValueError(f"{SHIPPED}: {row['id']}: hardware.device={device!r} is not one of {DEVICES}")
    source = " ".join(row["source"].split())
    return Row(row["id"], terms, measured, fitted, source, hw.get("name", ""), device, model_bytes=model_bytes(m))


UNIT = Calibration(efficiency=dict.fromkeys(CONSTANTS, 1.0), band={p: (1.0, 1.0) for p in PHASES}, source="-", rows=0)


@functools.cache
def shipped_rows() -> tuple[Row, ...]:
    return tuple(shipped_row(row) for row in load_measurements())


@functools.cache
def shipped(device: str = REFERENCE) -> Calibration:
    """The calibration of the published rows (verl_qwen35/data/calibration/measurements.yaml) for one device kind,
    once per process and kind."""
    rows = [r for r in shipped_rows() if r.fitted]
    return calibrate(rows, "verl_qwen35/data/calibration/measurements.yaml (published runs)", device)


def run_row(
    name: str,
    cfg: Any,
    measured: Mapping[str, float],
    lengths: Mapping[str, int] | None = None,
    spread: Mapping[str, tuple[float, float]] | None = None,
) -> Row:
    """A user's run as a row: its recorded config's terms at the lengths it logged (`lengths`: `prompt`, verl's
    prompt_length/mean; `response`, response_length/mean; `longest`, response_length/max; else the config's maxima,
    never the recorded plan.calibration's), the median seconds of the phases it measured and their step spread."""
    m, s = read_inputs(cfg)
    lo = Layout.of(cfg)
    given = dict(lengths or {})
    recipe = dataclasses.replace(
        Recipe.of(cfg),
        **({"response_length": given["response"]} if given.get("response") else {}),
        **({"prompt_length": given["prompt"]} if given.get("prompt") else {}),
        **({"longest_response": given["longest"]} if given.get("longest") else {}),
        lengths_from="the run's own log" if given else None,
    )
    t = step_time(m, lo, s, estimate_layout(m, lo, s), Rates.of(cfg.hardware), UNIT, recipe)
    terms = {p: ab for p, ab in t.terms.items() if ab != (0.0, 0.0)}
    kept = {p: float(v) for p, v in measured.items() if p in terms}
    own = {p: v for p, v in (spread or {}).items() if p in kept}
    hardware = str(cfg.hardware.get("name", ""))
    return Row(
        name, terms, kept, frozenset(kept), name, hardware, device_of(cfg), model_bytes=model_bytes(m),
        lengths={k: int(v) for k, v in given.items() if v}, spread=own,
    )  # fmt: skip


def fit_lines(cal: Calibration, rows: Sequence[Row], fallback: Mapping[str, float] | None = None) -> list[str]:
    """The fit of `cal.device` as `scripts/calibrate.py` and `verl-qwen35 calibrate` print it: the efficiencies,
    each phase's band with how many of its rows' leave-one-out ratios it holds, and every row of that device's
    measured, predicted and leave-one-out measured / predicted seconds (`fallback`: a user's base efficiencies)."""
    from tabulate import tabulate

    held_out = leave_one_out([r for r in rows if r.fitted], fallback, cal.device)
    loo = {(r.id, p): ratio for r, p, ratio in held_out}
    body = []
    for row in rows:
        if row.device != cal.device:
            continue
        for phase, measured in row.measured.items():
            ratio = loo.get((row.id, phase))
            body.append((
                row.id, row.hardware, phase, "yes" if phase in row.fitted else "no", f"{measured:.1f}",
                f"{row.predict(cal.efficiency, phase):.1f}", "-" if ratio is None else f"{ratio:.2f}",
            ))  # fmt: skip
    if fallback is not None:
        borrowed = "the published band"
    elif cal.device != REFERENCE:
        borrowed = f"the {REFERENCE} band"
    else:
        pool = pooled(held_out)
        inside = sum(1 for r in pool if interval(pool)[0] <= r <= interval(pool)[1])
        borrowed = f"the band of all {len(pool)} {cal.device} ratios together, {inside} inside it"
    counts = coverage(held_out, cal.band)
    lines = []
    for phase, (lo, hi) in cal.band.items():
        held, of = counts[phase]
        says = f"holds {held} of its {of} {cal.device} ratios" if of else f"no {cal.device} row measures it"
        stretched = ", stretched to hold its own" if of and fallback is None and cal.device == REFERENCE else ""
        whence = f" (fewer than {MIN_BAND_ROWS}: {borrowed}{stretched})" if of < MIN_BAND_ROWS else ""
        lines.append(f"  {phase} {lo:.2f}-{hi:.2f}: {says}{whence}")
    held = sum(h for h, _ in counts.values())
    head = ("row", "hardware", "phase", "fitted", "measured s", "predicted s", "leave-one-out measured/predicted")
    return [
        f"device {cal.device}: {cal.describe()}",
        "fitted: " + " ".join(f"{k}={v:.4f}" for k, v in cal.efficiency.items()),
        f"bands (measured / predicted: the {BAND_TAIL_PERCENT}th to {100 - BAND_TAIL_PERCENT}th percentile of "
        f"the rows' leave-one-out ratios, 1 included; they hold {held} of {len(held_out)}):",
        *lines,
        *(
            [
                f"  ({cal.device} rows held out: predicted by the other {cal.device} rows' fit where they measure the "
                f"phase, else by the {REFERENCE} fit; the band is not made of them)"
            ]
            if cal.device != REFERENCE and fallback is None
            else []
        ),
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


def read_file(path: str, device: str | None = None) -> Calibration:
    """A calibration file as plain data (the one reader, config/yaml_files.py); a broken one names plan.calibration.
    What it does not hold comes from the shipped calibration of the device kind its runs ran on (the file's
    `device`, else `device`); a file of one kind is refused for a config of another (`device`)."""
    where = f"plan.calibration={path}"
    try:  # the one reader: a regular file only (a FIFO is refused, not waited on), bounded size, aliases and depth
        raw = read_limited(Path(path), MAX_FILE_BYTES, "calibration")
        data = parse_yaml(raw.decode("utf-8"), Path(path))
    except UnicodeDecodeError:
        raise InputError("plan.calibration", f"{where}: a binary file, not a calibration") from None
    except UserError as err:
        raise InputError(
            "plan.calibration", f"{where}: cannot read it ({str(err).removeprefix(f'{path}: ')})"
        ) from None
    node = data.get("calibration") if isinstance(data, dict) else None
    if (
        not isinstance(node, dict)
        or not isinstance(node.get("efficiency"), dict)
        or not isinstance(node.get("band"), dict)
    ):
        raise InputError("plan.calibration", f"{where}: not a file of verl-qwen35 calibrate (no calibration: node)")
    kind = node.get("device", device or REFERENCE)
    if kind not in DEVICES:
        raise InputError("plan.calibration", f"{where}: device={kind!r} is not one of {DEVICES}")
    if device is not None and kind != device:
        raise InputError(
            "plan.calibration",
            f"{where}: fitted on {kind} runs, but this config runs on {device} (trainer.device): efficiencies "
            f"do not carry from one device kind to another; calibrate on {device} runs or unset plan.calibration",
        )
    eff, band = dict(shipped(kind).efficiency), dict(shipped(kind).band)
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
    lengths = node.get("lengths")
    if lengths is not None:
        if not isinstance(lengths, dict) or not all(k in LENGTHS and _positive(v) for k, v in lengths.items()):
            raise InputError("plan.calibration", f"{where}: lengths must map {', '.join(LENGTHS)} to token counts > 0")
        lengths = {k: int(v) for k, v in lengths.items()} if lengths.get("response") else None
    support, shipped_support = node.get("support"), dict(shipped(kind).support)
    if isinstance(support, dict):
        for name, ids in support.items():
            if name not in CONSTANTS or not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
                raise InputError("plan.calibration", f"{where}: support.{name}: expected a list of run names")
            shipped_support[name] = tuple(ids)
    raw = node.get("sync_bytes")
    sync = _ratio_pair(raw, f"{where}: sync_bytes") if raw is not None else shipped(kind).sync_bytes
    return Calibration(
        efficiency=eff, band=band, source=str(path), rows=count, device=kind, lengths=lengths,
        support=shipped_support, sync_bytes=sync,
    )  # fmt: skip


LENGTHS = ("prompt", "response", "longest")


def as_yaml(cal: Calibration, runs: list[str]) -> str:
    node = {
        "device": cal.device,
        "efficiency": {k: round(v, 6) for k, v in cal.efficiency.items()},
        "band": {k: [round(lo, 4), round(hi, 4)] for k, (lo, hi) in cal.band.items()},
        "runs": runs,
        "support": {k: list(v) for k, v in cal.support.items()},
    }
    if cal.lengths:
        node["lengths"] = dict(cal.lengths)
    if cal.sync_bytes:
        node["sync_bytes"] = [float(cal.sync_bytes[0]), float(cal.sync_bytes[1])]
    head = (
        "# Written by verl-qwen35 calibrate: the step-time model's efficiencies fitted to these runs' timings,\n"
        "# each phase's band the 10th-90th percentile of their leave-one-out error (the shipped values of their\n"
        "# device kind where the runs measure too little). Use it with plan.calibration=<this file> (the dry run,\n"
        f"# verl-qwen35 plan and report) for configs of device={cal.device} only. `lengths`: the mean prompt, mean\n"
        "# and longest response the runs logged; predictions are made at them unless plan.response_length is set.\n"
    )
    return head + yaml.safe_dump({"calibration": node}, sort_keys=False)


def calibration_of(cfg: Any) -> Calibration:
    """The calibration a config chooses: `plan.calibration` (a file of `verl-qwen35 calibrate`), else the shipped
    one of its device kind (`trainer.device`)."""
    plan = cfg.get("plan") if hasattr(cfg, "get") else None
    path = plan.get("calibration") if hasattr(plan, "get") else None
    device = device_of(cfg)
    return read_file(str(path), device) if path else shipped(device)
