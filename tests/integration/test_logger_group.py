"""The logger group (conf/logger/): every option and combinations compose to the `trainer.logger` verl's Tracking
takes, pass verl's own validate_config, and verl's real Tracking, started in the environment the config gives a
run, writes under the run directory; a second start keeps the first start's metrics."""

import importlib.util
import json
import sys
from pathlib import Path

import pytest
import yaml
from omegaconf import OmegaConf

from tests.environ import cleared
from verl_qwen35.checks.tracking import swanlab_login_problems
from verl_qwen35.config import compose
from verl_qwen35.config.placement import absolute_tracking_env
from verl_qwen35.run.job import launch_now
from verl_qwen35.run.launch_record import write_launch_file

# option -> the backend verl's Tracking gets
OPTIONS = {
    "console": "console",
    "file": "file",
    "tensorboard": "tensorboard",
    "wandb": "wandb",
    "wandb_offline": "wandb",
    "swanlab": "swanlab",
    "swanlab_local": "swanlab",
    "mlflow": "mlflow",
}
TRACKING_ENV = [
    "VERL_FILE_LOGGER_PATH",
    "VERL_FILE_LOGGER_ROOT",
    "TENSORBOARD_DIR",
    "WANDB_MODE",
    "WANDB_DIR",
    "WANDB_API_KEY",
    "WANDB_ENTITY",
    "SWANLAB_MODE",
    "SWANLAB_LOG_DIR",
    "SWANLAB_API_KEY",
    "MLFLOW_TRACKING_URI",
    "MLFLOW_RUN_ID",
]


def _validate(cfg) -> None:
    from verl.trainer.ppo.utils import need_critic, need_reference_policy
    from verl.utils.config import validate_config

    validate_config(cfg, use_reference_policy=need_reference_policy(cfg), use_critic=need_critic(cfg))


@pytest.mark.each_verl
@pytest.mark.parametrize("option", OPTIONS)
def test_each_option_composes_to_its_backend_and_passes_verls_validate_config(option):
    cfg = compose([f"logger={option}", "model=122b", "device=npu"])
    OmegaConf.resolve(cfg)
    assert OmegaConf.to_container(cfg.trainer.logger) == [OPTIONS[option]]
    _validate(cfg)


@pytest.mark.parametrize(
    ("chosen", "backends"),
    [
        ("[console,file,tensorboard]", ["console", "file", "tensorboard"]),
        (
            "[tensorboard,console,swanlab_local,mlflow,wandb_offline]",
            ["tensorboard", "console", "swanlab", "mlflow", "wandb"],
        ),
        ("[]", []),
    ],
)
def test_a_combination_is_the_backends_in_the_order_chosen(chosen, backends):
    cfg = compose([f"logger={chosen}"])
    OmegaConf.resolve(cfg)
    assert OmegaConf.to_container(cfg.trainer.logger) == backends
    _validate(cfg)


@pytest.mark.parametrize(
    ("overrides", "backends"),
    [
        (["model=35b"], ["console", "wandb"]),  # verl's 35B and 122B scripts: console + wandb
        (["model=122b", "device=npu"], ["console", "wandb"]),
        (["model=397b"], ["console"]),  # verl's 397B script: console only (its model file's override)
        (["model=397b", "device=npu", "logger=file"], ["file"]),  # the command line wins over the model file
        (["logger=[console,tensorboard]", "model=397b"], ["console", "tensorboard"]),
    ],
)
def test_preset_defaults_follow_verls_scripts_and_the_command_line_wins(overrides, backends):
    assert OmegaConf.to_container(compose(overrides).trainer.logger, resolve=True) == backends


def test_dry_run_of_the_air_gapped_choice_says_where_each_backend_writes(cli, tmp_path):
    said = cli("device=npu", "model=122b", "logger=[console,file,tensorboard,wandb_offline]", "dry_run=true")
    assert said.code == 0, said.err
    run_dir = next((tmp_path / "outputs").glob("*/*"))
    logs = next(line for line in said.out.splitlines() if line.startswith("logs "))
    assert logs.split(None, 1)[1] == (
        f"console | file {run_dir}/metrics.jsonl | tensorboard {run_dir}/tensorboard | wandb offline {run_dir}"
    )


