"""Hydra multirun support: one row per job, and the summary table at the end of a sweep.

Each job writes verdict.json into its own output directory (run/job.py run_job), first as `running`,
then with its outcome; a job that raises is recorded as `failed` with its reason instead of
ending the sweep (Hydra's basic sweeper would re-raise it before the summary). The
SweepSummary callback, registered in conf/config.yaml, gathers this sweep's verdicts when it
ends (or when Ctrl-C or SIGTERM stops it: `interrupted`), prints one table and writes summary.csv and
summary.json into the sweep directory. A job Hydra cannot compose (a value the typed schema refuses) never
starts: our sweeper (hydra_plugins/verl_qwen35_sweeper) records it here as refused and runs the others.
While it runs, the sweep holds its directory (run/sweep_lock.py), and each finished job's configs are let
go (`on_job_end`), so memory does not grow with the jobs.
"""

import csv
import io
import itertools
import json
import re
import secrets
import stat
import sys
import traceback
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hydra.core.config_loader import ConfigLoader
from hydra.core.hydra_config import HydraConfig
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.utils import JobReturn
from hydra.errors import OverrideParseException
from hydra.experimental.callback import Callback
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf

from verl_qwen35.checks.problem import Problem
from verl_qwen35.config.errors import explain
from verl_qwen35.config.prewrite import Refused
from verl_qwen35.config.secrets import redact
from verl_qwen35.config.yaml_files import load_json
from verl_qwen35.disk import write_file
from verl_qwen35.errors import UserError
from verl_qwen35.run.stops import stop_point
from verl_qwen35.run.sweep_dirs import check_job_dirs, check_sweep_dir
from verl_qwen35.run.sweep_lock import SweepLock, lock_sweep_dir
from verl_qwen35.terminal import say

VERDICT = "verdict.json"
BASIC_SWEEPER = "hydra._internal.core_plugins.basic_sweeper.BasicSweeper"  # Hydra's hydra/sweeper=basic
# conf/hydra/sweeper/verl_qwen35.yaml: the basic sweeper's jobs, a job that cannot be composed refused alone.
JOB_SWEEPER = "hydra_plugins.verl_qwen35_sweeper.job_sweeper.JobSweeper"
ERROR_LOG = "error.log"
DEFAULT_SUBDIR = "${hydra.job.num}"  # Hydra's hydra.sweep.subdir: job N writes <sweep dir>/N
# A verdict is a few KiB; a larger file under a job directory is not one (and is not read into memory).
VERDICT_MAX_BYTES = 1 << 20
# A valid job whose memory estimate is above the dry run's warning floor (checks.memory.WARN_FRACTION).
LITTLE_HEADROOM = "little headroom"
VALID_STATUSES = ("ok", LITTLE_HEADROOM)


@dataclass
class ActiveSweep:
    """The sweep this process runs: its directory, an id its verdicts carry, and its planned jobs."""

    sweep_dir: Path
    sweep_id: str
    planned: list[list[str]] = field(default_factory=list)
    lock: SweepLock | None = None
    # Jobs refused before they started (Hydra could not compose them), by job number: they have no directory.
    unstarted: dict[int, dict[str, Any]] = field(default_factory=dict)


_ACTIVE: ActiveSweep | None = None


def in_multirun() -> bool:
    return HydraConfig.initialized() and HydraConfig.get().mode == RunMode.MULTIRUN


def job_tag() -> str:
    """`<sweep dir>_job<N>`: unique across jobs and across sweeps, readable in a run name."""
    hydra_cfg = HydraConfig.get()
    sweep = "_".join(Path(hydra_cfg.sweep.dir).parts[-2:])
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", f"{sweep}_job{hydra_cfg.job.num}")


