"""checks/machine.py in-process: what `launch_checks` turns on, each check's key and message, its values.

tests/system/test_machine_launch.py runs the same checks against a real Ray cluster and through the
entrypoint; these cases call launch_problems on composed configs, so each costs a fraction of a
second. No Ray is started: RAY_ADDRESS=local and no GPU or NPU here, so the device count is this
machine's, 0. vLLM (and, for npu, torch_npu) is not installed in the test environments.
"""

import sys

import pytest
from omegaconf import OmegaConf

from verl_qwen35.config import compose
from verl_qwen35.run.machine import launch_problems

DOCTOR = (
    "install it in every node's environment (python -m verl_qwen35.cli.doctor device={device} lists the whole stack)"
)


def problems(device: str, *overrides: str) -> list:
    cfg = compose([f"device={device}", "model=35b", *overrides])
    OmegaConf.resolve(cfg)
    return launch_problems(cfg)


@pytest.fixture(autouse=True)
def no_ray_cluster(monkeypatch):
    monkeypatch.setenv("RAY_ADDRESS", "local")


@pytest.mark.parametrize(("device", "missing"), [("gpu", "vLLM"), ("npu", "torch_npu (matches torch)")])
def test_the_stack_check_names_each_missing_component_and_the_doctor_for_this_device(device, missing):
    found = problems(device, "launch_checks.devices=false")
    assert found and {(p.level, p.keys) for p in found} == {("error", ("launch_checks.stack",))}
    assert all(p.message.endswith(DOCTOR.format(device=device)) for p in found)
    assert any(p.message.startswith(f"{missing}: not installed, required ") for p in found)


@pytest.mark.parametrize("device", ["gpu", "npu"])
def test_the_stack_is_checked_unless_turned_off(device):
    assert problems(device, "~launch_checks.stack", "launch_checks.devices=false"), "absent: checked"
    assert problems(device, "launch_checks.stack=false", "launch_checks.devices=false") == []


@pytest.mark.parametrize(("device", "resource"), [("gpu", "GPU"), ("npu", "NPU")])
def test_the_devices_are_counted_unless_turned_off(device, resource):
    (short,) = problems(device, "launch_checks.stack=false")
    assert [k.split(" ")[0] for k in short.keys] == ["parallel.nnodes", "parallel.devices_per_node"]
    assert f"and this machine has 0 {resource}(s) for a local Ray; start Ray with the devices" in short.message
    (short,) = problems(device, "launch_checks.stack=false", "~launch_checks.devices")
    assert f"this machine has 0 {resource}(s)" in short.message, "absent: counted"


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("abc", "launch_checks='abc': must be a mapping, e.g. launch_checks.stack=false"),
        ("{stack: maybe}", "launch_checks.stack='maybe': must be true or false"),
        ("{stack: false, devices: 1}", "launch_checks.devices=1: must be true or false"),
    ],
)
def test_launch_checks_values_are_refused_before_anything_is_checked(value, message):
    assert [(p.keys, p.message) for p in problems("gpu", f"launch_checks={value}")] == [(("launch_checks",), message)]


def test_without_ray_the_devices_cannot_be_counted(monkeypatch):
    """A None entry in sys.modules is how Python marks a module unimportable: find_spec answers None."""
    monkeypatch.setitem(sys.modules, "ray", None)
    assert [(p.keys, p.message) for p in problems("gpu", "launch_checks.stack=false")] == [
        (("launch_checks.devices",), "Ray is not installed: the cluster's devices cannot be counted")
    ]