def test_each_job_of_a_sweep_logs_under_its_own_directory(cli, tmp_path):
    said = cli("-m", "logger=file,tensorboard", "dry_run=true")
    assert said.code == 0, said.err
    places = [line.split()[-1] for line in said.out.splitlines() if line.startswith("logs ")]
    jobs = sorted(p for p in next((tmp_path / "multirun").glob("*/*")).iterdir() if p.is_dir())
    assert places == [str(jobs[0] / "metrics.jsonl"), str(jobs[1] / "tensorboard")]


def test_trainer_logger_typed_directly_still_works_and_says_what_it_bypasses(cli):
    said = cli("trainer.logger=[console,tensorboard]", "dry_run=true")
    assert said.code == 0, said.err
    assert "WARNING [trainer.logger] trainer.logger=[console,tensorboard] replaces the logger group's " in said.err
    assert "choose logger=[console,tensorboard] instead" in said.err
    assert "logs       console | tensorboard\n" in said.out


@pytest.mark.parametrize(
    ("option", "mode", "instead"),
    [
        ("wandb", "offline", "wandb_offline"),
        ("wandb", "disabled", "wandb_offline"),
        ("wandb_offline", "online", "wandb"),
        ("swanlab", "offline", "swanlab_local"),
        ("swanlab_local", "cloud", "swanlab"),
    ],
)
def test_a_mode_in_env_set_against_the_option_chosen_is_named(cli, option, mode, instead):
    variable = "WANDB_MODE" if option.startswith("wandb") else "SWANLAB_MODE"
    said = cli(f"logger={option}", f"env.set.{variable}={mode}", "dry_run=true")
    assert said.code == 0, said.err
    assert f"WARNING [env.set.{variable}, logger] logger={option} logs " in said.err
    assert f"choose logger={instead}" in said.err


def test_the_options_own_modes_are_not_flagged(cli):
    said = cli("logger=[wandb_offline,swanlab_local]", "dry_run=true")
    assert said.code == 0 and "logger=" not in said.err, said.err
    assert " online: the run needs the network" not in said.out


def test_a_dry_run_says_the_default_logger_syncs_online_and_how_to_keep_it_local(cli):
    """The default logger is wandb online: a dry run needs neither network nor key, the run does."""
    said = cli("dry_run=true")
    assert said.code == 0, said.err
    assert "logs       console | wandb online " in said.out
    assert "wandb online: the run needs the network and WANDB_API_KEY (or a saved `wandb login`)" in said.out
    assert "logger=[console,wandb_offline] keeps it on disk, logger=[console,file] needs no account" in said.out


def test_swanlab_online_without_an_api_key_in_the_shell_is_a_launch_warning():
    cfg = compose(["logger=[console,swanlab]"])
    OmegaConf.resolve(cfg)
    (missing,) = swanlab_login_problems(cfg, {})
    assert missing.level == "warning" and "SWANLAB_API_KEY is not set" in missing.message
    assert swanlab_login_problems(cfg, {"SWANLAB_API_KEY": "from-the-shell"}) == []
    assert swanlab_login_problems(cfg, {"SWANLAB_MODE": "offline"}) == []  # the shell's mode wins in verl too
    local = compose(["logger=swanlab_local"])
    assert swanlab_login_problems(local, {}) == []


