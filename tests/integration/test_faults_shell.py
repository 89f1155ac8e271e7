"""Fault table, shell and records: hostile values for the cluster's job script, and launch records others could write.

Every row runs the real command (Hydra composition, preflight, submit=slurm's dry run that writes
launch.yaml and job.sbatch) and asserts the exit code, no traceback, no marker file anywhere (each
hostile value tries to create one, `MARK`, when a shell runs it), and nothing half-written. A value
the script can carry is then run for real: `bash -n` on the script, its settings block under bash
(what the job runs first), and its `#SBATCH` block parsed as Slurm does.
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.commands import verl_qwen35
from tests.ray_head import free_ports
from verl_qwen35.records.launch import digest, read_launch_file
from verl_qwen35.run.environment import effective_env

BASE = ("device=gpu", "model=35b", "submit=slurm", "dry_run=true", "hydra.run.dir=run")
MARK = "MARK"
HOSTILE = "$(touch MARK)`touch MARK`;touch MARK\n touch MARK #' \"\\ ${IFS}"


def _user_conf(tmp: Path) -> Path:
    """A --config-dir whose `extra` group sets env names and values no shell can take."""
    extra = tmp / "conf_dir" / "extra"
    extra.mkdir(parents=True)
    (extra / "bad_name.yaml").write_text('# @package _global_\nenv:\n  set:\n    "X$(touch MARK)": "1"\n')
    (extra / "nul_value.yaml").write_text('# @package _global_\nenv:\n  set:\n    MY_VAR: "a\\0b"\n')
    (extra / "bad_unset.yaml").write_text("# @package _global_\nenv:\n  unset: ['http_proxy', 'x;touch MARK']\n")
    return tmp / "conf_dir"


def no_marker_anywhere(tmp: Path) -> None:
    assert not [p for p in tmp.rglob(MARK)], "a hostile value ran"
    assert not Path.cwd().joinpath(MARK).exists()


def nothing_half_written(run_dir: Path) -> None:
    """No temporary file of an interrupted write, and a record that is there reads back whole."""
    assert not list(run_dir.glob(".*.tmp")) if run_dir.is_dir() else True
    if (run_dir / "launch.yaml").exists():
        read_launch_file(run_dir / "launch.yaml")


# (id, argv after BASE, the key the message names); each is refused before job.sbatch or launch.yaml exists.
REFUSED = [
    ("env-unset-command", ["env.unset=['x;touch MARK']"], "env.unset[0]"),
    ("env-unset-leading-digit", ["env.unset=[1ABC]"], "env.unset[0]"),
    ("env-unset-assignment", ["env.unset=['A=B']"], "env.unset[0]"),
    ("env-set-name-from-config-dir", ["+extra=bad_name"], "env.set"),
    ("env-unset-from-config-dir", ["+extra=bad_unset"], "env.unset[1]"),
    ("env-value-nul-from-config-dir", ["+extra=nul_value"], "env.set.MY_VAR"),
    ("job-name-newline-drops-nodes", ["submit.job_name='a\n#SBATCH --nodes=64'"], "submit.job_name"),
    ("job-name-space", ["submit.job_name='a b'"], "submit.job_name"),
    ("job-name-hash", ["submit.job_name='a#b'"], "submit.job_name"),
    ("job-name-command", ["submit.job_name='$(touch MARK)'"], "submit.job_name"),
    ("sbatch-entry-space", ["submit.sbatch=['--comment=a b']"], "submit.sbatch"),
    ("sbatch-entry-hash", ["submit.sbatch=['--qos=high#x']"], "submit.sbatch"),
    ("sbatch-entry-newline", ["submit.sbatch=['--qos=a\ntouch MARK']"], "submit.sbatch"),
    ("sbatch-entry-quote", ["submit.sbatch=[\"--comment='x'\"]"], "submit.sbatch"),
    ("partition-newline", ["submit.partition='a\ntouch MARK'"], "submit.partition"),
    ("dashboard-host-command", ["submit.ray.dashboard_host='$(touch MARK)'"], "submit.ray.dashboard_host"),
    ("ray-auth-mode-unknown", ["submit.ray.auth_mode=none"], "submit.ray.auth_mode"),
    ("setup-line-break", ["submit.setup=['echo a\ntouch MARK']"], "submit.setup[0]"),
    ("run-dir-space", ["hydra.run.dir='run dir'"], "hydra.run.dir"),
]


@pytest.mark.parametrize(("argv", "key"), [case[1:] for case in REFUSED], ids=[case[0] for case in REFUSED])
def test_a_value_no_script_can_carry_is_refused_naming_its_key(cli, tmp_path, argv, key):
    conf = _user_conf(tmp_path)
    said = cli("--config-dir", str(conf), *BASE, *argv)
    assert said.code == 2, said.said
    assert "Traceback" not in said.said and key in said.err
    for run_dir in (p for p in tmp_path.iterdir() if p.is_dir() and p.name.startswith("run")):
        assert not (run_dir / "job.sbatch").exists() and not (run_dir / "launch.yaml").exists()
        nothing_half_written(run_dir)
    no_marker_anywhere(tmp_path)


# The script's settings block (`RUN_DIR=` .. `set -euo pipefail`) under bash, then each named variable's
# elements NUL-separated, one variable per line of output: what the job's body sees.
SHOW = (
    'source <(sed -n "/^RUN_DIR=/,/^set -euo pipefail/p" "$1"); shift; '
    'for name; do ref="$name[@]"; printf "%s\\0" "${!ref}"; printf "\\n"; done'
)


def settings_seen(script: Path, *names: str) -> dict[str, list[str]]:
    done = subprocess.run(
        ["bash", "-c", SHOW, "-", str(script), *names], cwd=script.parent, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    values = done.stdout.split("\0\n")
    return {name: value.split("\0") if value else [] for name, value in zip(names, values, strict=False)}


def slurm_options(script: Path) -> list[str]:
    """`#SBATCH` options as sbatch reads them (src/sbatch/opt.c): from the lines after the first, until the
    first line that is neither a comment nor blank; each line split at whitespace, cut at an unquoted '#'."""
    options = []
    for line in script.read_text().splitlines()[1:]:
        if line.startswith("#SBATCH"):
            options += line.removeprefix("#SBATCH").split("#")[0].split()
        elif line.strip() and not line.lstrip().startswith("#"):
            break
    return options


def dry_submit(tmp_path: Path, *argv: str, run_dir: str = "run", **env: str) -> Path:
    run = verl_qwen35(tmp_path, *BASE, *argv, **env)
    assert run.returncode == 0, run.stderr
    assert "Traceback" not in run.stderr
    script = tmp_path / run_dir / "job.sbatch"
    assert subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True).returncode == 0
    nothing_half_written(script.parent)
    return script


@pytest.mark.parametrize(
    "name",
    ["a b#c\n#SBATCH --nodes=64", "$(touch MARK)", "run\n--exclusive\ntouch MARK", "#", "名前 with ünicode"],
    ids=["newline-sbatch", "command", "newline-command", "only-hash", "unicode"],
)
def test_any_experiment_name_becomes_one_job_name_word_and_the_sbatch_block_stays_whole(tmp_path, name):
    """verl lets trainer.experiment_name be any text on one line (wandb shows it); the job name made of it is one
    word. A line break is refused, naming the key, before anything is written (config/line_breaks.py)."""
    if "\n" in name:
        run = verl_qwen35(tmp_path, *BASE, f"trainer.experiment_name='{name}'", "submit.partition=a100")
        assert run.returncode == 2 and "trainer.experiment_name: its value holds a line break" in run.stderr
        assert not (tmp_path / "run").exists()
        no_marker_anywhere(tmp_path)
        return
    script = dry_submit(tmp_path, f"trainer.experiment_name='{name}'", "submit.partition=a100")
    options = slurm_options(script)
    (job_name,) = [o for o in options if o.startswith("--job-name=")]
    assert job_name.removeprefix("--job-name=").replace("_", "").replace("-", "").isalnum(), job_name
    for kept in ("--nodes=1", "--exclusive", "--partition=a100", "--ntasks-per-node=1", "--gpus-per-node=8"):
        assert kept in options, (kept, options)
    assert not [o for o in options if o.startswith("--nodes=") and o != "--nodes=1"]
    settings_seen(script, "RUN_DIR")
    no_marker_anywhere(tmp_path)


def test_a_hostile_shell_value_is_exported_to_the_job_exactly_and_runs_nothing(tmp_path):
    """A variable of env.set takes the launching shell's value; job.sbatch exports it quoted, byte for byte."""
    script = dry_submit(tmp_path, "+env.set.MY_VAR=plain", MY_VAR=HOSTILE)
    assert f"export MY_VAR={HOSTILE}" not in script.read_text()
    seen = settings_seen(script, "MY_VAR", "http_proxy", "RUN_DIR")
    assert seen["MY_VAR"] == [HOSTILE] and seen["RUN_DIR"] == [str(tmp_path / "run")]
    relaunched, _ = read_launch_file(script.parent / "launch.yaml")  # the record keeps it as text, not `${IFS}`
    assert effective_env(relaunched, {})["MY_VAR"] == HOSTILE
    no_marker_anywhere(tmp_path)


