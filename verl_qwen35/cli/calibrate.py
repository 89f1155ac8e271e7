"""`verl-qwen35 calibrate RUN_DIR... [--out FILE] [--with-published]`: the step-time model fitted to your own runs.

Reads each run's launch record and the per-phase timings verl logged (`timing_s/gen`, `old_log_prob`, `ref`,
`update_actor`, `update_weights`; review/calibration_runs.py), fits the per-phase efficiencies to them
(model/calibration.py: the runs are the rows, all of one device kind; `--with-published` adds the published rows
of that kind; what the runs do not measure keeps the published fit of their kind), prints each
phase's fit and every run's leave-one-out error, and writes the calibration file that `plan.calibration=FILE`
gives the dry run, `verl-qwen35 plan` and `verl-qwen35 report --calibration FILE`.
"""

import os
import stat
from pathlib import Path

from verl_qwen35.cli.answers import answered
from verl_qwen35.disk import write_file
from verl_qwen35.errors import UserError
from verl_qwen35.model.calibration import (
    MIN_BAND_ROWS,
    Row,
    as_yaml,
    calibrate,
    fit_lines,
    read_file,
    run_row,
    shipped,
    shipped_rows,
)
from verl_qwen35.model.memory import InputError
from verl_qwen35.review.calibration_runs import measured_run
from verl_qwen35.terminal import SafeParser, say

PROG = "verl-qwen35 calibrate"
DEFAULT_OUT = Path("calibration.yaml")


def check_target(path: Path) -> None:
    """Refuse to replace anything but an earlier calibration file (never a link, whose target would change)."""
    if not os.path.lexists(path):
        if not path.parent.is_dir():
            raise UserError(f"--out {path}: {path.parent} is not a directory")
        return
    info = os.lstat(path)
    if stat.S_ISLNK(info.st_mode):
        raise UserError(f"--out {path}: a symbolic link; not followed, not replaced: give the file itself")
    if not stat.S_ISREG(info.st_mode):
        raise UserError(f"--out {path}: not a regular file; give a new file or an earlier calibration file")
    try:
        read_file(str(path))
    except InputError:
        raise UserError(
            f"--out {path}: exists and is not a calibration file of {PROG}; not replaced: give another --out"
        ) from None


def device_kind(rows: list[Row]) -> str:
    """The one device kind the runs ran on: a fit is per kind (model/calibration.py), so a mix is refused."""
    kinds = {r.device for r in rows}
    if len(kinds) > 1:
        named = "; ".join(f"{kind}: {', '.join(r.id for r in rows if r.device == kind)}" for kind in sorted(kinds))
        raise UserError(f"the runs ran on more than one device kind (trainer.device) ({named}): calibrate each apart")
    return kinds.pop()


def run(run_dirs: list[Path], out: Path, with_published: bool) -> int:
    check_target(out)
    rows, names, found_runs = [], [], []
    for run_dir in run_dirs:
        if not run_dir.is_dir():
            raise UserError(f"{run_dir}: not a directory; give run directories (each holding launch.yaml)")
        found = measured_run(run_dir.absolute())
        try:
            row = run_row(str(run_dir), found.config, found.phases, found.response_mean)
        except InputError as err:
            raise UserError(f"{run_dir / 'launch.yaml'}: {err}") from None
        if not row.fitted:
            raise UserError(f"{run_dir}: its logged phases ({', '.join(found.phases)}) are none the model predicts")
        length = f", responses {found.response_mean} tokens on average" if found.response_mean else ""
        say(f"run {run_dir}: {found.steps} step(s) after warm-up{length}: {', '.join(sorted(row.fitted))}")
        rows.append(row)
        found_runs.append(found)
        names.append(str(run_dir.absolute()))
    device = device_kind(rows)
    published = [r for r in shipped_rows() if r.fitted and r.device == device] if with_published else []
    base = shipped(device)
    what = f"{len(rows)} {device} run(s)" + (f" and {len(published)} published {device} rows" if published else "")
    cal = calibrate([*rows, *published], f"{out} ({what})", device, base)
    say(
        f"fit on {what}; an efficiency no run measures, and the band of a phase fewer than {MIN_BAND_ROWS} runs "
        f"measure, keep the published {device} fit's"
    )
    say("\n".join(fit_lines(cal, [*rows, *published], base.efficiency)))
    write_file(out, as_yaml(cal, names + [f"published: {r.id}" for r in published]), within=out.absolute().parent)
    say(f"wrote {out}: use it with plan.calibration={out.absolute()} (the dry run, {PROG.split()[0]} plan), and")
    say(f"  {PROG.split()[0]} report RUN_DIR --calibration {out} for predicted against measured before and after")
    if means := sorted({r.response_mean for r in found_runs if r.response_mean}):
        say(
            f"the runs' phases are fitted at the response lengths they logged ({', '.join(map(str, means))} tokens "
            "on average): plan with plan.response_length=N, the mean you expect, for the same footing"
        )
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = SafeParser(prog=PROG, description=__doc__.splitlines()[0])
    parser.add_argument("run_dirs", nargs="+", type=Path, metavar="RUN_DIR", help="runs launched by verl-qwen35")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"the calibration file (default ./{DEFAULT_OUT})")
    parser.add_argument(
        "--with-published", action="store_true", help="fit your runs together with the shipped published rows"
    )
    args = parser.parse_args(argv)
    with answered(PROG):
        return run(args.run_dirs, args.out, args.with_published)
