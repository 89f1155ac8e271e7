"""Sweep behaviour one case at a time: in-process dry-run multiruns and the summary functions.

tests/integration/test_sweep.py runs sweeps as a user does (a subprocess, Ctrl-C); these cases run the same
entrypoint in-process so that each behaviour is checked in about a second: the verdict each job
writes, which rows and columns the summary has, its counts, files and exit code.
"""

import csv
import json
import sys
from pathlib import Path

import pytest
from hydra import initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf, open_dict

from verl_qwen35.cli import main as entrypoint
from verl_qwen35.config.resolvers import register_resolvers
from verl_qwen35.config.schema import register_schema
from verl_qwen35.config.sources import register_sources
from verl_qwen35.errors import UserError
from verl_qwen35.installed import conf_dir
from verl_qwen35.records.summary import MEMORY_COLUMNS, STEP_COLUMNS, first_reason, summarize, table
from verl_qwen35.records.verdict import VERDICT, note_job_id
from verl_qwen35.run import sweep
from verl_qwen35.run.sweep import ActiveSweep, SweepSummary, write_summary


@pytest.fixture
def multirun(tmp_path, monkeypatch):
    """`multirun(*overrides)` runs `verl-qwen35 -m ... dry_run=true` in-process; returns (exit code, stdout, rows)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("HYDRA_FULL_ERROR", raising=False)
    monkeypatch.setattr(HydraConfig.instance(), "cfg", HydraConfig.instance().cfg)  # restored after the case

    def run(*overrides: str, capsys, sweep_dir: Path | None = None) -> tuple[int, str, list[dict]]:
        sweep_dir = sweep_dir or tmp_path / "sweep"
        argv = ["verl-qwen35", "-m", *overrides, "dry_run=true", f"hydra.sweep.dir='{sweep_dir}'"]
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
    missing = "data.train_files=/nonexistent/train.parquet"  # a dry run's warning, recorded in the verdict
    code, out, rows = multirun("model=35b", "device=gpu", "parallel.tp=2,3", missing, capsys=capsys)
    assert code == 2
    assert "sweep: 2 job(s), 1 valid, 1 refused" in out
    assert [(r["job"], r["parallel.tp"], r["valid"], r["status"]) for r in rows] == [
        ("0", "2", "True", "ok"),
        ("1", "3", "False", "refused"),
    ]
    columns = ["job", "parallel.tp", "valid", "status", *STEP_COLUMNS, *MEMORY_COLUMNS, "reason"]
    assert list(rows[0]) == columns, "swept keys only"
    assert rows[0]["reason"] == ""
    assert rows[1]["reason"].startswith("parallel.tp: world 1x8=8 is not divisible by tp*pp*cp=3*1*1=3")
    verdicts = [json.loads((tmp_path / "sweep" / str(n) / VERDICT).read_text()) for n in (0, 1)]
    assert [v["valid"] for v in verdicts] == [True, False]
    assert verdicts[1]["errors"][0]["keys"][0].startswith("parallel.tp")
    assert verdicts[0]["mode"] == "dry" and "parallel.tp=2" in verdicts[0]["overrides"]
    (warned,) = [w for w in verdicts[0]["warnings"] if w["keys"] == ["data.train_files"]]
    assert warned["message"].startswith("/nonexistent/train.parquet does not exist; correct the path data.train_")
    assert json.loads((tmp_path / "sweep" / "summary.json").read_text())[1]["valid"] is False


def test_an_all_valid_sweep_exits_0_and_a_job_above_the_headroom_floor_says_so(multirun, tmp_path, capsys):
    """Valid jobs only: exit 0. 122B's NPU preset needs 56.2 GiB of an A3 die's 61.27 (92%, above the dry run's
    90% floor); on a 64 GiB device the same job is under it. The row says why in its status and reason, and
    summary.json has numbers."""
    code, out, rows = multirun("model=122b", "device=npu", "hardware.device_memory_gib=61.27,64", capsys=capsys)
    assert code == 0, "a warning is no refusal"
    assert "sweep: 2 job(s), 2 valid, 0 refused, 1 little headroom" in out
    assert [(r["status"], r["valid"]) for r in rows] == [("little headroom", "True"), ("ok", "True")]
    needs = "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu: training needs 56.2 GiB of 61.27 GiB (92%)"
    assert rows[0]["reason"].startswith(needs)  # the old-policy pass is the peak: its micro-batch first
    assert "little headroom" in rows[0]["reason"] and rows[1]["reason"] == ""
    typed = json.loads((tmp_path / "sweep" / "summary.json").read_text())
    assert [r["hardware.device_memory_gib"] for r in typed] == [61.27, 64]
    assert [type(r[c]) for r in typed for c in MEMORY_COLUMNS] == [float] * 6 and typed[0]["valid"] is True
    assert typed[0]["train_gib"] == typed[1]["train_gib"] and typed[0]["train_gib"] / 61.27 > 0.9
    # What a person reads: not a plain `True` above the floor, and each job's predicted step with its band.
    printed = {line.split()[0]: line for line in out.splitlines() if line[:1].isdigit()}
    assert "True (little headroom)  little headroom" in printed["0"]
    assert "True (little headroom)" not in printed["1"] and " True " in printed["1"]
    step = typed[0]
    assert step["step_low_s"] < step["step_s"] < step["step_high_s"]
    assert f"~{step['step_s']:.0f} ({step['step_low_s']:.0f}-{step['step_high_s']:.0f})" in printed["0"]
    assert "s/step (band)" in out and float(rows[0]["step_s"]) == step["step_s"]


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
    blank = dict.fromkeys([*STEP_COLUMNS, *MEMORY_COLUMNS])  # no memory estimate nor step in these verdicts
    assert rows == [
        {"job": 0, "parallel.tp": 2, "valid": True, **blank, "status": "ok", "reason": ""},
        {"job": 1, "parallel.tp": 3, "valid": False, **blank, "status": "refused", "reason": "parallel.tp: bad tp"},
        {"job": 2, "parallel.tp": 4, "valid": False, **blank, "status": "not run", "reason": ""},
    ]
    assert {r["job"] for r in summarize(tmp_path)} == {0, 1, 5}, "without a sweep id every readable verdict counts"


def test_when_nothing_varies_every_override_is_a_column(tmp_path):
    _verdict(tmp_path, 0, ["model=35b", "device=gpu"])
    (row,) = summarize(tmp_path, "this")
    assert list(row) == ["job", "device", "model", "valid", "status", *STEP_COLUMNS, *MEMORY_COLUMNS, "reason"]


def test_first_reason_is_the_short_key_and_message_of_the_first_error():
    record = {"errors": [{"keys": ["parallel.ep (a.b)", "x"], "message": "first"}, {"keys": ["y"], "message": "2nd"}]}
    assert first_reason(record) == "parallel.ep: first"
    assert first_reason({"errors": []}) == ""


def test_table_aligns_columns_and_cuts_long_reasons():
    rows = [{"job": 0, "reason": "r" * 30}, {"job": 10, "reason": "short"}]
    lines = table(rows, reason_width=12).splitlines()
    assert lines[0].split() == ["job", "reason"] and set(lines[1]) == {"-", " "}
    start = lines[0].index("reason")  # every cell starts under its header
    assert [(line[:start].strip(), line[start:]) for line in lines[2:]] == [("0", "r" * 12), ("10", "short")]
    assert table([]) == "(no jobs)"


def test_write_summary_counts_each_status_and_the_callback_exits_2_unless_all_ok(tmp_path, capsys):
    _verdict(tmp_path, 0, ["parallel.tp=2"])
    _verdict(tmp_path, 1, ["parallel.tp=3"], errors=[(("parallel.tp",), "bad")])
    _verdict(tmp_path, 2, ["parallel.tp=4"], errors=[(("job",), "boom")], status="failed")
    rows = write_summary(ActiveSweep(tmp_path, "this"))
    out = capsys.readouterr().out
    assert "sweep: 3 job(s), 1 valid, 1 refused, 1 failed" in out
    assert f"{table(rows)}\nsaved: {tmp_path / 'summary.csv'} and summary.json\n" in out
    assert [r["status"] for r in rows] == ["ok", "refused", "failed"]
    assert list(csv.DictReader((tmp_path / "summary.csv").open()))[2]["status"] == "failed"
    assert (tmp_path / "summary.json").read_text() == json.dumps(rows, indent=2), "indented for people"
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
    text = (tmp_path / "1" / VERDICT).read_text()
    one = json.loads(text)
    assert (one["status"], one["valid"], one["errors"]) == (
        "interrupted",
        False,
        [{"keys": ["job"], "message": "stopped by Ctrl-C"}],
    )
    assert text == json.dumps(one, indent=2), "indented for people"
    assert json.loads((tmp_path / "2" / VERDICT).read_text())["status"] == "running", "another sweep's job was touched"
    out = capsys.readouterr().out
    assert "1 interrupted" in out and "1 not run" in out and "sweep interrupted: 1 job(s) finished" in out
    sweep.interrupted()  # no sweep running: nothing to do
    assert capsys.readouterr().out == ""


def test_outside_any_hydra_run_there_is_no_multirun(monkeypatch):
    """in_multirun() is asked by code that may run without Hydra (e.g. from relaunch): False, no error."""
    monkeypatch.setattr(HydraConfig.instance(), "cfg", None)
    assert not HydraConfig.initialized()
    assert sweep.in_multirun() is False


def test_a_cluster_job_id_is_added_to_the_jobs_verdict(tmp_path):
    (tmp_path / VERDICT).write_text(json.dumps({"job": 0, "status": "ok"}, indent=2))
    note_job_id(str(tmp_path), "12345")
    text = (tmp_path / VERDICT).read_text()
    assert text == json.dumps({"job": 0, "status": "ok", "job_id": "12345"}, indent=2), "indented as written"


def test_each_jobs_verdict_is_indented_for_people(multirun, tmp_path, capsys):
    code, _, rows = multirun("device=gpu", "model=35b", "parallel.tp=2,4", capsys=capsys)
    assert code == 0 and len(rows) == 2
    text = (tmp_path / "sweep" / "1" / VERDICT).read_text()
    assert text.startswith('{\n  "job": 1,\n  "sweep_id": '), text[:80]


@pytest.fixture
def sweep_job(monkeypatch):
    """`sweep_job(num, *overrides)`: Hydra's state inside job `num` of a real multirun of these overrides;
    returns the sweep's (master) config and the job's.

    The sweep's config is composed as `-m` composes it, the job's config as Hydra's basic launcher
    loads it (hydra/_internal/core_plugins/basic_launcher.py: load_sweep_config, then job.num)."""
    monkeypatch.setattr(HydraConfig.instance(), "cfg", HydraConfig.instance().cfg)  # restored after the case
    monkeypatch.setattr(sweep, "_ACTIVE", None)
    register_resolvers()  # what the command registers before Hydra composes
    register_schema()
    register_sources()

    def enter(num: int, *overrides: str, sweep_dir: Path) -> tuple[DictConfig, DictConfig]:
        with initialize_config_dir(str(conf_dir()), version_base=None, job_name="verl_qwen35"):
            hydra = GlobalHydra.instance().hydra
            # As the command hands them to Hydra (implicit choices such as verl_schema added), and `-m`
            # as Hydra adds it (hydra/_internal/utils.py: _run_hydra).
            lines = [*entrypoint.with_implicit([*overrides, f"hydra.sweep.dir={sweep_dir}"]), "hydra.mode=MULTIRUN"]
            master = hydra.compose_config("config", lines, run_mode=RunMode.MULTIRUN)
            job = hydra.config_loader.load_sweep_config(master, sweep.planned_jobs(master)[num])
        with open_dict(job):
            job.hydra.job.num = num
        HydraConfig.instance().set_config(job)
        return master, job

    return enter


def test_the_planned_jobs_are_the_jobs_the_sweep_runs_interpolations_unresolved(sweep_job, multirun, tmp_path, capsys):
    """Planned jobs become the 'not run' rows of a sweep Ctrl-C stopped: they must be the sweep's own jobs."""
    overrides = ("model=35b", "device=gpu", "parallel.tp=2,4", "parallel.ep=1,${parallel.tp}")
    master, _ = sweep_job(0, *overrides, "dry_run=true", sweep_dir=tmp_path / "sweep")
    planned = sweep.planned_jobs(master)
    # As Hydra's basic sweeper hands them to its jobs: `${...}` escaped, for each job to resolve.
    assert [job[-3:-1] for job in planned] == [
        ["parallel.tp=2", "parallel.ep=1"],
        ["parallel.tp=2", "parallel.ep=$\\{parallel.tp\\}"],
        ["parallel.tp=4", "parallel.ep=1"],
        ["parallel.tp=4", "parallel.ep=$\\{parallel.tp\\}"],
    ]
    multirun(*overrides, capsys=capsys)
    assert planned == [_job_verdict(tmp_path / "sweep", n)["overrides"] for n in range(4)]


