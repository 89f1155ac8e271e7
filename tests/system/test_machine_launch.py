"""Launch-time checks: the software stack (doctor) and the devices of a real Ray cluster or this machine."""

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from importlib.metadata import version
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from tests.ray_head import separate_ray_head
from tests.tiny_data import write_geo3k_stub
from verl_qwen35.cli.doctor import main as doctor
from verl_qwen35.config import compose
from verl_qwen35.run.devices import device_problems
from verl_qwen35.run.stack import cann_version, check, satisfies, torch_cuda

# --- the stack ----------------------------------------------------------------------------------


def test_doctor_here_exits_2_naming_vllm_and_torch_npu():
    run = subprocess.run([sys.executable, "-m", "verl_qwen35", "doctor", "device=npu"], capture_output=True, text=True)
    assert run.returncode == 2, run.stdout + run.stderr
    failing = [line for line in run.stdout.splitlines() if "FAIL" in line]
    assert any(line.startswith("vLLM ") for line in failing)
    assert any(line.startswith("torch_npu") for line in failing)
    assert "Traceback" not in run.stderr
    assert any(line.startswith("verdict: NOT ready") for line in run.stdout.splitlines())  # the stacks follow it


@pytest.mark.each_verl
def test_doctor_gpu_reports_installed_and_required_versions(capsys):
    assert doctor(["device=gpu", "--format", "json"]) == 2
    report = json.loads(capsys.readouterr().out)
    rows = {c["name"]: c for c in report["components"]}
    assert rows["verl"]["installed"] == version("verl") and rows["verl"]["ok"]
    assert rows["Ray"]["installed"] == version("ray") and rows["Ray"]["required"] == ">=2.41.0"
    assert (rows["vLLM"]["installed"], rows["vLLM"]["ok"]) == ("missing", False)
    assert not rows["torch (CUDA build)"]["ok"] and "without CUDA" in rows["torch (CUDA build)"]["note"]
    # verl 0.9 needs TransferQueue (verl[verl-core]); 0.8 does not import it.
    assert ("TransferQueue (verl[verl-core])" in rows) == version("verl").startswith("0.9")


def test_doctor_exits_0_when_every_component_fits(tmp_path, capsys):
    matrix = {
        "device": "gpu",
        "components": [
            {"name": "Python", "kind": "python", "require": ">=3.11", "source": "test"},
            {"name": "verl", "kind": "package", "dist": "verl", "module": "verl", "require": ">=0.8", "source": "t"},
            {"name": "sh", "kind": "tool", "command": "sh", "source": "test"},
        ],
    }
    (tmp_path / "mine.yaml").write_text(json.dumps(matrix))
    assert doctor(["device=gpu", "--matrix", str(tmp_path / "mine.yaml")]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "verdict: ready to launch"


def test_doctor_refuses_an_unknown_device(capsys):
    assert doctor(["device=tpu"]) == 2
    assert "device=tpu" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("found", "spec", "ok"),
    [
        ("2.13.0+cpu", ">=2.9", True),  # local build label
        ("2.9.0.post2", ">=2.9,<2.10", True),  # the Ascend image's torch
        ("9.0.RC1", ">=9.0,<9.1", True),  # CANN release candidates belong to their release
        ("8.3.RC1", ">=9.0,<9.1", False),
        ("5.6.0", ">=5.5.3,<5.11,!=5.6.0", False),
        ("0.24.0", "", True),
    ],
)
def test_versions_compare_as_their_release(found, spec, ok):
    assert satisfies(found, spec) is ok


def test_cann_version_is_read_from_its_install_info(tmp_path, monkeypatch):
    info = tmp_path / "aarch64-linux" / "ascend_toolkit_install.info"
    info.parent.mkdir()
    info.write_text("package_name=Ascend-cann-toolkit\nversion=9.0.0\narch=aarch64\n")
    monkeypatch.setenv("ASCEND_HOME_PATH", str(tmp_path))
    assert cann_version() == ("9.0.0", str(info))
    verdict = check({"name": "CANN", "kind": "cann", "require": ">=9.0,<9.1", "source": "t"})
    assert verdict.ok and verdict.installed == "9.0.0"
    info.write_text("version=8.3.RC1\n")
    assert not check({"name": "CANN", "kind": "cann", "require": ">=9.0,<9.1", "source": "t"}).ok