def write_verdict(
    output_dir: str,
    mode: str,
    found: list[Problem],
    status: str | None = None,
    memory: dict[str, Any] | None = None,
    headroom: Sequence[Problem] = (),
    step: dict[str, float] | None = None,
) -> None:
    """This job's verdict, in its own output directory, for SweepSummary (and for people).

    `memory`: the estimate's numbers (checks.memory.memory_numbers); `headroom`: its little-headroom warnings
    (checks.memory.headroom_warnings), which make a valid job's status `little headroom`; `step`: the predicted
    seconds of one step and its band (`seconds`, `low`, `high`; planner/whole_run.py predicted_step)."""
    hydra_cfg = HydraConfig.get()

    def listed(problems: Sequence[Problem], level: str) -> list[dict[str, Any]]:
        return [{"keys": list(p.keys), "message": p.message} for p in problems if p.level == level]

    errors = listed(found, "error")
    tight = listed(headroom, "warning")
    record = {
        "job": hydra_cfg.job.get("num", 0) if in_multirun() else 0,
        "sweep_id": _ACTIVE.sweep_id if _ACTIVE else None,
        # As typed: iterating the ListConfig would resolve `x=${oc.env:DB_PASSWORD}` into the file.
        "overrides": OmegaConf.to_container(hydra_cfg.overrides.task, resolve=False),
        "mode": mode,
        "status": status or ("refused" if errors else LITTLE_HEADROOM if tight else "ok"),
        "valid": not errors and status in (None, *VALID_STATUSES),
        "errors": errors,
        "warnings": listed(found, "warning"),
        "memory": memory,
        "headroom": tight,
        "step": step,
    }
    write_record(Path(output_dir) / VERDICT, record)


def write_record(path: Path, record: dict[str, Any]) -> None:
    """Whole or not at all: a Ctrl-C or a reader mid-write never sees half a verdict."""
    write_whole(path, redact(json.dumps(record, indent=2)))


def write_whole(path: Path, text: str) -> None:
    """`text` into `path` through a temporary file and a rename; a signal or a full disk on the way
    leaves the old file (or none) and no temporary file behind."""
    write_file(path, text)


def read_record(path: Path) -> dict[str, Any] | None:
    """A verdict, or None for one that is unreadable or not a record (another tool's file, a damaged disk):
    only a regular file (a FIFO would block the read) of at most VERDICT_MAX_BYTES is read."""
    try:
        info = path.stat()
        if not stat.S_ISREG(info.st_mode) or info.st_size > VERDICT_MAX_BYTES:
            return None
        record = load_json(path)  # the one loader: torn, binary, too deep -> UserError
    except (OSError, UserError):
        return None
    return record if isinstance(record, dict) else None


def _is_verdict(record: dict[str, Any]) -> bool:
    """The fields the summary reads, of the types write_verdict gives them: anything else (an older
    tool's file, a hand-edited one) is skipped rather than a traceback in the summary."""
    errors = record.get("errors", [])
    return (
        type(record.get("job")) is int
        and isinstance(record.get("overrides"), list)
        and all(isinstance(o, str) for o in record["overrides"])
        and isinstance(record.get("valid"), bool)
        and isinstance(record.get("status", ""), str)
        and isinstance(errors, list)
        and all(_is_problem(e) for e in errors)
        and isinstance(record.get("headroom", []), list)
        and all(_is_problem(e) for e in record.get("headroom", []))
    )


def _is_problem(entry: object) -> bool:
    return (
        isinstance(entry, dict)
        and isinstance(entry.get("message"), str)
        and isinstance(entry.get("keys"), list)
        and all(isinstance(k, str) for k in entry["keys"])
    )


def note_job_id(output_dir: str, job_id: str) -> None:
    """The cluster job this run was submitted as (submit=slurm|ray_job), for the sweep summary."""
    path = Path(output_dir) / VERDICT
    write_record(path, {**(read_record(path) or {}), "job_id": job_id})


def guarded_job(job: Callable[[], None], output_dir: str, mode: str) -> None:
    """Run one sweep job so that nothing it raises ends the sweep: the failure is its verdict.

    A job the preflight refuses returns normally (status `refused`); one that raises is `failed`:
    a user mistake with its one-line answer, anything else with its type and message, its
    traceback in the job's error.log (a crash is a bug worth reading). A Ctrl-C or SIGTERM since the last job
    stops the sweep here, before this job starts.
    """
    stop_point()
    write_verdict(output_dir, mode, [], status="running")
    try:
        job()
    except SystemExit as stop:  # something in the job (verl, Ray) called sys.exit
        if stop.code not in (0, None):
            _record_stop(output_dir, mode, "failed", f"exited with code {stop.code}")
    except Exception as err:
        reason = explain(err)
        if reason is None:
            write_file(Path(output_dir) / ERROR_LOG, redact(traceback.format_exc()))
            reason = f"{type(err).__name__}: {err} (traceback in {Path(output_dir) / ERROR_LOG})"
        _record_stop(output_dir, mode, "failed", reason)


