"""Score the step-time model against published runs it was not fitted on, and `calibrate` against pairs and sets
of runs of one stack.

    python scripts/step_time_audit.py

1. Held-out runs (verl_qwen35/data/calibration/held_out.yaml, each with its source): per run the predicted step,
   its band, the measured step and whether the band holds it, the update_weights share; then how many the bands
   hold and their median half-width ((high - low) / 2 / predicted).
2. Calibrate pairs: one run of a stack calibrates (the shipped fit without the other run as its base, as a user's
   `calibrate` would see it), the other run of the stack is predicted: measured / predicted and whether the
   calibrated band holds it.
3. Sets of one stack (several layouts of one recipe): each run predicted by a calibration of the others, with the
   calibrated band (`calibrate` over several runs) and whether it holds.

Prints numbers only; asserts nothing (the tests hold the model to its behaviour, this script to its record).
"""

import statistics
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from verl_qwen35.data import DATA_DIR  # noqa: E402
from verl_qwen35.model.calibration import Calibration, Row, calibrate, shipped_row, shipped_rows  # noqa: E402
from verl_qwen35.model.step_time import phase_band  # noqa: E402

HELD_OUT = DATA_DIR / "calibration" / "held_out.yaml"
# (calibrating run, predicted run): two runs of one stack (recipe, software, hardware kind); ids of either file.
PAIRS = (
    ("nemo-rl-v06-qwen3-235b-grpo-h100-128", "nemo-rl-v06-qwen3-235b-grpo-h100-256"),
    ("nemo-rl-v06-qwen3-235b-grpo-gb200-64", "nemo-rl-v06-qwen3-235b-grpo-gb200-128"),
    ("nemo-rl-v06-deepseek-v3-h100-256", "nemo-rl-v06-deepseek-v3-h100-512"),
    ("nemo-rl-v06-deepseek-v3-gb200-128", "nemo-rl-v06-deepseek-v3-gb200-256"),
    ("nemo-rl-v05-qwen3-30b-h100-32", "nemo-rl-v06-qwen3-30b-grpo-h100"),
    ("nemo-rl-v05-deepseek-v3-h100-256", "nemo-rl-v06-deepseek-v3-h100-256"),
    ("nemo-rl-v04-llama31-8b-h100-16", "nemo-rl-v05-llama31-8b-h100-16"),
    ("nemo-rl-v05-qwen3-32b-h100-32", "nemo-rl-v04-qwen3-32b-h100-32"),
    ("mbridge-qwen3-30b-h100-bf16", "mbridge-qwen36-35b-h100-bf16"),
    ("mbridge-qwen3-235b-gb200-bf16", "mbridge-qwen3-235b-gb300-bf16"),
    ("cann-qwen3-235b-grpo-a3-128die", "cann-qwen3-235b-dapo-a3-128die"),
)
# Several layouts (or cluster sizes) of one recipe on one hardware kind.
SETS = (
    ("DeepSeek-V3 H100", ("nemo-rl-v05-deepseek-v3-h100-256", "nemo-rl-v06-deepseek-v3-h100-256",
                          "nemo-rl-v06-deepseek-v3-h100-512", "nemo-rl-v04-deepseek-v3-h100-256")),
    ("DeepSeek-V3 GB200", ("nemo-rl-v05-deepseek-v3-gb200-128", "nemo-rl-v06-deepseek-v3-gb200-128",
                           "nemo-rl-v06-deepseek-v3-gb200-256")),
    ("Qwen3-235B H100", ("nemo-rl-qwen3-235b-grpo-h100", "nemo-rl-v05-qwen3-235b-h100-128",
                         "nemo-rl-v06-qwen3-235b-grpo-h100-128", "nemo-rl-v06-qwen3-235b-grpo-h100-256")),
    ("Qwen3-235B GB200", ("nemo-rl-v05-qwen3-235b-gb200-64", "nemo-rl-v06-qwen3-235b-grpo-gb200-64",
                          "nemo-rl-v06-qwen3-235b-grpo-gb200-128")),
    ("Qwen3-30B H100", ("nemo-rl-qwen3-30b-grpo-h100", "nemo-rl-v05-qwen3-30b-h100-32",
                        "nemo-rl-v06-qwen3-30b-grpo-h100")),
)  # fmt: skip


def held_out_rows() -> list[Row]:
    return [shipped_row(row) for row in yaml.safe_load(HELD_OUT.read_text())["measurements"]]


def measured_phase(row: Row) -> str:
    return "step" if "step" in row.measured else next(iter(row.measured))


