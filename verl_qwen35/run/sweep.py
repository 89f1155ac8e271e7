"""Hydra multirun support: one row per job, and the summary table at the end of a sweep.

Each job writes its verdict.json (records/verdict.py) into its own output directory (run/job.py run_job),
first as `running`, then with its outcome; a job that raises is recorded as `failed` with its reason instead
of ending the sweep (Hydra's basic sweeper would re-raise it before the summary). The SweepSummary callback,
registered in conf/config.yaml, gathers this sweep's verdicts when it ends (or when Ctrl-C or SIGTERM stops
it: `interrupted`), prints one table and writes summary.csv and summary.json into the sweep directory
(records/summary.py). A job Hydra cannot compose (a value the typed schema refuses) never starts: our sweeper
(hydra_plugins/verl_qwen35_sweeper) records it here as refused and runs the others. While it runs, the sweep
holds its directory (run/sweep_lock.py), and each finished job's configs are let go (`on_job_end`), so memory
does not grow with the jobs.
"""

import itertools
import re
import secrets
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
from hydra.experimental.callback import Callback
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf

from verl_qwen35.checks.problem import Problem
from verl_qwen35.config.errors import explain
from verl_qwen35.config.prewrite import Refused
from verl_qwen35.config.secrets import redact
from verl_qwen35.disk import write_file
from verl_qwen35.errors import UserError
from verl_qwen35.records.summary import SUMMARY_CSV, SUMMARY_JSON, save_summary, summarize, table
from verl_qwen35.records.verdict import LITTLE_HEADROOM, VALID_STATUSES, VERDICT, read_record, verdict, write_record
from verl_qwen35.run.stops import stop_point
from verl_qwen35.run.sweep_dirs import check_job_dirs, check_sweep_dir
from verl_qwen35.run.sweep_lock import SweepLock, lock_sweep_dir
from verl_qwen35.terminal import say

BASIC_SWEEPER = "hydra._internal.core_plugins.basic_sweeper.BasicSweeper"  # Hydra's hydra/sweeper=basic
# conf/hydra/sweeper/verl_qwen35.yaml: the basic sweeper's jobs, a job that cannot be composed refused alone.
JOB_SWEEPER = "hydra_plugins.verl_qwen35_sweeper.job_sweeper.JobSweeper"
ERROR_LOG = "error.log"
DEFAULT_SUBDIR = "${hydra.job.num}"  # Hydra's hydra.sweep.subdir: job N writes <sweep dir>/N


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


def active_sweep() -> ActiveSweep | None:
    """The sweep this process runs, or None outside a multirun (run/drill.py finds a job's earlier jobs by it)."""
    return _ACTIVE


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
    """This job's verdict (records/verdict.py), in its own output directory, for SweepSummary (and for people)."""
    hydra_cfg = HydraConfig.get()
    record = verdict(
        job=hydra_cfg.job.get("num", 0) if in_multirun() else 0,
        sweep_id=_ACTIVE.sweep_id if _ACTIVE else None,
        # As typed: iterating the ListConfig would resolve `x=${oc.env:DB_PASSWORD}` into the file.
        overrides=OmegaConf.to_container(hydra_cfg.overrides.task, resolve=False),
        mode=mode,
        found=found,
        status=status,
        memory=memory,
        headroom=headroom,
        step=step,
    )
    write_record(Path(output_dir) / VERDICT, record)


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


def write_summary(sweep: ActiveSweep) -> list[dict[str, Any]]:
    """Print and save the table of this sweep's jobs (records/summary.py); returns its rows."""
    rows = summarize(sweep.sweep_dir, sweep.sweep_id, sweep.planned, sweep.unstarted)
    if not rows:
        return rows
    save_summary(sweep.sweep_dir, rows)
    statuses = ("refused", "failed", "interrupted", "not run", LITTLE_HEADROOM)
    counts = {s: sum(r["status"] == s for r in rows) for s in statuses}
    told = "".join(f", {n} {s}" for s, n in counts.items() if n and s != "refused")
    valid = sum(r["status"] in VALID_STATUSES for r in rows)
    say(f"\nsweep: {len(rows)} job(s), {valid} valid, {counts['refused']} refused{told}")
    say(redact(table(rows)))
    say(f"saved: {sweep.sweep_dir / SUMMARY_CSV} and {SUMMARY_JSON}")
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
