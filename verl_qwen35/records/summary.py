"""A sweep's summary: one row per job, from the jobs' verdicts (records/verdict.py), as a table and as
summary.csv and summary.json in the sweep directory.

run/sweep.py SweepSummary writes it when a sweep ends (or is stopped); `report` names a sweep's jobs by the
same swept values (`swept_values`).
"""

import csv
import io
import json
from pathlib import Path
from typing import Any

from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.errors import OverrideParseException

from verl_qwen35.config.secrets import redact
from verl_qwen35.disk import write_file
from verl_qwen35.records.verdict import LITTLE_HEADROOM, VERDICT, is_verdict, read_record

SUMMARY_CSV = "summary.csv"
SUMMARY_JSON = "summary.json"
MEMORY_COLUMNS = ("train_gib", "rollout_gib", "device_gib")
# The predicted step (seconds) and its band's ends, from the verdict's `step` (its `seconds`, `low`, `high`).
STEP_COLUMNS = {"step_s": "seconds", "step_low_s": "low", "step_high_s": "high"}


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
        if record and is_verdict(record) and (sweep_id is None or record.get("sweep_id") == sweep_id):
            found.append(record)
    return sorted(found, key=lambda r: r["job"])


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


def save_summary(sweep_dir: Path, rows: list[dict[str, Any]]) -> None:
    """summary.json (numbers as numbers) and summary.csv in the sweep directory, each whole or not at all."""
    sweep_dir.mkdir(parents=True, exist_ok=True)
    write_file(sweep_dir / SUMMARY_JSON, redact(json.dumps(rows, indent=2)))
    table_csv = io.StringIO()
    writer = csv.DictWriter(table_csv, fieldnames=list(rows[0]))
    writer.writeheader()
    writer.writerows({k: cell(v) for k, v in row.items()} for row in rows)
    write_file(sweep_dir / SUMMARY_CSV, redact(table_csv.getvalue()))