def test_sweeper_params_are_planned_resolved_as_hydra_instantiates_the_sweeper(sweep_job, multirun, tmp_path, capsys):
    """`hydra.sweeper.params` (a config file's sweep) reach the sweeper resolved against the sweep's config
    (hydra/core/plugins.py instantiate_sweeper), unlike command-line sweeps, which each job resolves."""
    overrides = (
        "model=35b",
        "device=gpu",
        "parallel.tp=2,4",
        "++hydra.sweeper.params={parallel.ep:'1,${parallel.tp}'}",
    )
    master, _ = sweep_job(0, *overrides, "dry_run=true", sweep_dir=tmp_path / "sweep")
    planned = sweep.planned_jobs(master)
    multirun(*overrides, capsys=capsys)
    ran = [_job_verdict(tmp_path / "sweep", n)["overrides"] for n in range(4)]
    preset_tp = "parallel.ep=2"  # 35b_gpu's tp, not each job's
    assert [job[0] for job in ran] == ["parallel.ep=1", "parallel.ep=1", preset_tp, preset_tp]
    assert planned == ran


def test_a_sweeper_other_than_the_basic_one_plans_nothing(sweep_job, tmp_path):
    """Another sweeper (optuna, ...) chooses its jobs as it goes: no 'not run' rows can be predicted."""
    master, _ = sweep_job(0, "model=35b", "parallel.tp=2,4", sweep_dir=tmp_path)
    assert sweep.planned_jobs(master)
    with open_dict(master):
        master.hydra.sweeper._target_ = "hydra.plugins.sweeper.Sweeper"
    assert sweep.planned_jobs(master) == []