def _record_stop(output_dir: str, mode: str, status: str, reason: str) -> None:
    say(f"job {HydraConfig.get().job.num} {status}: {reason}", file=sys.stderr)
    write_verdict(output_dir, mode, [Problem("error", (), reason)], status=status)


def refuse_unstarted(num: int, overrides: list[str], err: Exception) -> None:
    """Job `num` cannot be composed (`parallel.vpp=two` against the typed schema): its refusal is its row of the
    summary, and the sweep goes on. Anything that is not a user mistake is raised, a bug with its traceback."""
    reason = explain(err)
    if reason is None:
        raise err
    say(redact(f"job {num} refused: {reason}"), file=sys.stderr)
    if _ACTIVE is not None:
        _ACTIVE.unstarted[num] = {
            "job": num,
            "sweep_id": _ACTIVE.sweep_id,
            "overrides": list(overrides),
            "status": "refused",
            "valid": False,
            "errors": [{"keys": [], "message": reason}],  # the message names the key and the value
        }


def _overrides(item: str) -> tuple[str, str]:
    key, _, value = item.partition("=")
    return key, value


def first_reason(record: dict[str, Any]) -> str:
    """`<short key>: <message>` of the first error (of a valid job: its first little-headroom warning); the short
    key is the `parallel.*` name when there is one."""
    found = record["errors"] or record.get("headroom") or []
    if not found:
        return ""
    first = found[0]
    if not first["keys"]:  # the message names its key itself
        return first["message"]
    return f"{first['keys'][0].split(' ')[0]}: {first['message']}"


def _records(sweep_dir: Path, sweep_id: str | None) -> list[dict[str, Any]]:
    """This sweep's verdicts only: a reused sweep directory also holds earlier sweeps' jobs (and damaged files)."""
    found = []
    for path in sweep_dir.glob(f"*/{VERDICT}"):
        record = read_record(path)
        if record and _is_verdict(record) and (sweep_id is None or record.get("sweep_id") == sweep_id):
            found.append(record)
    return sorted(found, key=lambda r: r["job"])


MEMORY_COLUMNS = ("train_gib", "rollout_gib", "device_gib")
# The predicted step (seconds) and its band's ends, from the verdict's `step` (its `seconds`, `low`, `high`).
STEP_COLUMNS = {"step_s": "seconds", "step_low_s": "low", "step_high_s": "high"}


def summary_row(record: dict[str, Any], swept_values: dict[str, Any], submitted: bool) -> dict[str, Any]:
    """One table row; add columns here (they flow into the table, CSV and JSON). Numbers stay numbers (JSON);
    a job without a memory estimate or a step time has None there (an empty CSV cell)."""
    memory = record.get("memory") if isinstance(record.get("memory"), dict) else {}
    step = record.get("step") if isinstance(record.get("step"), dict) else {}
    return {
        "job": record["job"],
        **swept_values,
        "valid": record["valid"],
        "status": record.get("status", "ok" if record["valid"] else "refused"),
        **{name: _number(step.get(key)) for name, key in STEP_COLUMNS.items()},
        **{name: _number(memory.get(name)) for name in MEMORY_COLUMNS},
        **({"job_id": record.get("job_id", "")} if submitted else {}),
        "reason": first_reason(record),
    }


def _number(value: object) -> float | None:
    """A verdict's number, or None for anything else (an older verdict's text, a hand-edited file)."""
    return value if isinstance(value, int | float) and not isinstance(value, bool) else None


def summarize(
    sweep_dir: Path,
    sweep_id: str | None = None,
    planned: list[list[str]] = (),
    unstarted: dict[int, dict[str, Any]] | None = None,
) -> list[dict[str, Any]]:
    """One row per job (planned jobs that never ran or never started included), with only the override keys
    that vary."""
    records = {**(unstarted or {}), **{r["job"]: r for r in _records(sweep_dir, sweep_id)}}
    for num, overrides in enumerate(planned):
        records.setdefault(num, {"job": num, "overrides": overrides, "valid": False, "status": "not run", "errors": []})
    ordered = [records[n] for n in sorted(records)]
    values = swept_values([r["overrides"] for r in ordered])
    submitted = any("job_id" in r for r in ordered)
    return [summary_row(r, v, submitted) for r, v in zip(ordered, values, strict=True)]


