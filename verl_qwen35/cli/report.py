"""`verl-qwen35 report RUN_DIR`: a run's (or a sweep's) metrics summed up, with plots and the plan's predictions."""

from pathlib import Path

from verl_qwen35.cli.answers import answered
from verl_qwen35.errors import UserError
from verl_qwen35.model.calibration import read_file
from verl_qwen35.model.memory import InputError
from verl_qwen35.review import plots
from verl_qwen35.review.report import (
    dumps,
    is_sweep,
    run_json,
    run_report,
    run_text,
    sweep_json,
    sweep_reports,
    sweep_text,
)
from verl_qwen35.terminal import SafeParser, say

PROG = "verl-qwen35 report"
REPORT_DIR = "report"


def main(argv: list[str] | None = None) -> int:
    parser = SafeParser(prog=PROG, description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", type=Path, help="a run's output directory, or a sweep's (multirun) directory")
    parser.add_argument("--out", type=Path, help=f"where the PNG plots go (default: RUN_DIR/{REPORT_DIR}/)")
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    parser.add_argument("--no-plots", action="store_true", help="the summary only (no matplotlib needed)")
    parser.add_argument(
        "--calibration",
        metavar="FILE",
        help="a file of verl-qwen35 calibrate: the step times predicted under it too (after), beside the record's",
    )
    args = parser.parse_args(argv)
    with answered(PROG):
        return report(args.run_dir, args.out, args.json, not args.no_plots, args.calibration)


def report(target: Path, out: Path | None, as_json: bool, draw: bool, calibration: str | None = None) -> int:
    if not target.is_dir():
        what = "does not exist" if not target.exists() else "is not a directory"
        raise UserError(f"{target} {what}: give a run's output directory (the one holding launch.yaml) or a sweep's")
    try:
        cal = read_file(calibration) if calibration else None
    except InputError as err:
        raise UserError(f"--calibration: {err}") from None
    target = target.absolute()
    within = target if out is None else None  # RUN_DIR/report: no link in it is followed; --out DIR: the user's
    out = (out or target / REPORT_DIR).absolute()
    # Read first: a directory without metrics says so whether matplotlib is installed or not.
    sweep = is_sweep(target)
    reports = sweep_reports(target, cal) if sweep else [run_report(target, cal)]
    if draw:
        plots.require_matplotlib()  # before anything is drawn or printed
    if sweep:
        written = plots.sweep_figures(reports, out, within) if draw else []
        data, text = sweep_json(target, reports), sweep_text(target, reports, written)
    else:
        written = [plots.run_figure(reports[0], out, within)] if draw else []
        data, text = run_json(reports[0]), run_text(reports[0], written)
    if as_json:
        say(dumps({**data, "plots": [str(p) for p in written]}))
    else:
        say(text)
    return 0