def _job_verdict(sweep_dir: Path, num: int) -> dict:
    return json.loads((sweep_dir / str(num) / VERDICT).read_text())


def test_a_job_that_exits_nonzero_is_failed_with_its_code_and_the_sweep_goes_on(sweep_job, tmp_path, capsys):
    sweep_job(1, "model=35b", "parallel.tp=2,4", sweep_dir=tmp_path)
    output_dir = tmp_path / "1"
    output_dir.mkdir()
    sweep.guarded_job(lambda: sys.exit(3), str(output_dir), "dry")  # returns: the next job runs
    record = _job_verdict(tmp_path, 1)
    assert (record["job"], record["status"], record["valid"], record["mode"]) == (1, "failed", False, "dry")
    assert record["errors"] == [{"keys": [], "message": "exited with code 3"}]
    assert record["overrides"][-2:] == ["model=35b", "parallel.tp=4"]
    assert "job 1 failed: exited with code 3" in capsys.readouterr().err


@pytest.mark.parametrize("code", [0, None])
def test_a_job_that_exits_0_keeps_the_verdict_it_wrote(sweep_job, tmp_path, code):
    sweep_job(0, "model=35b", "parallel.tp=2,4", sweep_dir=tmp_path)
    output_dir = tmp_path / "0"
    output_dir.mkdir()

    def job() -> None:
        sweep.write_verdict(str(output_dir), "launch", [])
        sys.exit(code)

    sweep.guarded_job(job, str(output_dir), "launch")
    assert (_job_verdict(tmp_path, 0)["status"], _job_verdict(tmp_path, 0)["valid"]) == ("ok", True)