def swept_values(overrides: list[list[str]]) -> list[dict[str, Any]]:
    """Each job's values of the override keys that differ between the jobs (every key when none differs; None
    where a job has no such override), typed as Hydra parses them (`parallel.tp=2` is 2, `parallel.vpp=null`
    None, `model=122b` a string)."""
    values = [dict(map(_overrides, o)) for o in overrides]
    keys = sorted({k for v in values for k in v})
    swept = [k for k in keys if len({v.get(k) for v in values}) > 1] or keys
    parser = OverridesParser.create()
    return [{k: _typed(parser, k, v[k]) if k in v else None for k in swept} for v in values]


def _typed(parser: OverridesParser, key: str, text: str) -> Any:
    """The value Hydra's override grammar gives `key=text`; the text itself where it is not one value."""
    try:
        value = parser.parse_override(f"{key}={text}").value()
    except OverrideParseException:  # the text as typed
        return text
    return value if value is None or isinstance(value, int | float | bool | str | list | dict) else text


def displayed(row: dict[str, Any]) -> dict[str, Any]:
    """A row as the printed table shows it to a person: the step and its band in one cell ("~931 (488-1790)"), and
    a valid job above the memory floor not a plain `True` (its warning is the reason beside it)."""
    out = {k: v for k, v in row.items() if k not in STEP_COLUMNS}
    if row.get("status") == LITTLE_HEADROOM and row.get("valid") is True:
        out["valid"] = f"True ({LITTLE_HEADROOM})"
    if not any(name in row for name in STEP_COLUMNS):
        return out
    seconds, low, high = (_number(row.get(name)) for name in STEP_COLUMNS)
    band = f"~{seconds:.0f} ({low:.0f}-{high:.0f})" if None not in (seconds, low, high) else ""
    items = list(out.items())
    at = list(out).index("status") + 1 if "status" in out else len(items)
    return dict([*items[:at], ("s/step (band)", band), *items[at:]])


def table(rows: list[dict[str, Any]], reason_width: int = 100) -> str:
    if not rows:
        return "(no jobs)"
    people = [displayed(row) for row in rows]
    shown = [[cell(v)[:reason_width] for v in row.values()] for row in people]
    from tabulate import tabulate  # only a sweep's summary prints a table

    return tabulate(shown, headers=list(people[0]), tablefmt="simple", disable_numparse=True)


def cell(value: Any) -> str:
    """A table or CSV cell: None is empty, everything else its text."""
    return "" if value is None else str(value)


def write_summary(sweep: ActiveSweep) -> list[dict[str, Any]]:
    """Print and save the table of this sweep's jobs; returns its rows."""
    rows = summarize(sweep.sweep_dir, sweep.sweep_id, sweep.planned, sweep.unstarted)
    if not rows:
        return rows
    sweep.sweep_dir.mkdir(parents=True, exist_ok=True)
    write_whole(sweep.sweep_dir / "summary.json", redact(json.dumps(rows, indent=2)))
    table_csv = io.StringIO()
    writer = csv.DictWriter(table_csv, fieldnames=list(rows[0]))
    writer.writeheader()
    writer.writerows({k: cell(v) for k, v in row.items()} for row in rows)
    write_whole(sweep.sweep_dir / "summary.csv", redact(table_csv.getvalue()))
    statuses = ("refused", "failed", "interrupted", "not run", LITTLE_HEADROOM)
    counts = {s: sum(r["status"] == s for r in rows) for s in statuses}
    told = "".join(f", {n} {s}" for s, n in counts.items() if n and s != "refused")
    valid = sum(r["status"] in VALID_STATUSES for r in rows)
    say(f"\nsweep: {len(rows)} job(s), {valid} valid, {counts['refused']} refused{told}")
    say(redact(table(rows)))
    say(f"saved: {sweep.sweep_dir / 'summary.csv'} and summary.json")
    return rows


def planned_jobs(config: DictConfig) -> list[list[str]]:
    """The jobs the basic sweeper (Hydra's or ours) will run: the product of every swept value, in its order."""
    if str(config.hydra.sweeper.get("_target_", "")) not in (BASIC_SWEEPER, JOB_SWEEPER):
        return []  # another sweeper (Optuna, Ax, ...) plans its own jobs
    # The sweeper's params as Hydra instantiates the sweeper: resolved against the sweep's config
    # (hydra/core/plugins.py instantiate_sweeper). The command line as written: an override may hold
    # `${...}` that only its job resolves (hydra/_internal/hydra.py multirun: resolve=False).
    params = OmegaConf.to_container(config.hydra.sweeper, resolve=True).get("params") or {}
    task = OmegaConf.to_container(config.hydra.overrides.task, resolve=False)
    return expand([f"{k}={v}" for k, v in params.items()] + task)


