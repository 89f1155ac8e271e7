"""Forwarding, tested for real: the entrypoint through verl's own `main_ppo.main` into a Ray worker.

Everything is real: our Hydra entrypoint, `app.run`, `launch.launch`, verl's `main`
(`auto_set_device`, `validate_config`, `run_ppo`) and a local `ray.init` with our
runtime_env. Only verl's task runner is replaced, by one that writes the config and
`os.environ` it receives in its Ray worker to a file and returns instead of training.

verl 0.9 validates in `main` and runs `TaskRunnerV1`. verl 0.8 runs
`ray.remote(num_cpus=1)(TaskRunner)` and validates inside `TaskRunner.run`, so there the
recorder calls `validate_config` itself, in the worker, as the runner it replaces does.
Either way a config verl refuses never reaches the recorder, and the case fails.
"""

import contextlib
import functools
import json
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import ray
from hydra import compose as hydra_compose
from hydra import initialize_config_dir
from hydra.core.hydra_config import HydraConfig
from omegaconf import OmegaConf
from verl.utils.device import auto_set_device

from tests.conftest import REFERENCE_LAYOUTS
from tests.tiny_data import write_geo3k_stub
from verl_qwen35.cli import main as entrypoint
from verl_qwen35.config import compose
from verl_qwen35.config.placement import absolute_checkpoint_dir, absolute_tracking_env
from verl_qwen35.installed import verl_config_dir
from verl_qwen35.review.flat import flatten
from verl_qwen35.run.environment import effective_env

PROXIES = ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY")
# A small local Ray for a 2-core box; with the data files, the only overrides the test adds.
SMALL_RAY = "ray_kwargs.ray_init.num_cpus=2"
# This machine has neither vLLM nor a GPU/NPU: the launch-time stack and device checks (tested in
# tests/system/test_machine_launch.py) would refuse every launch here.
NO_MACHINE_CHECKS = ("launch_checks.stack=false", "launch_checks.devices=false")
ENV_VARS = "ray_kwargs.ray_init.runtime_env.env_vars"


def _main_ppo():
    """verl's main_ppo, imported in the test so a missing module fails these cases, not collection."""
    try:
        from verl.trainer import main_ppo
    except ModuleNotFoundError as err:
        pytest.fail(
            f"verl.trainer.main_ppo, which every launch runs, cannot be imported: {err}. verl 0.8.0 imports "
            "cachetools, fastapi and uvicorn without declaring them (vllm brings them in a real install)."
        )
    return main_ppo


def recording_runner(out: Path, validate_in_worker: bool) -> type:
    """A task runner class that records what it gets (defined in a function, so Ray ships it by value)."""

    class RecordingTaskRunner:
        def run(self, config):
            record = {
                "config": OmegaConf.to_container(config),
                "environ": dict(os.environ),
                "pid": os.getpid(),
                "ray_node": ray.get_runtime_context().get_node_id(),
            }
            if validate_in_worker:
                from verl.trainer.ppo.utils import need_critic, need_reference_policy
                from verl.utils.config import validate_config

                validate_config(
                    config=config,
                    use_reference_policy=need_reference_policy(config),
                    use_critic=need_critic(config),
                )
            with Path(out).open("a") as records:  # one line a launch; a sweep appends one per job
                records.write(json.dumps(record) + "\n")

    return RecordingTaskRunner