def test_ctrl_c_inside_a_job_leaves_it_running_for_the_summary_to_mark_interrupted(sweep_job, tmp_path):
    sweep_job(0, "model=35b", "parallel.tp=2,4", sweep_dir=tmp_path)
    output_dir = tmp_path / "0"
    output_dir.mkdir()

    def job() -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):  # not a job failure: the whole sweep stops
        sweep.guarded_job(job, str(output_dir), "dry")
    assert _job_verdict(tmp_path, 0)["status"] == "running"


def test_a_job_that_raises_is_failed_user_mistakes_with_their_answer_bugs_with_a_traceback_file(
    sweep_job, tmp_path, capsys
):
    sweep_job(0, "model=35b", "parallel.tp=2,4", sweep_dir=tmp_path)
    output_dir = tmp_path / "0"
    output_dir.mkdir()

    def mistake() -> None:
        raise UserError("parallel.tp=4: not a divisor; use 2")

    sweep.guarded_job(mistake, str(output_dir), "dry")
    assert _job_verdict(tmp_path, 0)["errors"][0]["message"] == "parallel.tp=4: not a divisor; use 2"
    assert not (output_dir / "error.log").exists()

    def bug() -> None:
        raise RuntimeError("boom")

    sweep.guarded_job(bug, str(output_dir), "dry")
    record = _job_verdict(tmp_path, 0)
    assert record["status"] == "failed"
    assert record["errors"][0]["message"] == f"RuntimeError: boom (traceback in {output_dir / 'error.log'})"
    assert "Traceback" in (output_dir / "error.log").read_text() and "boom" in capsys.readouterr().err


