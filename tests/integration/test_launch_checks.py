"""run/machine.py in-process: what `launch_checks` turns on, each check's key and message, its values.

tests/system/test_machine_launch.py runs the same checks against a real Ray cluster and through the
entrypoint; these cases call launch_problems on composed configs, so each costs a fraction of a
second. No Ray is started: where the devices are counted, the count of the Ray that `ray.init` would
join (run/devices.py cluster_devices) is given by the case. vLLM (and, for npu, torch_npu) is not
installed in the test environments.
"""

import sys

import pytest
from omegaconf import OmegaConf

from verl_qwen35.config import compose
from verl_qwen35.errors import UserError
from verl_qwen35.run import devices
from verl_qwen35.run.machine import launch_problems

DOCTOR = "install it in every node's environment (verl-qwen35 doctor device={device} lists the whole stack)"


def problems(device: str, *overrides: str) -> list:
    cfg = compose([f"device={device}", "model=35b", *overrides])
    OmegaConf.resolve(cfg)
    return launch_problems(cfg)


@pytest.fixture(autouse=True)
def no_ray_cluster(monkeypatch):
    monkeypatch.setenv("RAY_ADDRESS", "local")


@pytest.fixture
def ray_nodes(monkeypatch):
    """`ray_nodes(*devices)`: the devices of each alive node of the Ray that ray.init would use; the calls made."""
    calls = []

    def given(*per_node: float) -> list:
        def cluster_devices(cfg, resource):
            calls.append(resource)
            return list(per_node)

        monkeypatch.setattr(devices, "cluster_devices", cluster_devices)
        return calls

    return given


@pytest.mark.parametrize(("device", "missing"), [("gpu", "vLLM"), ("npu", "torch_npu (matches torch)")])
def test_the_stack_check_names_each_missing_component_and_the_doctor_for_this_device(device, missing):
    found = problems(device, "launch_checks.devices=false")
    assert found and {(p.level, p.keys) for p in found} == {("error", ("launch_checks.stack",))}
    assert all(p.message.endswith(DOCTOR.format(device=device)) for p in found)
    assert any(p.message.startswith(f"{missing}: not installed, required ") for p in found)


@pytest.mark.parametrize("device", ["gpu", "npu"])
def test_the_stack_is_checked_unless_turned_off(device):
    assert problems(device, "launch_checks.devices=false"), "by default: checked"
    assert problems(device, "launch_checks.stack=false", "launch_checks.devices=false") == []


@pytest.mark.parametrize(("device", "resource"), [("gpu", "GPU"), ("npu", "NPU")])
def test_the_devices_are_counted_unless_turned_off(device, resource, ray_nodes):
    calls = ray_nodes(0)  # one node without the devices (35b: 1 node x 8 or 16)
    (short,) = problems(device, "launch_checks.stack=false")  # by default: counted
    assert calls == [resource]
    assert [k.split(" ")[0] for k in short.keys] == ["parallel.nnodes", "parallel.devices_per_node"]
    assert f"has {resource}s per node [0] (0 in total, 0 node(s) with at least " in short.message
    assert "verl would wait forever" in short.message
    assert problems(device, "launch_checks.stack=false", "launch_checks.devices=false") == []
    assert calls == [resource], "turned off: Ray is not asked"


@pytest.mark.parametrize(("nodes", "refused"), [((16,), False), ((16, 4), False), ((8,), True), ((), True)])
def test_the_layout_needs_enough_nodes_with_enough_devices_each(nodes, refused, ray_nodes):
    ray_nodes(*nodes)
    assert bool(problems("npu", "launch_checks.stack=false")) is refused  # 35b_npu: 1 node x 16


def test_launch_checks_that_are_not_a_mapping_are_refused_before_anything_is_checked(ray_nodes):
    calls = ray_nodes()
    assert [(p.keys, p.message) for p in problems("gpu", "launch_checks=abc")] == [
        (("launch_checks",), "launch_checks='abc': must be a mapping, e.g. launch_checks.stack=false")
    ]
    assert calls == []


def test_launch_checks_of_the_wrong_type_are_refused_while_composing():
    with pytest.raises(UserError, match=r"launch_checks\.stack: Value 'maybe' is not a valid bool"):
        compose(["device=gpu", "launch_checks={stack: maybe}"])


def test_without_ray_the_devices_cannot_be_counted(monkeypatch):
    """A None entry in sys.modules is how Python marks a module unimportable: find_spec answers None."""
    monkeypatch.setitem(sys.modules, "ray", None)
    assert [(p.keys, p.message) for p in problems("gpu", "launch_checks.stack=false")] == [
        (("launch_checks.devices",), "Ray is not installed: the cluster's devices cannot be counted")
    ]