# A secret for each backend, in env.set or in a trainer key: refused before anything is written (exit 2).
SECRETS = [
    ("wandb", "+env.set.WANDB_API_KEY=0123456789abcdef0123", "env.set.WANDB_API_KEY"),
    ("wandb", "trainer.wandb_proxy=http://alice:s3cretpw@proxy.example:3128", "trainer.wandb_proxy"),
    ("wandb_offline", "+env.set.WANDB_API_KEY=0123456789abcdef0123", "env.set.WANDB_API_KEY"),
    ("swanlab", "+env.set.SWANLAB_API_KEY=0123456789abcdef0123", "env.set.SWANLAB_API_KEY"),
    ("swanlab_local", "+env.set.SWANLAB_API_KEY=0123456789abcdef0123", "env.set.SWANLAB_API_KEY"),
    ("mlflow", "+env.set.MLFLOW_TRACKING_TOKEN=0123456789abcdef0123", "env.set.MLFLOW_TRACKING_TOKEN"),
    ("mlflow", "+env.set.MLFLOW_TRACKING_PASSWORD=0123456789abcdef", "env.set.MLFLOW_TRACKING_PASSWORD"),
    ("mlflow", "env.set.MLFLOW_TRACKING_URI=https://alice:s3cretpw@mlflow.example", "env.set.MLFLOW_TRACKING_URI"),
]


@pytest.mark.parametrize(("option", "secret", "key"), SECRETS, ids=[s[2] + "-" + s[0] for s in SECRETS])
def test_a_tracking_secret_in_the_config_is_refused(cli, tmp_path, option, secret, key):
    said = cli(f"logger={option}", secret, "dry_run=true")
    assert said.code == 2
    assert key in said.err and "refused" in said.err
    value = secret.split("=", 1)[1]
    assert value not in said.said
    assert not (tmp_path / "outputs").exists()


def _run_config(tmp_path: Path, chosen: str):
    """The config of a run in tmp_path/run, as run_job leaves it before the launch."""
    cfg = compose([f"logger={chosen}"])
    OmegaConf.resolve(cfg)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    absolute_tracking_env(cfg, run_dir)
    return cfg, run_dir


@pytest.fixture
def tracking_run(monkeypatch, tmp_path):
    """launch_now with verl's trainer replaced by what it does with trainer.logger: verl's own Tracking, started
    in the environment the launch gives verl, logging two steps; no network (wandb offline), HOME in tmp_path."""
    cleared(monkeypatch, TRACKING_ENV)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("WANDB_SILENT", "true")
    monkeypatch.chdir(tmp_path)
    steps = iter(range(1, 100))

    def trainer(cfg) -> None:
        from verl.utils.tracking import Tracking

        config = OmegaConf.to_container(cfg, resolve=True)
        tracking = Tracking(cfg.trainer.project_name, cfg.trainer.experiment_name, cfg.trainer.logger, config)
        for _ in range(2):
            step = next(steps)
            tracking.log({"critic/score/mean": 0.1 * step, "response_length/mean": 100.0 + step}, step=step)
        getattr(tracking, "finish", tracking.__del__)()  # verl 0.8.0 finishes in __del__

    monkeypatch.setattr("verl_qwen35.run.launch.launch", trainer)
    return lambda cfg, **kw: launch_now(cfg, **kw)


def _steps(path: Path) -> list[int]:
    return [json.loads(line)["step"] for line in path.read_text().splitlines()]


