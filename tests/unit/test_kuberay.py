"""submit=kuberay: the RayJob it writes, checked against KubeRay's own CRD schema, and its submission.

The CRD (tests/data/kuberay/, KubeRay v1.7.0, see SOURCE.md there) is the one the operator installs;
the API server validates a RayJob against its openAPIV3Schema. Submission goes to a stand-in API
server on 127.0.0.1 (a kubeconfig in tmp_path points the real kubernetes client at it); no cluster.
"""

import gzip
import hashlib
import json
import os
import shlex
import shutil
import threading
from functools import cache
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from tests.conftest import COMBOS
from tests.tiny_data import write_geo3k_stub

CRD = Path(__file__).parents[1] / "data" / "kuberay" / "ray.io_rayjobs.yaml.gz"
# An image built FROM verl's with this package added (docs/clusters.md, "The image"); verl's own lacks it.
IMAGE = "registry.example.com/team/verl-qwen35:v0.8.0-a3"
STOCK = "quay.io/ascend/verl:v0.8.0-cann9.0.0-torch2.9.0post2-a3-ubuntu22.04-py3.11-vllm"


def structural(node: Any) -> Any:
    """Kubernetes' structural schema as plain JSON Schema: int-or-string as such, unknown fields refused."""
    if isinstance(node, list):
        return [structural(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {key: structural(value) for key, value in node.items()}
    if out.pop("x-kubernetes-int-or-string", False):
        out["anyOf"] = [{"type": "integer"}, {"type": "string"}]
    preserve = out.pop("x-kubernetes-preserve-unknown-fields", False)
    if out.get("type") == "object" and "properties" in out and "additionalProperties" not in out and not preserve:
        out["additionalProperties"] = False
    return out


@cache
def rayjob_schema() -> dict:
    crd = yaml.safe_load(gzip.decompress(CRD.read_bytes()))
    (v1,) = [v for v in crd["spec"]["versions"] if v["name"] == "v1"]
    schema = structural(v1["schema"]["openAPIV3Schema"])
    schema["properties"]["metadata"] = {"type": "object"}  # the API server checks ObjectMeta itself
    return schema


def crd_errors(body: dict) -> list[str]:
    validator = jsonschema.Draft7Validator(rayjob_schema())
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(body)]


def storage(tmp_path: Path) -> list[str]:
    shared = tmp_path / "shared"
    return [
        f"submit.storage.mount_path={shared}",
        "submit.storage.pvc=shared-data",
        f"hydra.run.dir={shared / 'run'}",
        f"trainer.default_local_dir={shared / 'checkpoints'}",
    ]


def kuberay(cli, tmp_path: Path, *overrides: str):
    return cli("submit=kuberay", f"submit.image={IMAGE}", *storage(tmp_path), *overrides)


def written(tmp_path: Path) -> dict:
    return yaml.safe_load((tmp_path / "shared" / "run" / "rayjob.yaml").read_text())


def test_the_crd_schema_refuses_what_kuberay_refuses():
    """The validation is not vacuous: a misspelt field and a wrong type are found."""
    body = {"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {}, "spec": {"entrypoint": "x"}}
    assert crd_errors(body) == []
    assert crd_errors({**body, "spec": {"entrypoint": "x", "shutdownAfterJobFinish": True}})
    assert crd_errors({**body, "spec": {"entrypoint": "x", "backoffLimit": "no"}})


@pytest.mark.parametrize(("model", "device"), COMBOS)
def test_every_preset_writes_a_rayjob_kuberay_accepts(cli, tmp_path, model, device):
    run = kuberay(cli, tmp_path, f"model={model}", f"device={device}", "dry_run=true")
    assert run.code == 0, run.said
    body = written(tmp_path)
    assert crd_errors(body) == []
    record = tmp_path / "shared" / "run" / "launch.yaml"
    cfg = yaml.safe_load(record.read_text())["config"]
    nnodes, per_node = cfg["trainer"]["nnodes"], cfg["trainer"]["n_gpus_per_node"]
    (group,) = body["spec"]["rayClusterSpec"]["workerGroupSpecs"]
    assert group["replicas"] == group["minReplicas"] == group["maxReplicas"] == nnodes
    (worker,) = group["template"]["spec"]["containers"]
    resource = "huawei.com/Ascend910" if device == "npu" else "nvidia.com/gpu"
    assert worker["resources"]["limits"] == {resource: per_node}
    assert worker["image"] == IMAGE
    head = body["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]["containers"][0]
    assert "resources" not in head  # the head holds no devices: every device pod is a worker
    env = {e["name"]: e.get("value") for e in worker["env"]}
    if device == "npu":
        assert env["HCCL_BUFFSIZE"] == cfg["env"]["set"]["HCCL_BUFFSIZE"]
        assert json.loads(json.loads(group["rayStartParams"]["resources"])) == {"NPU": per_node}
    argv = shlex.split(body["spec"]["entrypoint"])
    assert argv[-4:-2] == ["relaunch", str(record.parent)]  # no --trust-shared: the pods run as the owner
    assert argv[-1] == hashlib.sha256(record.read_bytes()).hexdigest()
    assert body["spec"]["shutdownAfterJobFinishes"] is True
    pod = group["template"]["spec"]
    assert pod["securityContext"] == {"runAsUser": os.getuid(), "runAsGroup": os.getgid()}  # reads the 600 record


def test_pods_as_the_images_user_relaunch_the_pinned_record_trusting_it(cli, tmp_path):
    run = kuberay(cli, tmp_path, "submit.run_as_submitter=false", "dry_run=true")
    assert run.code == 0, run.said
    body = written(tmp_path)
    argv = shlex.split(body["spec"]["entrypoint"])
    record = tmp_path / "shared" / "run" / "launch.yaml"
    assert argv[-3:] == ["--digest", hashlib.sha256(record.read_bytes()).hexdigest(), "--trust-shared"]
    assert "securityContext" not in body["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]
    assert crd_errors(body) == []


def test_secrets_are_references_to_a_named_secret_never_values(cli, tmp_path, monkeypatch):
    monkeypatch.setenv("WANDB_API_KEY", "sk-very-secret")
    run = kuberay(cli, tmp_path, "submit.secret_name=run-secrets", "submit.secret_env=[WANDB_API_KEY]", "dry_run=true")
    assert run.code == 0, run.said
    text = (tmp_path / "shared" / "run" / "rayjob.yaml").read_text()
    assert "sk-very-secret" not in text
    worker = written(tmp_path)["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]["template"]["spec"]["containers"][0]
    (ref,) = [e for e in worker["env"] if e["name"] == "WANDB_API_KEY"]
    assert ref == {
        "name": "WANDB_API_KEY",
        "valueFrom": {"secretKeyRef": {"name": "run-secrets", "key": "WANDB_API_KEY"}},
    }
    assert crd_errors(written(tmp_path)) == []


def test_the_options_are_ordinary_keys(cli, tmp_path):
    run = kuberay(cli, tmp_path, "+submit.node_selector.accelerator-type=module-a3-16", "--cfg", "job")
    assert run.code == 0, run.said
    submit = yaml.safe_load(run.out)["submit"]
    assert submit["image"] == IMAGE and submit["apply"] is True and submit["storage"]["pvc"] == "shared-data"
    assert submit["node_selector"] == {"accelerator-type": "module-a3-16"}


def test_apply_false_writes_the_rayjob_and_prints_the_kubectl_line(cli, tmp_path):
    data = write_geo3k_stub(tmp_path / "geo3k")
    run = kuberay(cli, tmp_path, "model=35b", "device=gpu", "submit.apply=false", "launch_checks.stack=false", *data)
    assert run.code == 0, run.said
    assert f"kubectl apply -f {tmp_path / 'shared' / 'run' / 'rayjob.yaml'}" in run.out
    assert crd_errors(written(tmp_path)) == []


class ApiServer:
    """A stand-in Kubernetes API server: records every request, answers a create with 201 (or `status`)."""

    def __init__(self, status: int = 201) -> None:
        self.requests: list[tuple[str, str, dict]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append(("POST", self.path, body))
                reply = {**body, "metadata": {**body["metadata"], "uid": f"uid-{len(server.requests)}"}}
                if status >= 400:
                    reply = {"kind": "Status", "status": "Failure", "reason": "AlreadyExists", "code": status}
                payload = json.dumps(reply).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args: object) -> None:
                pass

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.http.serve_forever, daemon=True).start()

    def kubeconfig(self, directory: Path) -> Path:
        path = directory / "kubeconfig"
        host, port = self.http.server_address
        path.write_text(
            yaml.safe_dump(
                {
                    "apiVersion": "v1",
                    "kind": "Config",
                    "clusters": [{"name": "standin", "cluster": {"server": f"http://{host}:{port}"}}],
                    "users": [{"name": "me", "user": {"token": "standin"}}],
                    "contexts": [{"name": "standin", "context": {"cluster": "standin", "user": "me"}}],
                    "current-context": "standin",
                }
            )
        )
        return path


@pytest.fixture
def api_server(tmp_path, monkeypatch):
    servers: list[ApiServer] = []

    def start(status: int = 201) -> ApiServer:
        server = ApiServer(status)
        monkeypatch.setenv("KUBECONFIG", str(server.kubeconfig(tmp_path)))
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.http.shutdown()
        server.http.server_close()


def test_apply_creates_the_rayjob_through_the_kubernetes_client(cli, tmp_path, api_server):
    server = api_server()
    data = write_geo3k_stub(tmp_path / "geo3k")
    run = kuberay(
        cli, tmp_path, "model=35b", "device=npu", "submit.namespace=training", "launch_checks.stack=false", *data
    )
    assert run.code == 0, run.said
    ((method, path, body),) = server.requests
    assert (method, path) == ("POST", "/apis/ray.io/v1/namespaces/training/rayjobs")
    assert body == written(tmp_path) and crd_errors(body) == []
    verdict = json.loads((tmp_path / "shared" / "run" / "verdict.json").read_text())
    assert verdict["job_id"] == body["metadata"]["name"]


def test_a_refused_create_exits_2_with_one_message(cli, tmp_path, api_server):
    api_server(status=409)
    data = write_geo3k_stub(tmp_path / "geo3k")
    run = kuberay(cli, tmp_path, "model=35b", "device=gpu", "launch_checks.stack=false", *data)
    assert run.code == 2, run.said
    assert "creating RayJob default/" in run.err and "Traceback" not in run.said


def test_a_sweep_creates_one_rayjob_per_point(cli, tmp_path, api_server):
    server = api_server()
    data = write_geo3k_stub(tmp_path / "geo3k")
    shared = tmp_path / "shared"
    run = cli(
        "-m",
        "submit=kuberay",
        f"submit.image={IMAGE}",
        f"submit.storage.mount_path={shared}",
        "submit.storage.pvc=shared-data",
        f"hydra.sweep.dir={shared / 'sweep'}",
        "model=35b",
        "device=gpu",
        "launch_checks.stack=false",
        "actor_rollout_ref.actor.optim.lr=1e-6,2e-6",
        *data,
    )
    assert run.code == 0, run.said
    bodies = [body for _, _, body in server.requests]
    assert len(bodies) == 2
    assert len({body["metadata"]["name"] for body in bodies}) == 2
    for body in bodies:
        assert crd_errors(body) == []
    assert sorted(p.parent.name for p in (shared / "sweep").glob("*/rayjob.yaml")) == ["0", "1"]


HOSTILE = [
    ("submit.image", "'x $(touch MARK)'", "submit.image"),
    ("submit.image", "null", "submit.image"),
    ("submit.name", "'Bad\"Name'", "submit.name"),
    ("submit.name", "a" * 48, "submit.name"),
    ("submit.name", "'x\nkind: Pod'", "submit.name"),
    ("submit.namespace", "'ns$(touch MARK)'", "submit.namespace"),
    ("submit.secret_name", "'my secret'", "submit.secret_name"),
    ("submit.secret_env", "['X$(touch MARK)']", "submit.secret_env[0]"),
    ("submit.secret_env", "[WANDB_API_KEY]", "submit.secret_name"),
    ("+submit.node_selector._bad", "x", "submit.node_selector"),
    ("+submit.node_selector.accelerator", "'a\"b'", "submit.node_selector.accelerator"),
    ("submit.node_devices", "4", "parallel.devices_per_node"),
    ("submit.node_devices", "0", "submit.node_devices"),
    ("submit.storage.mount_path", "relative/dir", "submit.storage.mount_path"),
    ("submit.storage.host_path", "/mnt/x", "submit.storage.pvc"),
    ("submit.storage.pvc", "'Shared Data'", "submit.storage.pvc"),
    ("submit.ttl_seconds_after_finished", "-1", "submit.ttl_seconds_after_finished"),
    ("submit.python", "'python \"'", "submit.python"),
]


@pytest.mark.parametrize(("key", "value", "named"), HOSTILE, ids=[f"{k}={v[:12]}" for k, v, _ in HOSTILE])
def test_hostile_values_exit_2_naming_the_key_and_write_nothing(cli, tmp_path, key, value, named):
    run = kuberay(cli, tmp_path, "model=35b", "device=gpu", f"{key}={value}")
    assert run.code == 2, run.said
    assert f"[{named}" in run.err or f", {named}" in run.err or f"error: {named}:" in run.err, run.err
    assert "Traceback" not in run.said
    assert not list(tmp_path.rglob("rayjob.yaml")) and not list(tmp_path.rglob("launch.yaml"))
    assert not list(tmp_path.rglob("MARK"))


def test_a_run_directory_off_the_shared_storage_is_refused_before_anything_is_written(cli, tmp_path):
    run = cli(
        "submit=kuberay",
        f"submit.image={IMAGE}",
        f"submit.storage.mount_path={tmp_path / 'shared'}",
        "submit.storage.pvc=shared-data",
        f"hydra.run.dir={tmp_path / 'elsewhere'}",
        "dry_run=true",
    )
    assert run.code == 2 and "submit.storage.mount_path" in run.err and "Traceback" not in run.said
    assert not list(tmp_path.rglob("rayjob.yaml")) and not list(tmp_path.rglob("launch.yaml"))
    # A refusal of the verdict, never after one: no "verdict OK" anywhere, the error before "REFUSED".
    assert "verdict    OK" not in run.said and "verdict    REFUSED: 1 error(s)" in run.err
    assert run.err.index("ERROR   [submit.storage.mount_path, hydra.run.dir") < run.err.index("REFUSED")


@pytest.mark.parametrize("image", [STOCK, "verlai/verl:app-verl0.6-transformers4.56.1-vllm0.10.2-mcore0.13.0-te2.2"])
def test_a_stock_verl_image_is_named_a_warning_saying_it_lacks_this_package(cli, tmp_path, image):
    """The job runs `python -m verl_qwen35 relaunch` in the image: verl's own images do not hold this package."""
    run = cli("submit=kuberay", f"submit.image={image}", *storage(tmp_path), "dry_run=true")
    assert run.code == 0, run.said
    (line,) = [x for x in run.err.splitlines() if x.startswith("WARNING [submit.image]")]
    assert f"submit.image={image} is a stock verl image, which does not hold verl-qwen35" in line
    assert "pip install --no-deps" in line and "docs/clusters.md" in line
    assert "verdict    OK (3 warning(s))" in run.out  # the two missing data files, and the image
    shutil.rmtree(tmp_path / "shared" / "run")  # a run directory holds one run's records
    ours = kuberay(cli, tmp_path, "dry_run=true")
    assert ours.code == 0 and "[submit.image]" not in ours.said, ours.said


def test_a_missing_image_asks_for_one_holding_this_package(cli, tmp_path):
    run = cli("submit=kuberay", *storage(tmp_path), "dry_run=true")
    assert run.code == 2
    assert "needs a container image holding verl, vLLM and verl-qwen35" in run.err
    assert run.err.index("ERROR   [submit.image]") < run.err.index("REFUSED") and "verdict    OK" not in run.said


def test_a_command_in_submit_python_stays_words_in_the_entrypoint(cli, tmp_path):
    run = kuberay(cli, tmp_path, "submit.python='uv run $(touch MARK) python'", "dry_run=true")
    assert run.code == 0, run.said
    argv = shlex.split(written(tmp_path)["spec"]["entrypoint"])
    assert argv[:4] == ["uv", "run", "$(touch", "MARK)"]