def hydra_list(items: list[str]) -> str:
    """A Hydra override list of quoted strings (backslash escapes a quote inside one)."""
    return "[" + ",".join('"' + i.replace("\\", "\\\\").replace('"', '\\"') + '"' for i in items) + "]"


def test_hostile_ray_arguments_and_python_command_reach_the_arrays_as_data(tmp_path):
    head = ["--x=$(touch MARK)", "a'b", 'c"d', "e f;touch MARK"]
    script = dry_submit(
        tmp_path,
        f"submit.ray.head_args={hydra_list(head)}",
        "submit.ray.worker_args=['`touch MARK`']",
        "submit.python='python -c \"$(touch MARK)\"'",
    )
    seen = settings_seen(script, "RAY_HEAD_ARGS", "RAY_WORKER_ARGS", "PYTHON", "RAY_DASHBOARD_HOST", "RAY_AUTH")
    assert seen["RAY_HEAD_ARGS"] == head and seen["RAY_WORKER_ARGS"] == ["`touch MARK`"]
    assert seen["PYTHON"] == ["python", "-c", "$(touch MARK)"]
    assert seen["RAY_DASHBOARD_HOST"] == ["127.0.0.1"]  # the dashboard (Ray's Jobs API) on the head only
    assert seen["RAY_AUTH"] == ["token"]  # and Ray's token authentication on
    no_marker_anywhere(tmp_path)


