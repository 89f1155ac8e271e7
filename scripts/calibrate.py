"""Print the step-time model's fitted efficiencies, each phase's band, and every published row's leave-one-out error.

    python scripts/calibrate.py

Rows: verl_qwen35/data/calibration/measurements.yaml (each with its source). The fit and the bands are what
the plan uses (`verl_qwen35.model.calibration.shipped`): each efficiency is the median of the values that make
its rows' measured phases exact; a row's leave-one-out ratio is measured / predicted by the fit of the other
rows, and a phase's band spans its rows' ratios (verl_qwen35/model/calibration.py).
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tabulate import tabulate  # noqa: E402

from verl_qwen35.model.calibration import leave_one_out, shipped, shipped_rows  # noqa: E402


def main() -> int:
    cal = shipped()
    rows = list(shipped_rows())
    print("fitted: " + " ".join(f"{k}={v:.4f}" for k, v in cal.efficiency.items()))
    print("bands (measured / predicted): " + ", ".join(f"{p} {lo:.2f}-{hi:.2f}" for p, (lo, hi) in cal.band.items()))
    loo = {(r.id, p): ratio for r, p, ratio in leave_one_out([r for r in rows if r.fitted])}
    body = []
    for row in rows:
        for phase, measured in row.measured.items():
            ratio = loo.get((row.id, phase))
            body.append((
                row.id, row.hardware, phase, "yes" if phase in row.fitted else "no", f"{measured:.1f}",
                f"{row.predict(cal.efficiency, phase):.1f}", "-" if ratio is None else f"{ratio:.2f}",
            ))  # fmt: skip
    head = ("row", "hardware", "phase", "fitted", "measured s", "predicted s", "leave-one-out measured/predicted")
    print(tabulate(body, headers=head, tablefmt="plain", disable_numparse=True))
    for row in rows:
        print(f"- {row.id}: {row.source}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