@contextlib.contextmanager
def launcher(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator:
    """`launch(*overrides)` runs `verl-qwen35 OVERRIDES` in-process in `tmp_path`; returns (record, expected flat
    config). On leaving, Ray is down and `os.environ` is as it was."""
    saved_environ = dict(os.environ)
    monkeypatch.chdir(tmp_path)  # Hydra's outputs/ land here
    monkeypatch.setenv("HYDRA_FULL_ERROR", "1")  # a failure raises instead of sys.exit(1)
    monkeypatch.delenv("RAY_ADDRESS", raising=False)  # a local Ray, never an existing cluster
    # The Hydra run leaves its HydraConfig set; restore it so later tests see no Hydra run.
    monkeypatch.setattr(HydraConfig.instance(), "cfg", HydraConfig.instance().cfg)
    for name in PROXIES:
        monkeypatch.setenv(name, "http://proxy.invalid:3128")
    out = tmp_path / "received.json"
    main_ppo = _main_ppo()
    if hasattr(main_ppo, "TaskRunnerV1"):  # verl 0.9: main validates, then runs TaskRunnerV1.remote()
        monkeypatch.setattr(main_ppo, "TaskRunnerV1", ray.remote(recording_runner(out, validate_in_worker=False)))
    else:  # verl 0.8: run_ppo wraps TaskRunner in ray.remote(num_cpus=1); TaskRunner.run validates
        monkeypatch.setattr(main_ppo, "TaskRunner", recording_runner(out, validate_in_worker=True))

    # A launch refuses missing data files; HOME stays (Ray keeps its auth token under ~/.ray).
    data = write_geo3k_stub(tmp_path / "geo3k")

    def run(
        *overrides: str, shell: dict[str, str] | None = None, ray_init: tuple[str, ...] = (SMALL_RAY,)
    ) -> tuple[dict, dict]:
        """Launch from a shell that sets none of `env.set` but `shell`; `ray_init` picks the Ray."""
        overrides = (*overrides, *data, *ray_init, *NO_MACHINE_CHECKS)
        assert not ray.is_initialized(), "a Ray from before the launch would skip our runtime_env"
        expected = compose(overrides)
        for name in expected.env.set:
            monkeypatch.delenv(name, raising=False)
        for name, value in (shell or {}).items():
            monkeypatch.setenv(name, value)
        OmegaConf.resolve(expected)
        absolute_checkpoint_dir(expected)  # as the entrypoint does, from this working directory
        # What verl's main does to a config before run_ppo, expected as it does it here:
        # auto_set_device may rewrite trainer.device for this host (verl 0.9 without torch_npu
        # falls back to `cuda`, even for device=npu); verl 0.8 also moves the legacy reward keys
        # (reward_model, custom_reward_function, sandbox_fusion) under `reward` and deletes them.
        auto_set_device(expected)
        if hasattr(main_ppo, "migrate_legacy_reward_impl"):
            expected = main_ppo.migrate_legacy_reward_impl(expected)
        monkeypatch.setattr(sys, "argv", ["verl-qwen35", *overrides])
        entrypoint.main()
        assert not ray.is_initialized(), "launch must shut Ray down"
        # The tracking paths, as the job makes them absolute under its run directory (the newest one here).
        run_dir = max(tmp_path.glob("outputs/*/*/launch.yaml"), key=os.path.getmtime).parent
        absolute_tracking_env(expected, run_dir)
        # The launch kept its console there (run/console_copy.py; tests/integration/test_console_copy.py).
        assert (run_dir / "job.out").read_text().startswith("--- verl-qwen35 launch, ")
        shell_env = effective_env(expected)  # what apply_env read from this shell (put back after the launch)
        assert out.is_file(), "verl never ran the task runner"
        record = json.loads(out.read_text().splitlines()[-1])
        # The composed config, plus the runtime_env variables apply_env fills in at launch.
        flat = {k: v for k, v in flatten(expected).items() if k != ENV_VARS}
        flat.update({f"{ENV_VARS}.{k}": v for k, v in shell_env.items()})
        return record, flat

    def sweep(*overrides: str) -> list[dict]:
        """Launch a Hydra multirun in-process; one record per job, in job order."""
        for name in ("HCCL_BUFFSIZE", "CPU_AFFINITY_CONF", "OMP_NUM_THREADS"):
            monkeypatch.delenv(name, raising=False)
        ours = (*data, SMALL_RAY, *NO_MACHINE_CHECKS, f"hydra.sweep.dir={tmp_path}/sweep")
        monkeypatch.setattr(sys, "argv", ["verl-qwen35", "-m", *overrides, *ours])
        entrypoint.main()
        assert not ray.is_initialized(), "the last job must shut Ray down"
        return [json.loads(line) for line in out.read_text().splitlines()]

    run.sweep = sweep
    try:
        yield run
    finally:
        if ray.is_initialized():  # only after a failed launch; keep it from leaking into the next case
            ray.shutdown()
        os.environ.clear()  # apply_env sets the driver's environment directly
        os.environ.update(saved_environ)


@pytest.fixture
def launch(tmp_path, monkeypatch):
    """`launch(*overrides)`: one test's own launches (see `launcher`)."""
    with launcher(tmp_path, monkeypatch) as run:
        yield run


@dataclass(frozen=True)
class Relaunched:
    """A launch and its relaunch from another directory, for the tests that read them."""

    tmp_path: Path
    run_dir: Path
    first: dict  # what the worker received at the launch
    expected: dict  # the composed config, flat, as the launch should deliver it
    again: dict  # what the worker received at the relaunch


@pytest.fixture(scope="module")
def relaunched(tmp_path_factory) -> Relaunched:
    """35B on GPU with every file-writing logger, launched once, then relaunched from another directory after the
    first start "logged" a metric: each Ray start costs seconds, so the worker, tracking and relaunch tests share
    these two."""
    from verl_qwen35.cli.relaunch import main as relaunch

    tmp_path = tmp_path_factory.mktemp("relaunched")
    with pytest.MonkeyPatch.context() as monkeypatch, launcher(tmp_path, monkeypatch) as launch:
        first, expected = launch("model=35b", "device=gpu", "logger=[console,file,tensorboard,wandb_offline]")
        (saved,) = tmp_path.glob("outputs/*/*/launch.yaml")
        (saved.parent / "metrics.jsonl").write_text('{"step": 1, "data": {}}\n')  # what the first start logged
        elsewhere = tmp_path / "elsewhere"
        elsewhere.mkdir()
        monkeypatch.chdir(elsewhere)
        assert relaunch([str(saved.parent)]) == 0
        assert not ray.is_initialized()
        again = json.loads((tmp_path / "received.json").read_text().splitlines()[-1])
    return Relaunched(tmp_path, saved.parent, first, expected, again)


def _interpolations(tree: object, path: str = "") -> list[str]:
    """Every string leaf still holding an interpolation."""
    if isinstance(tree, dict):
        return [p for k, v in tree.items() for p in _interpolations(v, f"{path}{k}.")]
    if isinstance(tree, list):
        return [p for i, v in enumerate(tree) for p in _interpolations(v, f"{path}{i}.")]
    return [f"{path[:-1]}={tree}"] if isinstance(tree, str) and "${" in tree else []


@functools.cache
def _missing_in_verl() -> frozenset[str]:
    """Keys verl's own ppo_trainer leaves `???` (mandatory only for features we leave off)."""
    with initialize_config_dir(str(verl_config_dir()), version_base=None):
        base = flatten(OmegaConf.to_container(hydra_compose("ppo_trainer")))
    return frozenset(k for k, v in base.items() if v == "???")


# One preset a device: the forwarding is the same code for every preset (each preset's composition is
# test_composition's), the device decides the environment the worker must see; on verl 0.8 (each_verl) the
# Ascend image's device only.
def test_worker_gets_resolved_config_and_device_env_on_gpu(relaunched):
    worker_got_the_config_and_env(relaunched.first, relaunched.expected, ("35b", "gpu"))


@pytest.mark.each_verl
def test_worker_gets_resolved_config_and_device_env_on_npu(launch):
    worker_got_the_config_and_env(*launch("model=397b", "device=npu"), ("397b", "npu"))


def worker_got_the_config_and_env(record: dict, expected: dict, combo: tuple[str, str]) -> None:
    model, device = combo
    config, environ = record["config"], record["environ"]

    assert record["pid"] != os.getpid(), "the task runner must run in a Ray worker"
    unresolved = _interpolations(config)
    assert not unresolved, f"{len(unresolved)} unresolved values reached the worker, e.g. {unresolved[:5]}"
    received = flatten(config)
    missing = {k for k, v in received.items() if v == "???"} - _missing_in_verl()
    assert not missing, f"`???` values that verl's own ppo_trainer sets: {missing}"
    differing = {
        k: (expected.get(k, "<absent>"), received.get(k, "<absent>"))
        for k in expected.keys() | received.keys()
        if expected.get(k, "<absent>") != received.get(k, "<absent>")
    }
    assert not differing, "worker config differs from the composed one (expected, received):\n" + "\n".join(
        f"  {k}: {v}" for k, v in sorted(differing.items())
    )
    # A few keys spelled out, so a failure reads plainly.
    patch = {
        k.removeprefix("megatron.override_transformer_config."): v
        for k, v in expected.items()
        if k.startswith("megatron.override_transformer_config.")
    }
    for side in ("actor", "ref"):
        megatron = config["actor_rollout_ref"][side]["megatron"]
        assert megatron["tensor_model_parallel_size"] == expected["parallel.tp"]
        assert megatron["expert_model_parallel_size"] == expected["parallel.ep"]
        assert megatron["vanilla_mbridge"] is (device == "gpu")
        assert megatron["override_transformer_config"] == patch
    assert config["actor_rollout_ref"]["rollout"]["tensor_model_parallel_size"] == expected["parallel.gen_tp"]
    assert config["trainer"]["nnodes"] == expected["parallel.nnodes"] == REFERENCE_LAYOUTS[combo][0]
    assert config["actor_rollout_ref"]["model"]["path"] == expected["model.hf_id"]
    assert model.split("_")[-1].upper() in expected["model.hf_id"]  # 36_35b: Qwen3.6-35B-A3B

    device_env = {k.removeprefix("env.set."): v for k, v in expected.items() if k.startswith("env.set.")}
    assert ("HCCL_BUFFSIZE" in device_env) is (device == "npu")
    for name, value in device_env.items():
        assert environ.get(name) == str(value), f"{name}: worker has {environ.get(name)!r}, config {value!r}"
    assert set(expected["env.unset"]) == set(PROXIES)
    for name in PROXIES:
        assert not environ.get(name), f"proxy {name}={environ[name]!r} reached the worker"


def test_launch_sweep_jobs_get_their_own_ray_env_and_checkpoints(launch, tmp_path):
    """NPU first: were job 2 run on job 1's Ray or environment, the GPU job would see Ascend variables."""
    npu, gpu = launch.sweep("model=35b", "device=npu,gpu")
    assert npu["ray_node"] != gpu["ray_node"], "job 2 ran on job 1's Ray"
    assert npu["environ"]["HCCL_BUFFSIZE"] == "300" and npu["environ"]["CPU_AFFINITY_CONF"] == "1"
    assert "HCCL_BUFFSIZE" not in gpu["environ"] and "CPU_AFFINITY_CONF" not in gpu["environ"]
    assert "HCCL_BUFFSIZE" not in gpu["config"]["ray_kwargs"]["ray_init"]["runtime_env"]["env_vars"]
    trainers = [job["config"]["trainer"] for job in (npu, gpu)]
    assert trainers[0]["default_local_dir"] != trainers[1]["default_local_dir"]
    assert trainers[0]["experiment_name"] != trainers[1]["experiment_name"]
    assert trainers[0]["default_local_dir"] == str(tmp_path / "sweep" / "0" / "checkpoints")
    assert trainers[1]["experiment_name"] == f"qwen3_5_35b_megatron_{tmp_path.name}_sweep_job1"
    for job in ("0", "1"):  # each job's own output dir holds what relaunches it
        assert (tmp_path / "sweep" / job / "launch.yaml").is_file()
        assert (tmp_path / "sweep" / job / "verdict.json").is_file()


def test_relaunch_from_another_directory_sends_the_same_config_and_checkpoint(relaunched):
    first, again = relaunched.first, relaunched.again
    assert again["config"] == first["config"] and again["ray_node"] != first["ray_node"]
    checkpoint = again["config"]["trainer"]["default_local_dir"]
    assert checkpoint == first["config"]["trainer"]["default_local_dir"]
    assert checkpoint.startswith(str(relaunched.tmp_path) + "/")


def test_the_tracking_env_reaches_the_worker_and_a_relaunch_keeps_the_metrics(relaunched):
    """verl's Tracking starts in the task runner's Ray worker: the logger group's places must arrive there,
    absolute under the run directory; a relaunch keeps what the first start logged (verl opens it "wb")."""
    run_dir, environ = relaunched.run_dir, relaunched.first["environ"]
    assert environ["VERL_FILE_LOGGER_PATH"] == str(run_dir / "metrics.jsonl")
    assert environ["TENSORBOARD_DIR"] == str(run_dir / "tensorboard")
    assert (environ["WANDB_MODE"], environ["WANDB_DIR"]) == ("offline", str(run_dir))
    assert relaunched.first["config"]["trainer"]["logger"] == ["console", "file", "tensorboard", "wandb"]
    assert (run_dir / "metrics.1.jsonl").read_text() == '{"step": 1, "data": {}}\n'
    assert relaunched.again["environ"]["VERL_FILE_LOGGER_PATH"] == str(run_dir / "metrics.jsonl")


SECRETS = {
    "WANDB_API_KEY": "wandb-7c1e0f9a2b3d4e5f",
    "HF_TOKEN": "hf_QwErTy0123456789",
    "MY_DB_PASSWORD": "hunter2-xyz",
}


def test_the_launching_shell_wins_and_its_secrets_reach_the_run_but_no_file_or_output(launch, tmp_path, capfd):
    """A value the shell already sets wins over the config's, as `${VAR:-default}` did; secrets exported in the
    shell are used by the launch and written nowhere, printed nowhere."""
    record, expected = launch("model=35b", "device=npu", shell={"OMP_NUM_THREADS": "4", **SECRETS})
    assert expected["env.set.OMP_NUM_THREADS"] == "1"
    assert record["config"]["ray_kwargs"]["ray_init"]["runtime_env"]["env_vars"]["OMP_NUM_THREADS"] == "4"
    assert record["environ"]["OMP_NUM_THREADS"] == "4"
    assert record["environ"]["HCCL_BUFFSIZE"] == "300"
    assert not any(record["environ"].get(name) for name in PROXIES)
    assert all(record["environ"][name] == value for name, value in SECRETS.items()), "the run must still get them"
    said = "".join(capfd.readouterr())
    written = [p for p in tmp_path.rglob("*") if p.is_file() and p.name != "received.json"]  # ours, from the worker
    assert any(p.name == "launch.yaml" for p in written) and any(p.parent.name == ".hydra" for p in written)
    for value in SECRETS.values():
        assert value not in said
        assert not [p for p in written if value.encode() in p.read_bytes()]