def predicted(row: Row, cal: Calibration) -> tuple[float, float, float]:
    """(point, low, high) seconds of the row's measured phase (a `step`: every phase) under `cal`."""
    phase = measured_phase(row)
    phases = list(row.terms) if phase == "step" else [phase]
    seconds = {p: row.predict(cal.efficiency, p) for p in phases}
    floor = row.terms["update_weights"][1] if "update_weights" in row.terms else 0.0
    bands = {p: phase_band(cal, p, v, floor, row.model_bytes) for p, v in seconds.items()}
    low = sum(v * bands[p][0] for p, v in seconds.items())
    high = sum(v * bands[p][1] for p, v in seconds.items())
    return sum(seconds.values()), low, high


def half_width(point: float, low: float, high: float) -> float:
    return (high - low) / 2 / point


def base_without(ids: Iterable[str], device: str) -> Calibration:
    """The shipped fit of `device` without the rows `ids` (what the base of a user's calibration would be had the
    runs being predicted never been published)."""
    drop = set(ids)
    rows = [r for r in shipped_rows() if r.fitted and r.id not in drop]
    return calibrate(rows, "shipped without the predicted run", device)


def held_out_section(rows: Sequence[Row]) -> list[float]:
    print("== held-out published runs (not in the fit): predicted step, band, measured")
    widths, held = [], 0
    for row in rows:
        cal = base_without((), row.device)
        point, low, high = predicted(row, cal)
        measured = row.measured[measured_phase(row)]
        ok = low <= measured <= high
        held += ok
        widths.append(half_width(point, low, high))
        sync = row.predict(cal.efficiency, "update_weights") if "update_weights" in row.terms else 0.0
        print(
            f"  {row.id:38s} predicted {point:7.1f} s ({low:6.1f}-{high:6.1f})  measured {row.measured['step']:6.1f}"
            f"  ratio {measured / point:4.2f}  {'holds' if ok else 'MISSES'}  (weight sync {sync:5.1f} s)"
        )
    ratios = [r.measured["step"] / predicted(r, base_without((), r.device))[0] for r in rows]
    print(f"  the bands hold {held} of {len(rows)}; median half-width {100 * statistics.median(widths):.0f}%")
    print(
        f"  measured / predicted: median {statistics.median(ratios):.2f}, "
        f"range {min(ratios):.2f}-{max(ratios):.2f}; within 15%: {sum(abs(r - 1) <= 0.15 for r in ratios)}"
    )
    return widths


def pairs_section(rows: dict[str, Row]) -> None:
    print("== calibrate on one run of a stack, predict another of the same stack")
    within = 0
    for first, second in PAIRS:
        a, b = rows[first], rows[second]
        base = base_without((b.id,), b.device)
        cal = calibrate([a], f"calibrated on {a.id}", a.device, base)
        point, low, high = predicted(b, cal)
        measured = b.measured[measured_phase(b)]
        ratio = measured / point
        within += abs(ratio - 1) <= 0.15
        print(
            f"  {a.id} -> {b.id}: measured/predicted {ratio:4.2f}, band {low:.0f}-{high:.0f} s "
            f"(+-{100 * half_width(point, low, high):.0f}%), {'holds' if low <= measured <= high else 'MISSES'}"
        )
    print(f"  within 15%: {within} of {len(PAIRS)}")


def sets_section(rows: dict[str, Row]) -> None:
    print("== sets of one stack: each run predicted by a calibration of the others (leave one out)")
    within = held = count = 0
    widths = []
    for name, ids in SETS:
        members = [rows[i] for i in ids]
        for target in members:
            others = [r for r in members if r is not target]
            base = base_without(ids, target.device)
            cal = calibrate(others, f"calibrated on {name}", target.device, base)
            point, low, high = predicted(target, cal)
            measured = target.measured[measured_phase(target)]
            ratio = measured / point
            within += abs(ratio - 1) <= 0.15
            held += low <= measured <= high
            count += 1
            widths.append(half_width(point, low, high))
            print(
                f"  {name:18s} {target.id:38s} measured/predicted {ratio:4.2f}, band +-"
                f"{100 * half_width(point, low, high):.0f}%, {'holds' if low <= measured <= high else 'MISSES'}"
            )
    print(
        f"  within 15%: {within} of {count}; bands hold {held} of {count}; "
        f"median half-width {100 * statistics.median(widths):.0f}%"
    )


def main() -> int:
    held_out = held_out_rows()
    everything = {r.id: r for r in (*shipped_rows(), *held_out)}
    held_out_section(held_out)
    pairs_section(everything)
    sets_section(everything)
    return 0


if __name__ == "__main__":
    sys.exit(main())