def test_ctrl_c_before_any_job_wrote_its_directory_still_writes_the_summary(tmp_path, monkeypatch, capsys):
    """The sweep directory (multirun/<day>/<time>-<tag>) exists only once a job ran; the summary creates it."""
    sweep_dir = tmp_path / "multirun" / "day" / "time"
    planned = [["parallel.tp=2"], ["parallel.tp=4"]]
    monkeypatch.setattr(sweep, "_ACTIVE", ActiveSweep(sweep_dir, "this", planned))
    sweep.interrupted()
    rows = json.loads((sweep_dir / "summary.json").read_text())
    assert [(r["parallel.tp"], r["status"]) for r in rows] == [(2, "not run"), (4, "not run")]
    assert "sweep interrupted: 0 job(s) finished" in capsys.readouterr().out


def test_a_job_whose_run_dir_the_submission_cannot_carry_is_refused_with_the_reason(multirun, tmp_path, capsys):
    """submit=slurm refuses a run dir an `#SBATCH` line cannot carry: a preflight refusal of each job (known once
    Hydra picks the job's directory, before its verdict), and the sweep goes on."""
    sweep_dir = tmp_path / "my sweep"
    code, _, rows = multirun(
        "model=35b", "device=gpu", "parallel.tp=2,4", "submit=slurm", capsys=capsys, sweep_dir=sweep_dir
    )
    assert code == 2
    assert [(r["status"], r["valid"]) for r in rows] == [("refused", "False")] * 2
    for row in rows:  # the reason itself, not only an exit code
        assert row["reason"].startswith("hydra.run.dir: ") and "my sweep" in row["reason"], row["reason"]
    assert not list(sweep_dir.glob("*/job.sbatch")) and not list(sweep_dir.glob("*/launch.yaml")), "nothing to submit"


