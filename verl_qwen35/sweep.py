"""Hydra multirun support: one row per job, and the summary table at the end of a sweep.

Each job writes verdict.json into its own output directory (app.run); the SweepSummary
callback, registered in conf/config.yaml, gathers them when the sweep ends, prints one
table and writes summary.csv and summary.json into the sweep directory.
"""

import csv
import json
import re
import sys
from pathlib import Path
from typing import Any

from hydra.core.hydra_config import HydraConfig
from hydra.experimental.callback import Callback
from hydra.types import RunMode
from omegaconf import DictConfig

from verl_qwen35.checks.problem import Problem

VERDICT = "verdict.json"


def in_multirun() -> bool:
    return HydraConfig.initialized() and HydraConfig.get().mode == RunMode.MULTIRUN


def job_tag() -> str:
    """`<sweep dir>_job<N>`: unique across jobs and across sweeps, readable in a run name."""
    hydra_cfg = HydraConfig.get()
    sweep = "_".join(Path(hydra_cfg.sweep.dir).parts[-2:])
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", f"{sweep}_job{hydra_cfg.job.num}")


def write_verdict(output_dir: str, mode: str, found: list[Problem], memory: str = "") -> None:
    """This job's verdict, in its own output directory, for SweepSummary (and for people).

    `memory`: the estimate's cell (training/rollout GiB per device of capacity, checks.memory.memory_column)."""
    hydra_cfg = HydraConfig.get()

    def listed(level: str) -> list[dict[str, Any]]:
        return [{"keys": list(p.keys), "message": p.message} for p in found if p.level == level]

    record = {
        "job": hydra_cfg.job.get("num", 0) if in_multirun() else 0,
        "overrides": list(hydra_cfg.overrides.task),
        "mode": mode,
        "valid": not listed("error"),
        "errors": listed("error"),
        "warnings": listed("warning"),
        "memory": memory,
    }
    (Path(output_dir) / VERDICT).write_text(json.dumps(record, indent=2))


def note_job_id(output_dir: str, job_id: str) -> None:
    """The cluster job this run was submitted as (submit=slurm|ray_job), for the sweep summary."""
    path = Path(output_dir) / VERDICT
    path.write_text(json.dumps({**json.loads(path.read_text()), "job_id": job_id}, indent=2))


def _overrides(item: str) -> tuple[str, str]:
    key, _, value = item.partition("=")
    return key, value


def first_reason(record: dict[str, Any]) -> str:
    """`<short key>: <message>` of the first error; the short key is the `parallel.*` name when there is one."""
    if not record["errors"]:
        return ""
    first = record["errors"][0]
    return f"{first['keys'][0].split(' ')[0]}: {first['message']}"


def summarize(sweep_dir: Path) -> list[dict[str, Any]]:
    """One row per job, with only the override keys that vary across the sweep."""
    records = sorted((json.loads(p.read_text()) for p in sweep_dir.glob(f"*/{VERDICT}")), key=lambda r: r["job"])
    values = [dict(map(_overrides, r["overrides"])) for r in records]
    keys = sorted({k for v in values for k in v})
    swept = [k for k in keys if len({v.get(k) for v in values}) > 1] or keys
    submitted = any("job_id" in r for r in records)
    return [
        {
            "job": r["job"],
            **{k: v.get(k, "") for k in swept},
            "valid": r["valid"],
            "memory_gib": r.get("memory", ""),
            **({"job_id": r.get("job_id", "")} if submitted else {}),
            "reason": first_reason(r),
        }
        for r, v in zip(records, values, strict=True)
    ]


def table(rows: list[dict[str, Any]], reason_width: int = 100) -> str:
    if not rows:
        return "(no jobs)"
    shown = [{k: str(v)[:reason_width] for k, v in row.items()} for row in rows]
    widths = {k: max(len(k), *(len(r[k]) for r in shown)) for k in shown[0]}
    line = lambda r: "  ".join(r[k].ljust(widths[k]) for k in widths).rstrip()  # noqa: E731
    return "\n".join([line({k: k for k in widths}), line({k: "-" * w for k, w in widths.items()}), *map(line, shown)])


class SweepSummary(Callback):
    """Prints and saves the sweep's table; exits 2 when any job was refused."""

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        sweep_dir = Path(config.hydra.sweep.dir)
        rows = summarize(sweep_dir)
        if not rows:
            return
        (sweep_dir / "summary.json").write_text(json.dumps(rows, indent=2))
        with (sweep_dir / "summary.csv").open("w", newline="") as out:
            writer = csv.DictWriter(out, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
        refused = sum(not r["valid"] for r in rows)
        print(f"\nsweep: {len(rows)} job(s), {len(rows) - refused} valid, {refused} refused")
        print(table(rows))
        print(f"saved: {sweep_dir / 'summary.csv'} and summary.json")
        if refused:
            sys.exit(2)