def test_torch_cuda_build_is_read_from_version_py(tmp_path, monkeypatch):
    package = tmp_path / "cudatorch"
    package.mkdir()
    (package / "__init__.py").write_text("raise ImportError('the check must not import torch')\n")
    (package / "version.py").write_text("__version__ = '2.11.0+cu130'\ncuda: Optional[str] = '13.0'\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert torch_cuda("cudatorch") == "13.0"
    assert torch_cuda("torch") is None  # the CPU build installed here


# --- devices --------------------------------------------------------------------------------------


def launch(tmp_path: Path, env: dict[str, str], *overrides: str) -> subprocess.CompletedProcess:
    """A real launch from the command line (the user's path); stops wherever the checks stop it."""
    return subprocess.run(
        [sys.executable, "-m", "verl_qwen35", *overrides, *write_geo3k_stub(tmp_path / "data")]
        + [f"hydra.run.dir={tmp_path}/out"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, **env},
        timeout=300,
    )


@pytest.fixture
def short_dir() -> Iterator[Path]:
    """A directory with a short path: Ray's session sockets under it must stay within AF_UNIX's 107 bytes."""
    path = Path(tempfile.mkdtemp(prefix="r", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.mark.each_verl
def test_gpu_preset_on_this_machine_is_refused_before_verl_runs(tmp_path, short_dir):
    ray_dir = short_dir / "r"
    temp_dir = f"+ray_kwargs.ray_init._temp_dir={ray_dir}"  # where verl's local Ray would write its session
    run = launch(tmp_path, {"RAY_ADDRESS": "local"}, "device=gpu", "model=35b", temp_dir)
    assert run.returncode == 2, run.stdout + run.stderr
    assert "Traceback" not in run.stderr
    (devices,) = [line for line in run.stderr.splitlines() if "GPUs per node" in line] or [run.stderr]
    assert "the Ray cluster (from your shell's RAY_ADDRESS=local: a new local Ray" in devices
    assert "GPUs per node [0] (0 in total" in devices and "1 node(s) x 8 GPUs = 8" in devices
    assert "ray start --head --port=6379 --num-gpus=8" in devices
    assert "vLLM: not installed, required >=0.18.0" in run.stderr  # the stack check reports alongside
    # The check starts the local Ray verl's ray.init would, with the same ray_kwargs.ray_init (its _temp_dir).
    assert any(ray_dir.glob("session_*")), "the devices were not counted by ray.init(**ray_kwargs.ray_init)"
    assert "verdict    REFUSED" in run.stderr and not (tmp_path / "out" / "launch.yaml").exists()


@pytest.fixture(scope="module")
def ray_head() -> Iterator[str]:
    """A real Ray head advertising 2 GPUs and 16 NPUs (tests/ray_head.py); its GCS address."""
    with separate_ray_head(num_cpus=1, num_gpus=2, resources={"NPU": 16}) as head:
        yield head.address


def resolved(*overrides: str):
    cfg = compose(list(overrides))
    OmegaConf.resolve(cfg)
    return cfg


def test_cluster_with_too_few_gpus_is_refused_with_numbers_and_the_fix(ray_head, monkeypatch):
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")
    cfg = resolved("device=gpu", "model=35b", f"+ray_kwargs.ray_init.address={ray_head}")
    (problem,) = device_problems(cfg, "gpu")
    assert f"the Ray cluster (ray_kwargs.ray_init.address={ray_head}) has GPUs per node [2]" in problem.message
    assert "(2 in total, 0 node(s) with at least 8)" in problem.message and "1 node(s) x 8 GPUs = 8" in problem.message
    assert "Add 1 node(s) with `ray start --address=<head ip>:6379 --num-gpus=8`" in problem.message
    assert "parallel.nnodes" in problem.keys[0] and "parallel.devices_per_node" in problem.keys[1]


def test_cluster_with_the_devices_passes(ray_head, monkeypatch):
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")
    npu = resolved("device=npu", "model=35b", f"+ray_kwargs.ray_init.address={ray_head}")  # 1 x 16 NPUs
    assert device_problems(npu, "npu") == []
    monkeypatch.setenv("RAY_ADDRESS", ray_head)  # the address a user exports, as verl's ray.init reads it
    two_gpus = resolved("device=gpu", "model=35b", "parallel.devices_per_node=2")
    assert device_problems(two_gpus, "gpu") == []
    four_nodes = resolved("device=npu", "model=122b")  # 4 x 16: one node is not enough
    (problem,) = device_problems(four_nodes, "npu")
    assert "NPUs per node [16]" in problem.message and "Add 3 node(s)" in problem.message


def test_launch_against_the_cluster_is_refused_before_verl_runs(ray_head, tmp_path):
    run = launch(
        tmp_path,
        {"RAY_ADDRESS": ray_head, "RAY_AUTH_MODE": "disabled"},
        "device=gpu",
        "model=35b",
        "launch_checks.stack=false",
    )
    assert run.returncode == 2, run.stdout + run.stderr
    assert "Traceback" not in run.stderr and "GPUs per node [2]" in run.stderr
    assert "verdict    REFUSED" in run.stderr and not (tmp_path / "out" / "launch.yaml").exists()
