"""Print, per device kind, the step-time model's fitted efficiencies, each phase's band with how many held-out
published runs it holds, and every published row's leave-one-out error.

    python scripts/calibrate.py

Rows: verl_qwen35/data/calibration/measurements.yaml (each with its source and its hardware's device kind). The
fits and the bands are what the plan uses (`verl_qwen35.model.calibration.shipped(device)`): each efficiency is
the median of the values that make its rows' measured phases exact, per device kind (an NPU constant no NPU row
measures comes from the GPU rows); a row's leave-one-out ratio is measured / predicted by the fit of the other
rows, and a phase's band is the 10th to 90th percentile of its rows' ratios (verl_qwen35/model/calibration.py).
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from verl_qwen35.model.calibration import DEVICES, fit_lines, shipped, shipped_rows  # noqa: E402


def main() -> int:
    rows = list(shipped_rows())
    for device in DEVICES:
        print("\n".join(fit_lines(shipped(device), rows)))
        print()
    for row in rows:
        print(f"- {row.id} ({row.device}): {row.source}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