def test_a_single_run_writes_its_verdict_as_job_0_of_no_sweep(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(HydraConfig.instance(), "cfg", HydraConfig.instance().cfg)  # restored after the case
    monkeypatch.setattr(sweep, "_ACTIVE", None)
    argv = ["verl-qwen35", "model=35b", "device=gpu", "parallel.tp=4", "dry_run=true", f"hydra.run.dir={tmp_path}/run"]
    monkeypatch.setattr(sys, "argv", argv)
    entrypoint.main()  # valid: returns
    record = json.loads((tmp_path / "run" / VERDICT).read_text())
    assert (record["job"], record["sweep_id"], record["status"], record["valid"]) == (0, None, "ok", True)
    assert record["overrides"][-2:] == ["parallel.tp=4", "dry_run=true"]


def test_a_jobs_run_name_tag_is_its_sweep_directory_and_number(sweep_job, tmp_path):
    """trainer.experiment_name gets `<day>_<time-tag>_job<N>` (app.separate_sweep_job): unique across sweeps."""
    sweep_job(1, "model=35b", "parallel.tp=2,4", sweep_dir=tmp_path / "multirun" / "2026-11-30" / "10-00-00 ab")
    assert sweep.job_tag() == "2026-11-30_10-00-00_ab_job1"


def test_a_verdict_given_status_ok_is_valid_and_any_other_status_is_not(sweep_job, tmp_path):
    sweep_job(0, "model=35b", "parallel.tp=2,4", sweep_dir=tmp_path)
    for status, valid in (("ok", True), (None, True), ("failed", False), ("running", False)):
        sweep.write_verdict(str(tmp_path), "dry", [], status=status)
        assert json.loads((tmp_path / VERDICT).read_text())["valid"] is valid, status


def test_unreadable_verdicts_alone_make_an_empty_summary(tmp_path):
    """A job killed mid-write leaves broken JSON; a `verdict.json` that cannot be read at all is skipped too."""
    (tmp_path / "0").mkdir()
    (tmp_path / "0" / VERDICT).write_text('{"job": 0, "sta')
    (tmp_path / "1" / VERDICT).mkdir(parents=True)  # reading it raises IsADirectoryError, an OSError
    assert summarize(tmp_path, "this") == [] and summarize(tmp_path) == []


def test_a_submitted_sweep_has_a_job_id_column_empty_where_a_job_was_not_submitted(tmp_path):
    _verdict(tmp_path, 0, ["parallel.tp=2"])
    _verdict(tmp_path, 1, ["parallel.tp=4"])
    note_job_id(str(tmp_path / "0"), "4242")
    rows = summarize(tmp_path, "this")
    assert [(r["job_id"], r["status"]) for r in rows] == [("4242", "ok"), ("", "ok")]
    columns = ["job", "parallel.tp", "valid", "status", *STEP_COLUMNS, *MEMORY_COLUMNS, "job_id", "reason"]
    assert list(rows[0]) == columns


def test_a_verdict_without_a_status_is_ok_when_valid_else_refused(tmp_path):
    """Verdicts written before `status` existed (an older sweep directory) still summarize."""
    for job, valid in ((0, True), (1, False)):
        (tmp_path / str(job)).mkdir()
        record = {"job": job, "sweep_id": "this", "overrides": [f"parallel.tp={job}"], "valid": valid, "errors": []}
        (tmp_path / str(job) / VERDICT).write_text(json.dumps(record))
    assert [r["status"] for r in summarize(tmp_path, "this")] == ["ok", "refused"]


def test_the_table_cuts_cells_at_100_characters_by_default():
    (head, _, row) = table([{"job": 0, "reason": "r" * 150}]).splitlines()
    assert row[head.index("reason") :] == "r" * 100


def test_a_sweep_with_no_verdicts_writes_no_summary(tmp_path, capsys):
    assert write_summary(ActiveSweep(tmp_path / "never", "this")) == []
    assert not (tmp_path / "never").exists() and capsys.readouterr().out == ""
