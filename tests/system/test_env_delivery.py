"""The device environment reaches Ray workers on another node only through `runtime_env`.

The seed's failure: variables set in the driver's shell never reached the workers on other
nodes, which inherit their own node's `ray start` environment. Here the node is a Ray head
started as a separate process from a clean environment (`env -i`-like, with a proxy and a
wrong thread count in its shell, as a cluster node has), and the driver connects to it by
address through verl's `ray_kwargs.ray_init.address`. The launch is the real one
(entrypoint, `app.run`, verl's `main_ppo.main`) with the recording task runner of
test_forwarding. At the moment verl calls `ray.init`, the driver's own environment holds none
of the job's variables, so the only way for a worker to see them is the job's runtime_env
(`environment.apply_env` -> `ray_kwargs.ray_init.runtime_env` -> verl's `run_ppo` ->
`ray.init(runtime_env=...)`, verl/trainer/main_ppo.py). Drop it anywhere and these cases fail.
"""

import os

import pytest
import ray

from tests.ray_head import separate_ray_head
from tests.system.test_forwarding import PROXIES, launch  # noqa: F401  (the launch fixture)
from verl_qwen35.config import compose

# The node's own shell: proxies the job must clear, values the job must override, and a
# marker proving the worker ran on this node and not on a Ray the driver started.
NODE_SHELL = {
    **{name: "http://node-proxy.invalid:3128" for name in PROXIES},
    "OMP_NUM_THREADS": "8",
    "CUDA_DEVICE_MAX_CONNECTIONS": "32",
    "NODE_MARKER": "separate-head",
}


@pytest.fixture(scope="module")
def node() -> str:
    """One separate Ray head for the module; its address."""
    with separate_ray_head(NODE_SHELL) as head:
        yield head.address


@pytest.mark.parametrize("device", ["gpu", "npu"])
def test_device_env_reaches_workers_of_a_separate_node_only_via_runtime_env(launch, node, device, monkeypatch):  # noqa: F811
    job_env = compose([f"device={device}"]).env
    names = [*job_env.set, *job_env.unset]
    monkeypatch.setenv("DRIVER_ONLY", "1")  # a driver variable no runtime_env names
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")  # as on the node (tests/ray_head.py)
    at_init: dict[str, dict] = {}
    real_init = ray.init

    def init_from_a_driver_without_the_job_env(*args, **kwargs):
        """verl's `ray.init`, after taking the job's variables out of the driver's own environment."""
        for name in names:
            os.environ.pop(name, None)
        at_init["driver"] = dict(os.environ)
        at_init["kwargs"] = kwargs
        return real_init(*args, **kwargs)

    monkeypatch.setattr(ray, "init", init_from_a_driver_without_the_job_env)
    record, expected = launch("model=35b", f"device={device}", ray_init=(f"+ray_kwargs.ray_init.address={node}",))
    environ = record["environ"]

    assert at_init["kwargs"]["address"] == node, "the driver must connect to the separate head"
    assert environ.get("NODE_MARKER") == "separate-head", "the task runner did not run on the separate node"
    assert "DRIVER_ONLY" not in environ, "the driver's environment leaked to the node: this test proves nothing"
    assert not set(names) & set(at_init["driver"]), "the driver still held job variables at ray.init"

    device_env = {k.removeprefix("env.set."): v for k, v in expected.items() if k.startswith("env.set.")}
    assert ("HCCL_BUFFSIZE" in device_env) is (device == "npu")
    assert device_env["OMP_NUM_THREADS" if device == "npu" else "CUDA_DEVICE_MAX_CONNECTIONS"] == "1"
    missing = {name: (value, environ.get(name)) for name, value in device_env.items() if environ.get(name) != value}
    assert not missing, f"device variables not delivered (config value, worker value): {missing}"
    assert set(expected["env.unset"]) == set(PROXIES)
    leaked = {name: environ[name] for name in PROXIES if environ.get(name)}
    assert not leaked, f"the node's proxies reached the worker: {leaked}"