def expand(lines: list[str], config_loader: ConfigLoader | None = None) -> list[list[str]]:
    """Hydra's basic sweep of these override lines: the product of every swept value, in its order
    (hydra/_internal/core_plugins/basic_sweeper.py split_arguments, one batch). `config_loader` lets
    `glob(...)` list a group's options, as the sweeper's parser does."""
    choices: dict[str, list[str]] = {}  # one entry per key, a later override of a key in its place, as the sweeper
    for o in OverridesParser.create(config_loader=config_loader).parse_overrides(lines):
        key = o.get_key_element()
        swept = o.sweep_string_iterator() if o.is_sweep_override() else [o.get_value_element_as_str()]
        choices[key] = [f"{key}={v}" for v in swept]
    return [list(job) for job in itertools.product(*choices.values())]


def interrupted(by: str = "Ctrl-C") -> None:
    """Ctrl-C or SIGTERM (`by`) during a sweep: the summary of the jobs that finished, the rest marked."""
    sweep = _ACTIVE
    if sweep is None:
        return
    try:
        for path in sweep.sweep_dir.glob(f"*/{VERDICT}"):
            record = read_record(path)
            if record and record.get("sweep_id") == sweep.sweep_id and record.get("status") == "running":
                record.update(status="interrupted", valid=False)
                record["errors"] = [{"keys": ["job"], "message": f"stopped by {by}"}]
                write_record(path, record)
        summary = write_summary(sweep)
    finally:
        release()
    say(f"sweep interrupted: {sum(r['status'] not in ('not run', 'interrupted') for r in summary)} job(s) finished")


def release() -> None:
    """The sweep of this process is over, however it ended: its directory is free for the next one."""
    global _ACTIVE
    sweep, _ACTIVE = _ACTIVE, None
    if sweep is not None and sweep.lock is not None:
        sweep.lock.release()


@contextmanager
def released_when_done() -> Iterator[None]:
    """However the command ends, its sweep's directory is freed; a sweep stopped by Ctrl-C or SIGTERM
    keeps it until `interrupted` (called by the command's answer to the stop) has written the summary."""
    try:
        yield
    except KeyboardInterrupt:
        raise
    except BaseException:
        release()
        raise
    release()


class SweepSummary(Callback):
    """Holds the sweep directory, prints and saves the sweep's table; exits 2 when any job was refused or failed."""

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        global _ACTIVE
        sweep_dir = Path(OmegaConf.select(config, "hydra.sweep.dir")).absolute()
        sweep = ActiveSweep(sweep_dir, secrets.token_hex(6), planned_jobs(config))
        try:  # before Hydra's sweeper writes multirun.yaml and the first job its directory
            check_sweep_dir(sweep_dir)  # not a single run's, no link where the sweep writes (run/sweep_dirs.py)
            if OmegaConf.to_container(config.hydra.sweep, resolve=False).get("subdir") == DEFAULT_SUBDIR:
                check_job_dirs(sweep_dir, [sweep_dir / str(num) for num in range(len(sweep.planned))])
            sweep.lock = lock_sweep_dir(sweep_dir, sweep.sweep_id)
        except UserError as err:
            raise Refused(err) from None  # through Hydra's callback runner, which would make an Exception a warning
        release()  # an earlier sweep of this process that ended without its summary (in-process callers)
        _ACTIVE = sweep

    def on_job_end(self, config: DictConfig, job_return: JobReturn, **kwargs: Any) -> None:
        """Let go of a finished job's configs: Hydra's basic sweeper keeps every JobReturn until the sweep
        ends (hydra/_internal/core_plugins/basic_sweeper.py sweep: `returns`), and each holds the job's whole
        config and Hydra config (hydra/core/utils.py run_job: `ret.cfg`, `ret.hydra_cfg`), ~2 MiB a job.
        The sweeper reads only `return_value` afterwards; the verdict on disk is what the summary reads."""
        job_return.cfg = None
        job_return.hydra_cfg = None

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        sweep = _ACTIVE or ActiveSweep(Path(config.hydra.sweep.dir), None)
        try:
            rows = write_summary(sweep)
        finally:
            release()
        if any(r["status"] not in VALID_STATUSES for r in rows):
            sys.exit(2)
