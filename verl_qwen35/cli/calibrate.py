"""`verl-qwen35 calibrate RUN_DIR... [--out FILE] [--with-published]`: the step-time model fitted to your own runs.

Reads each run's launch record and the per-phase timings verl logged (`timing_s/gen`, `old_log_prob`, `ref`,
`update_actor`, `update_weights`; review/calibration_runs.py) with the lengths they ran at (`prompt_length/mean`,
`response_length/mean`, `response_length/max`), fits the per-phase efficiencies to them (model/calibration.py: the
runs are the rows, all of one device kind; `--with-published` adds the published rows of that kind; what the runs
do not measure keeps the published fit of their kind), prints each phase's fit, its band (two or more runs: their
error across layouts times their step-to-step spread) and every run's leave-one-out error, and writes the
calibration file that `plan.calibration=FILE` gives the dry run, `verl-qwen35 plan` and `verl-qwen35 report
--calibration FILE`. Predictions with that file are made at the lengths the runs logged unless
plan.response_length says otherwise.
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
    unfitted_lines,
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
            row = run_row(str(run_dir), found.config, found.phases, found.lengths, found.spread)
        except InputError as err:
            raise UserError(f"{run_dir / 'launch.yaml'}: {err}") from None
        if not row.fitted:
            raise UserError(f"{run_dir}: its logged phases ({', '.join(found.phases)}) are none the model predicts")
        logged = ", ".join(f"{k} {v}" for k, v in found.lengths.items())
        length = f", lengths logged (tokens): {logged}" if logged else ", no lengths logged (the config's maxima)"
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
    say("\n".join(band_lines(cal, rows, base)))
    if notes := unfitted_lines([*rows, *published], cal):
        say("measured phases that fit nothing:")
        say("\n".join(notes))
    write_file(out, as_yaml(cal, names + [f"published: {r.id}" for r in published]), within=out.absolute().parent)
    say(f"wrote {out}: use it with plan.calibration={out.absolute()} (the dry run, {PROG.split()[0]} plan), and")
    say(f"  {PROG.split()[0]} report RUN_DIR --calibration {out} for predicted against measured before and after")
    if cal.lengths:
        said = ", ".join(f"{k} {v}" for k, v in cal.lengths.items())
        say(
            f"predictions with {out} are made at the lengths the runs logged ({said} tokens: the median over the "
            "runs), the lengths the efficiencies were fitted at; plan.response_length=N predicts at another mean"
        )
    else:
        say(
            "the runs logged no lengths (prompt_length/mean, response_length/mean): predictions with this file are "
            "made at the config's data.max_prompt_length and data.max_response_length, as the runs were timed"
        )
    return 0


def band_lines(cal, rows: list[Row], base) -> list[str]:
    """Where each phase's band came from: the runs' own error across layouts and step spread, or the published
    band where fewer than two runs measure the phase (a single run earns no error across layouts)."""
    out = []
    for phase, (low, high) in cal.band.items():
        runs = [r for r in rows if phase in r.fitted]
        if len(runs) >= 2 and (low, high) != base.band[phase]:
            whence = f"{len(runs)} runs' leave-one-out error across layouts x their step-to-step spread"
        elif runs:
            whence = "the published band: one run measures it, no error across layouts to earn a band of its own"
        else:
            whence = "the published band: no run measures it"
        out.append(f"  band {phase} x{low:.2f}-x{high:.2f} (+-{100 * (high - low) / 2:.0f}%): {whence}")
    return ["where the bands come from:", *out]


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