@pytest.mark.each_verl
def test_verls_tracking_writes_file_tensorboard_and_wandb_offline_under_the_run_dir(tmp_path, tracking_run):
    cfg, run_dir = _run_config(tmp_path, "[console,file,tensorboard,wandb_offline]")
    write_launch_file(cfg, run_dir)
    tracking_run(cfg)
    assert _steps(run_dir / "metrics.jsonl") == [1, 2]
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(run_dir / "tensorboard"))
    events.Reload()
    assert [e.step for e in events.Scalars("critic/score/mean")] == [1, 2]
    (offline,) = (run_dir / "wandb").glob("offline-run-*")
    assert list(offline.glob("run-*.wandb"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["home", "run"]  # nothing in the launch directory
    # launch.yaml says where the logs went
    recorded = yaml.safe_load((run_dir / "launch.yaml").read_text())["config"]["env"]["set"]
    assert recorded["VERL_FILE_LOGGER_PATH"] == str(run_dir / "metrics.jsonl")
    assert recorded["TENSORBOARD_DIR"] == str(run_dir / "tensorboard")
    assert (recorded["WANDB_MODE"], recorded["WANDB_DIR"]) == ("offline", str(run_dir))


def test_a_second_start_keeps_the_first_starts_metrics(tmp_path, tracking_run):
    cfg, run_dir = _run_config(tmp_path, "[console,file]")
    tracking_run(cfg)  # the launch
    tracking_run(cfg, use_shell_env=False)  # a relaunch (of launch.yaml's values)
    tracking_run(cfg, use_shell_env=False)  # a requeue
    assert _steps(run_dir / "metrics.1.jsonl") == [1, 2]
    assert _steps(run_dir / "metrics.2.jsonl") == [3, 4]
    assert _steps(run_dir / "metrics.jsonl") == [5, 6]


def test_an_empty_metrics_file_is_not_kept(tmp_path, tracking_run):
    cfg, run_dir = _run_config(tmp_path, "file")
    (run_dir / "metrics.jsonl").write_text("")  # a start that died before its first step
    tracking_run(cfg)
    assert sorted(p.name for p in run_dir.iterdir()) == ["metrics.jsonl"]


@pytest.mark.parametrize(("option", "package"), [("swanlab_local", "swanlab"), ("mlflow", "mlflow")])
def test_swanlab_local_and_mlflow_store_under_the_run_dir(tmp_path, tracking_run, option, package):
    cfg, run_dir = _run_config(tmp_path, option)
    env = OmegaConf.to_container(cfg.env.set)
    if option == "swanlab_local":  # offline: no login, no network, no swanboard (conf/logger/swanlab_local.yaml)
        assert (env["SWANLAB_MODE"], env["SWANLAB_LOG_DIR"]) == ("offline", str(run_dir / "swanlog"))
    else:  # SQLAlchemy's absolute sqlite URL: four slashes
        assert env["MLFLOW_TRACKING_URI"] == f"sqlite:///{run_dir}/mlflow.db"
    if importlib.util.find_spec(package) is None:
        pytest.skip(f"{package} is not installed here (verl does not depend on it): its env is checked, not its run")
    tracking_run(cfg)
    assert list(run_dir.iterdir()) != [], f"{package} wrote nothing under the run directory"
    if option == "mlflow":  # read back through MLflow's own client: verl goes on silently when MLflow fails
        import mlflow

        client = mlflow.MlflowClient(tracking_uri=env["MLFLOW_TRACKING_URI"])
        (run,) = client.search_runs([client.get_experiment_by_name(cfg.trainer.project_name).experiment_id])
        assert [m.step for m in client.get_metric_history(run.info.run_id, "critic/score/mean")] == [1, 2]
    else:  # swanlab offline keeps a run folder with its records for `swanlab sync`
        assert [p for p in (run_dir / "swanlog").rglob("*") if p.is_file() and p.stat().st_size]


def test_mlflows_sqlite_store_without_sqlalchemy_is_named_before_verl_loses_the_metrics(monkeypatch):
    """mlflow-skinny alone refuses sqlite stores; verl's Tracking then warns and runs without MLflow."""
    pytest.importorskip("mlflow")
    from verl_qwen35.validators.rehearsal import logger_notes

    cfg = compose(["logger=[console,mlflow]"])
    OmegaConf.resolve(cfg)
    cleared(monkeypatch, TRACKING_ENV)
    assert logger_notes(cfg) == []
    monkeypatch.setitem(sys.modules, "sqlalchemy", None)  # as if it were not installed
    (note,) = logger_notes(cfg)
    assert note.keys == ("env.set.MLFLOW_TRACKING_URI",) and "needs sqlalchemy" in note.message
    monkeypatch.setitem(cfg.env.set, "MLFLOW_TRACKING_URI", "http://mlflow.internal:5000")  # a server: no sqlite
    assert logger_notes(cfg) == []
