"""Print the step-time model's fitted efficiencies and each published measurement's residual.

    python scripts/calibrate.py

Rows: verl_qwen35/data/calibration/measurements.yaml (each with its source). The fit is what the
planner uses (`verl_qwen35.model.step_time.calibrated`): training MFU is the median of the
pre-training rows' own values; the decode bandwidth share the median of the GRPO rows' at that MFU.
A row's residual is predicted / measured - 1 at the fitted values.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tabulate import tabulate  # noqa: E402

from verl_qwen35.model.step_time import FITS, fit, predict  # noqa: E402


def main() -> int:
    result = fit()
    eff = result.efficiency
    print(
        f"fitted: train_mfu={eff.train_mfu:.3f} decode_bandwidth={eff.decode_bandwidth:.3f} "
        f"prefill_mfu={eff.prefill_mfu:.3f}"
    )
    body = []
    for row, own, residual in result.per_row:
        body.append((
            row["id"], row["kind"], "yes" if row.get("fit", True) else "no", FITS[row["kind"]],
            "-" if own is None else f"{own:.3f}", f"{row['measured_seconds']:.1f}", f"{predict(row, eff):.1f}",
            f"{100 * residual:+.1f}%",
        ))  # fmt: skip
    head = ("row", "kind", "fitted", "parameter", "row's own value", "measured s", "predicted s", "residual")
    print(tabulate(body, headers=head, tablefmt="plain", disable_numparse=True))
    for row, _, _ in result.per_row:
        print(f"- {row['id']}: {' '.join(row['source'].split())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