def test_a_run_dir_with_shell_characters_is_one_quoted_word(tmp_path):
    name = "run$(>MARK);`>MARK`"
    script = dry_submit(tmp_path, f"hydra.run.dir='{name}'", run_dir=name)
    assert settings_seen(script, "RUN_DIR")["RUN_DIR"] == [str(script.parent)]
    assert f"--output={script.parent}/slurm-%j.out" in slurm_options(script)
    no_marker_anywhere(tmp_path)


def test_a_line_break_in_the_run_dir_is_refused_before_anything_is_written(tmp_path):
    """A run dir with a line break could end a comment of the record or a line of job.sbatch: refused first."""
    run = verl_qwen35(tmp_path, "submit=ray_job", "dry_run=true", "hydra.run.dir='run\nconfig: {}\nx'")
    assert run.returncode == 2 and "hydra.run.dir: its value holds a line break" in run.stderr, run.stderr
    assert list(tmp_path.iterdir()) == []


def _record(tmp_path: Path) -> Path:
    dry_submit(tmp_path)
    return tmp_path / "run" / "launch.yaml"


def test_records_are_written_mode_600_in_a_run_dir_only_the_user_can_write_even_under_umask_0(tmp_path):
    run = subprocess.run(
        ["bash", "-c", 'umask 000; exec "$@"', "-", sys.executable, "-m", "verl_qwen35", *BASE],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr
    run_dir = tmp_path / "run"
    assert (run_dir.stat().st_mode & 0o777) == 0o755  # Hydra made it 777 under this umask
    for name in ("launch.yaml", "job.sbatch"):
        assert ((run_dir / name).stat().st_mode & 0o777) == 0o600, name
    nothing_half_written(run_dir)


# (id, how the record is exposed, argv after `relaunch RECORD`, what the refusal says)
EXPOSED = [
    ("record-666", lambda record: record.chmod(0o666), [], "can be written by its group and others (mode 666)"),
    ("record-group-writable", lambda record: record.chmod(0o620), [], "can be written by its group (mode 620)"),
    ("run-dir-777", lambda record: record.parent.chmod(0o777), [], "can be written by its group and others (mode 777)"),
    ("digest-of-another-record", lambda record: None, ["--digest", "0" * 64], "changed since it was submitted"),
    (
        "changed-after-submission",
        lambda record: record.write_text(record.read_text().replace("set:\n", "set:\n      LD_PRELOAD: /x.so\n", 1)),
        ["--digest", "PINNED"],
        "changed since it was submitted",
    ),
]


@pytest.mark.parametrize(("expose", "argv", "why"), [c[1:] for c in EXPOSED], ids=[c[0] for c in EXPOSED])
def test_a_record_someone_else_could_have_written_is_refused_naming_it(cli, tmp_path, expose, argv, why):
    record = _record(tmp_path)
    pinned = digest(record)
    before = record.stat().st_mtime_ns
    expose(record)
    said = cli("relaunch", str(record), *[pinned if a == "PINNED" else a for a in argv])
    assert said.code == 2, said.said
    assert "Traceback" not in said.said and why in said.err and str(record) in said.err
    assert "nothing was started" in said.err or "--trust-shared" in said.err
    assert "resuming from" not in said.err  # refused before anything was read or started
    if not argv:
        assert record.stat().st_mtime_ns == before
    no_marker_anywhere(tmp_path)


def test_trust_shared_warns_and_goes_on_to_the_records_own_checks(cli, tmp_path):
    record = _record(tmp_path)
    record.chmod(0o666)
    said = cli("relaunch", str(record), "--trust-shared", "--digest", digest(record))
    assert "Traceback" not in said.said
    assert "WARNING relaunch:" in said.err and "(mode 666)" in said.err and "--trust-shared" in said.err
    # this machine has no geo3k data: the record's own preflight answers next, as for any relaunch
    assert said.code == 2 and "data.train_files" in said.err
    assert yaml.safe_load(record.read_text())["config"]["submit"]["backend"] == "slurm"


def test_a_ray_jobs_entrypoint_is_the_exact_words_under_a_shell(tmp_path):
    """Ray runs a job's entrypoint with a shell: a hostile submit.python comes out as the same words, nothing runs."""
    (port,) = free_ports(1)
    run = verl_qwen35(
        tmp_path,
        "submit=ray_job",
        f"submit.address=http://127.0.0.1:{port}",
        "dry_run=true",
        "hydra.run.dir=run",
        "submit.python='python -c \"$(touch MARK);`touch MARK`\"'",
    )
    assert run.returncode == 0 and "Traceback" not in run.stderr, run.stderr
    line = next(line for line in run.stdout.splitlines() if line.startswith("ray_job    http"))
    entrypoint = line.split(": ", 1)[1].rsplit(" (working_dir", 1)[0]
    words = subprocess.run(["sh", "-c", f"printf '%s\\n' {entrypoint}"], cwd=tmp_path, capture_output=True, text=True)
    pinned = digest(tmp_path / "run" / "launch.yaml")
    expected = ["python", "-c", "$(touch MARK);`touch MARK`", "-m", "verl_qwen35", "relaunch", ".", "--digest", pinned]
    assert words.stdout.splitlines() == expected
    no_marker_anywhere(tmp_path)
