"""Sweep behaviour one case at a time: in-process dry-run multiruns and the summary functions.

tests/test_sweep.py runs sweeps as a user does (a subprocess, Ctrl-C); these cases run the same
entrypoint in-process so that each behaviour is checked in about a second: the verdict each job
writes, which rows and columns the summary has, its counts, files and exit code.
"""

import csv
import json
import sys
from pathlib import Path

import pytest
from hydra.core.hydra_config import HydraConfig
from omegaconf import OmegaConf

from verl_qwen35 import __main__ as entrypoint
from verl_qwen35 import sweep
from verl_qwen35.sweep import VERDICT, ActiveSweep, SweepSummary, first_reason, summarize, table, write_summary


@pytest.fixture
def multirun(tmp_path, monkeypatch):
    """`multirun(*overrides)` runs `verl-qwen35 -m ... dry_run=true` in-process; returns (exit code, stdout, rows)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("HYDRA_FULL_ERROR", raising=False)
    monkeypatch.setattr(HydraConfig.instance(), "cfg", HydraConfig.instance().cfg)  # restored after the case

    def run(*overrides: str, capsys) -> tuple[int, str, list[dict]]:
        sweep_dir = tmp_path / "sweep"
        argv = ["verl-qwen35", "-m", *overrides, "dry_run=true", f"hydra.sweep.dir={sweep_dir}"]
        monkeypatch.setattr(sys, "argv", argv)
        code = 0
        try:
            entrypoint.main()
        except SystemExit as stop:
            code = stop.code
        out = capsys.readouterr().out
        summary = sweep_dir / "summary.csv"
        rows = list(csv.DictReader(summary.open())) if summary.is_file() else []
        return code, out, rows

    return run


def test_a_sweep_with_one_refused_job_exits_2_and_tabulates_every_job(multirun, tmp_path, capsys):
    code, out, rows = multirun("model=35b", "device=gpu", "parallel.tp=2,3", capsys=capsys)
    assert code == 2
    assert "sweep: 2 job(s), 1 valid, 1 refused" in out
    assert [(r["job"], r["parallel.tp"], r["valid"], r["status"]) for r in rows] == [
        ("0", "2", "True", "ok"),
        ("1", "3", "False", "refused"),
    ]
    assert list(rows[0]) == ["job", "parallel.tp", "valid", "memory_gib", "status", "reason"], "swept keys only"
    assert rows[0]["reason"] == ""
    assert rows[1]["reason"].startswith("parallel.tp: world 1x8=8 is not divisible by tp*pp*cp=3*1*1=3")
    verdicts = [json.loads((tmp_path / "sweep" / str(n) / VERDICT).read_text()) for n in (0, 1)]
    assert [v["valid"] for v in verdicts] == [True, False]
    assert verdicts[1]["errors"][0]["keys"][0].startswith("parallel.tp")
    assert verdicts[0]["mode"] == "dry" and "parallel.tp=2" in verdicts[0]["overrides"]
    assert json.loads((tmp_path / "sweep" / "summary.json").read_text())[1]["valid"] is False


def test_an_all_valid_sweep_exits_0(multirun, capsys):
    code, out, rows = multirun("model=35b", "device=gpu,npu", capsys=capsys)
    assert code == 0
    assert "sweep: 2 job(s), 2 valid, 0 refused\n" in out
    assert [r["device"] for r in rows] == ["gpu", "npu"]


def _verdict(sweep_dir: Path, job: int, overrides: list[str], errors=(), status=None, sweep_id="this") -> None:
    (sweep_dir / str(job)).mkdir(parents=True, exist_ok=True)
    record = {
        "job": job,
        "sweep_id": sweep_id,
        "overrides": overrides,
        "mode": "dry",
        "status": status or ("refused" if errors else "ok"),
        "valid": not errors and status in (None, "ok"),
        "errors": [{"keys": list(keys), "message": message} for keys, message in errors],
        "warnings": [],
    }
    (sweep_dir / str(job) / VERDICT).write_text(json.dumps(record))


def test_summary_keeps_this_sweeps_jobs_adds_planned_ones_and_skips_unreadable_verdicts(tmp_path):
    _verdict(tmp_path, 0, ["model=35b", "parallel.tp=2"])
    _verdict(tmp_path, 1, ["model=35b", "parallel.tp=3"], errors=[(("parallel.tp (x.y)",), "bad tp")])
    _verdict(tmp_path, 5, ["model=35b", "parallel.tp=8"], sweep_id="an earlier sweep")
    (tmp_path / "7").mkdir()
    (tmp_path / "7" / VERDICT).write_text("{not json")
    planned = [["model=35b", "parallel.tp=2"], ["model=35b", "parallel.tp=3"], ["model=35b", "parallel.tp=4"]]
    rows = summarize(tmp_path, "this", planned)
    assert rows == [
        {"job": 0, "parallel.tp": "2", "valid": True, "memory_gib": "", "status": "ok", "reason": ""},
        {
            "job": 1,
            "parallel.tp": "3",
            "valid": False,
            "memory_gib": "",
            "status": "refused",
            "reason": "parallel.tp: bad tp",
        },
        {"job": 2, "parallel.tp": "4", "valid": False, "memory_gib": "", "status": "not run", "reason": ""},
    ]
    assert {r["job"] for r in summarize(tmp_path)} == {0, 1, 5}, "without a sweep id every readable verdict counts"


def test_when_nothing_varies_every_override_is_a_column(tmp_path):
    _verdict(tmp_path, 0, ["model=35b", "device=gpu"])
    (row,) = summarize(tmp_path, "this")
    assert list(row) == ["job", "device", "model", "valid", "memory_gib", "status", "reason"]


def test_first_reason_is_the_short_key_and_message_of_the_first_error():
    record = {"errors": [{"keys": ["parallel.ep (a.b)", "x"], "message": "first"}, {"keys": ["y"], "message": "2nd"}]}
    assert first_reason(record) == "parallel.ep: first"
    assert first_reason({"errors": []}) == ""


def test_table_aligns_columns_and_cuts_long_reasons():
    rows = [{"job": 0, "reason": "r" * 30}, {"job": 10, "reason": "short"}]
    lines = table(rows, reason_width=12).splitlines()
    assert lines == ["job  reason", "---  ------------", "0    rrrrrrrrrrrr", "10   short"]
    assert table([]) == "(no jobs)"


def test_write_summary_counts_each_status_and_the_callback_exits_2_unless_all_ok(tmp_path, capsys):
    _verdict(tmp_path, 0, ["parallel.tp=2"])
    _verdict(tmp_path, 1, ["parallel.tp=3"], errors=[(("parallel.tp",), "bad")])
    _verdict(tmp_path, 2, ["parallel.tp=4"], errors=[(("job",), "boom")], status="failed")
    rows = write_summary(ActiveSweep(tmp_path, "this"))
    out = capsys.readouterr().out
    assert "sweep: 3 job(s), 1 valid, 1 refused, 1 failed" in out
    assert [r["status"] for r in rows] == ["ok", "refused", "failed"]
    assert list(csv.DictReader((tmp_path / "summary.csv").open()))[2]["status"] == "failed"
    config = {"hydra": {"sweep": {"dir": str(tmp_path)}}}
    sweep._ACTIVE = ActiveSweep(tmp_path, "this")
    with pytest.raises(SystemExit) as stop:
        SweepSummary().on_multirun_end(OmegaConf.create(config))
    assert stop.value.code == 2 and sweep._ACTIVE is None
    for job in ("1", "2"):
        (tmp_path / job / VERDICT).unlink()
    sweep._ACTIVE = ActiveSweep(tmp_path, "this")
    SweepSummary().on_multirun_end(OmegaConf.create(config))  # all ok: returns, no exit
    assert "sweep: 1 job(s), 1 valid, 0 refused\n" in capsys.readouterr().out


def test_ctrl_c_marks_this_sweeps_running_jobs_interrupted_and_writes_the_summary(tmp_path, capsys, monkeypatch):
    _verdict(tmp_path, 0, ["parallel.tp=2"])
    _verdict(tmp_path, 1, ["parallel.tp=4"], status="running")
    _verdict(tmp_path, 2, ["parallel.tp=8"], status="running", sweep_id="another sweep")
    monkeypatch.setattr(
        sweep, "_ACTIVE", ActiveSweep(tmp_path, "this", [["parallel.tp=2"], ["parallel.tp=4"], ["x=1"]])
    )
    sweep.interrupted()
    assert sweep._ACTIVE is None
    one = json.loads((tmp_path / "1" / VERDICT).read_text())
    assert (one["status"], one["valid"], one["errors"][0]["message"]) == ("interrupted", False, "stopped by Ctrl-C")
    assert json.loads((tmp_path / "2" / VERDICT).read_text())["status"] == "running", "another sweep's job was touched"
    out = capsys.readouterr().out
    assert "1 interrupted" in out and "1 not run" in out and "sweep interrupted: 1 job(s) finished" in out
    sweep.interrupted()  # no sweep running: nothing to do
    assert capsys.readouterr().out == ""
