"""verdict.json: one job's verdict, in its own output directory, for the sweep summary, `report` and people.

A job writes it first as `running`, then with its outcome (run/sweep.py guarded_job); a job submitted to a
cluster adds its cluster job id. The file is data from someone we may not trust when read back (a reused sweep
directory, a copied run): only a regular file of at most VERDICT_MAX_BYTES is read, and only a record of the
shape `verdict` gives is summarized.
"""

import json
import stat
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

from verl_qwen35.config.secrets import redact
from verl_qwen35.config.yaml_files import load_json
from verl_qwen35.disk import write_file
from verl_qwen35.errors import UserError

VERDICT = "verdict.json"
# A verdict is a few KiB; a larger file under a job directory is not one (and is not read into memory).
VERDICT_MAX_BYTES = 1 << 20
# A valid job whose memory estimate is above the dry run's warning floor (checks.memory.WARN_FRACTION).
LITTLE_HEADROOM = "little headroom"
VALID_STATUSES = ("ok", LITTLE_HEADROOM)


class Finding(Protocol):
    """What a verdict lists of a problem (checks/problem.py Problem): its level, the keys to change and why."""

    @property
    def level(self) -> str: ...

    @property
    def keys(self) -> tuple[str, ...]: ...

    @property
    def message(self) -> str: ...


def verdict(
    job: int,
    sweep_id: str | None,
    overrides: list[str],
    mode: str,
    found: Sequence[Finding],
    status: str | None = None,
    memory: dict[str, Any] | None = None,
    headroom: Sequence[Finding] = (),
    step: dict[str, float] | None = None,
) -> dict[str, Any]:
    """A verdict as plain data. `memory`: the estimate's numbers (checks.memory.memory_numbers); `headroom`: its
    little-headroom warnings (checks.memory.headroom_warnings), which make a valid job's status `little headroom`;
    `step`: the predicted seconds of one step and its band (`seconds`, `low`, `high`; planner/whole_run.py
    predicted_step)."""

    def listed(problems: Sequence[Finding], level: str) -> list[dict[str, Any]]:
        return [{"keys": list(p.keys), "message": p.message} for p in problems if p.level == level]

    errors = listed(found, "error")
    tight = listed(headroom, "warning")
    return {
        "job": job,
        "sweep_id": sweep_id,
        "overrides": overrides,
        "mode": mode,
        "status": status or ("refused" if errors else LITTLE_HEADROOM if tight else "ok"),
        "valid": not errors and status in (None, *VALID_STATUSES),
        "errors": errors,
        "warnings": listed(found, "warning"),
        "memory": memory,
        "headroom": tight,
        "step": step,
    }


def write_record(path: Path, record: dict[str, Any]) -> None:
    """Whole or not at all: a Ctrl-C or a reader mid-write never sees half a verdict (disk.py write_file: a
    temporary file and a rename, never through a link)."""
    write_file(path, redact(json.dumps(record, indent=2)))


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


def is_verdict(record: dict[str, Any]) -> bool:
    """The fields the summary reads, of the types `verdict` gives them: anything else (an older
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
    note(output_dir, {"job_id": job_id})


def note(output_dir: str, fields: dict[str, Any]) -> None:
    """Add `fields` to this job's verdict (the job id, the checkpoint a submitted resume drill's save job writes)."""
    path = Path(output_dir) / VERDICT
    write_record(path, {**(read_record(path) or {}), **fields})
