"""submit=kuberay: write `<run dir>/rayjob.yaml`, a KubeRay `ray.io/v1` RayJob, and create it on Kubernetes.

The RayJob brings up its own Ray cluster (one head pod without devices, one worker group of
parallel.nnodes pods with parallel.devices_per_node devices each), runs the relaunch of the run
directory's launch.yaml (its sha256 pinned) as the job's entrypoint, and deletes the cluster when the
job ends. Every pod mounts the shared storage at the same path, so the run directory and the
checkpoints are where launch.yaml says. Secrets are `secretKeyRef`s to a named Secret, never values.
The manifest is data (YAML), not shell: only the entrypoint is a command line, written by shell.py.
"""

import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from omegaconf import DictConfig

from verl_qwen35 import shell
from verl_qwen35.checks.kuberay import kuberay_problems
from verl_qwen35.checks.problem import Problem, error
from verl_qwen35.config.secrets import redact
from verl_qwen35.records.launch import digest
from verl_qwen35.records.private_files import write_private
from verl_qwen35.run.drill import refuse_unordered
from verl_qwen35.run.environment import effective_env
from verl_qwen35.run.stops import stoppable
from verl_qwen35.run.submit.base import Backend, SubmitError, ray_device, relaunch_argv
from verl_qwen35.terminal import say

MANIFEST = "rayjob.yaml"
GROUP, VERSION, PLURAL = "ray.io", "v1", "rayjobs"
# The container resource each device plugin advertises: NVIDIA's k8s-device-plugin `nvidia.com/gpu`; Ascend's
# (mind-cluster ascend-device-plugin) `huawei.com/Ascend910` for the whole 910 family, 910B and A3 (910C) alike,
# which it tells apart only by the node label accelerator-type (module-910b-8, module-a3-16...).
DEVICE_RESOURCE = {"GPU": "nvidia.com/gpu", "NPU": "huawei.com/Ascend910"}
# The node label each plugin stack sets: GPU feature discovery's, and the one Ascend's install guide puts on NPU nodes.
NODE_SELECTOR = {"GPU": {"nvidia.com/gpu.present": "true"}, "NPU": {"accelerator": "huawei-Ascend910"}}
# KubeRay refuses a RayJob name that is not a DNS-1035 label or is longer than 47 characters
# (ray-operator/controllers/ray/utils/validation.go ValidateRayJobMetadata, MaxRayJobNameLength in constant.go).
MAX_NAME = 47
_NOT_NAME = re.compile(r"[^a-z0-9-]+")


@dataclass
class KubeRayStorage:
    """Shared storage mounted at `mount_path` in every pod: a PersistentVolumeClaim or a host path."""

    # Where it is mounted; the run directory and trainer.default_local_dir must be under it (the same path as here).
    mount_path: str | None = None
    pvc: str | None = None
    host_path: str | None = None


@dataclass
class SubmitKubeRay:
    backend: str = "kuberay"
    # metadata.name of the RayJob; null: from trainer.experiment_name (each job of a sweep has its own).
    name: str | None = None
    namespace: str = "default"
    image: str | None = None
    # true: create the RayJob with the kubernetes client; false: write it and print the `kubectl apply` line.
    apply: bool = True
    python: str = "python"
    # Devices a node holds (null: 8 on GPU, 16 on NPU, an A3 node); a pod cannot ask for more.
    node_devices: int | None = None
    # Node labels the worker pods need, beside the device's own label (device_label).
    node_selector: dict[str, str] = field(default_factory=dict)
    device_label: bool = True
    # A Kubernetes Secret (by name) whose keys `secret_env` reads, each into the variable of the same name.
    secret_name: str | None = None
    secret_env: list[str] = field(default_factory=list)
    storage: KubeRayStorage = field(default_factory=KubeRayStorage)
    # Pods run as your uid/gid: they read the run's private launch.yaml and the relaunch trusts it as yours.
    run_as_submitter: bool = True
    ttl_seconds_after_finished: int = 600
    active_deadline_seconds: int | None = None


def job_name(cfg: DictConfig) -> str:
    """submit.name, else trainer.experiment_name made a DNS-1035 label (lower case, '-', a letter first)."""
    if cfg.submit.name:
        return str(cfg.submit.name)
    name = _NOT_NAME.sub("-", str(cfg.trainer.experiment_name).lower()).strip("-")
    name = name if name[:1].isalpha() else f"run-{name}"
    return name[:MAX_NAME].rstrip("-") or "verl-qwen35"


def node_selector(cfg: DictConfig) -> dict[str, str]:
    resource, _ = ray_device(cfg)
    labels = dict(NODE_SELECTOR[resource]) if cfg.submit.device_label else {}
    return {**labels, **{str(k): str(v) for k, v in cfg.submit.node_selector.items()}}


def pod_env(cfg: DictConfig) -> list[dict[str, Any]]:
    """The device environment (env.set; env.unset names are left out) and the secrets, by reference only."""
    s = cfg.submit
    env: list[dict[str, Any]] = [
        {"name": name, "value": value} for name, value in effective_env(cfg).items() if name not in cfg.env.unset
    ]
    env += [
        {"name": str(name), "valueFrom": {"secretKeyRef": {"name": str(s.secret_name), "key": str(name)}}}
        for name in s.secret_env
    ]
    return env


def volume(cfg: DictConfig) -> dict[str, Any]:
    storage = cfg.submit.storage
    if storage.pvc:
        return {"name": "shared", "persistentVolumeClaim": {"claimName": str(storage.pvc)}}
    return {"name": "shared", "hostPath": {"path": str(storage.host_path or storage.mount_path), "type": "Directory"}}


def pod_template(cfg: DictConfig, devices: int) -> dict[str, Any]:
    """One pod: the image, the environment, the shared storage; `devices` of the device resource (none: the head)."""
    resource, _ = ray_device(cfg)
    container: dict[str, Any] = {
        "name": "ray",
        "image": str(cfg.submit.image),
        "env": pod_env(cfg),
        "volumeMounts": [{"name": "shared", "mountPath": str(cfg.submit.storage.mount_path)}],
    }
    spec: dict[str, Any] = {"containers": [container], "volumes": [volume(cfg)]}
    if cfg.submit.run_as_submitter:  # launch.yaml is mode 600 and the relaunch trusts only its owner's records
        spec["securityContext"] = {"runAsUser": os.getuid(), "runAsGroup": os.getgid()}
    if devices:
        amount = {DEVICE_RESOURCE[resource]: devices}
        container["resources"] = {"limits": amount, "requests": amount}
        if selector := node_selector(cfg):
            spec["nodeSelector"] = selector
    return {"spec": spec}


def entrypoint_argv(cfg: DictConfig, run_dir: Path, launch_digest: str) -> list[str]:
    """The relaunch of the record as submitted; as another user than its owner, trusting it by its pinned sha256."""
    argv = [*relaunch_argv(cfg, str(run_dir)), "--digest", launch_digest]
    return argv if cfg.submit.run_as_submitter else [*argv, "--trust-shared"]


def manifest(cfg: DictConfig, run_dir: Path, launch_digest: str) -> dict[str, Any]:
    """The RayJob. KubeRay reads `nvidia.com/gpu` limits as Ray's GPU resource by itself
    (ray-operator/controllers/ray/common/pod.go); it knows no Ascend resource, so NPU workers declare Ray's
    "NPU" resource, the one verl places its workers on, through rayStartParams."""
    s = cfg.submit
    resource, per_node = ray_device(cfg)
    worker_params: dict[str, str] = {}
    if resource == "NPU":
        worker_params["resources"] = f'"{{\\"NPU\\": {per_node}}}"'
    nnodes = int(cfg.trainer.nnodes)
    spec: dict[str, Any] = {
        "entrypoint": shell.command(entrypoint_argv(cfg, run_dir, launch_digest)),
        "submissionMode": "K8sJobMode",
        # One attempt: a failed run is looked at, not retried from scratch by KubeRay (resume is the user's
        # resubmission, which finds the checkpoints on the shared storage).
        "backoffLimit": 0,
        "shutdownAfterJobFinishes": True,
        "ttlSecondsAfterFinished": int(s.ttl_seconds_after_finished),
        "rayClusterSpec": {
            "headGroupSpec": {"rayStartParams": {}, "template": pod_template(cfg, 0)},
            "workerGroupSpecs": [
                {
                    "groupName": "devices",
                    "replicas": nnodes,
                    "minReplicas": nnodes,
                    "maxReplicas": nnodes,
                    "rayStartParams": worker_params,
                    "template": pod_template(cfg, per_node),
                }
            ],
        },
    }
    if s.active_deadline_seconds is not None:
        spec["activeDeadlineSeconds"] = int(s.active_deadline_seconds)
    labels = {"app.kubernetes.io/managed-by": "verl-qwen35"}
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "RayJob",
        "metadata": {"name": job_name(cfg), "namespace": str(s.namespace), "labels": labels},
        "spec": spec,
    }


def storage_problem(cfg: DictConfig, run_dir: Path) -> str | None:
    """Why the pods would not see the run directory or the checkpoints at their paths here, or None."""
    mount = Path(str(cfg.submit.storage.mount_path))
    for what, path in (("the run directory", run_dir), ("trainer.default_local_dir", cfg.trainer.default_local_dir)):
        if not Path(str(path)).is_absolute() or not Path(str(path)).is_relative_to(mount):
            return (
                f"{what} {path} is not under submit.storage.mount_path={mount}: the pods would not find it; "
                "put hydra.run.dir (hydra.sweep.dir) and trainer.default_local_dir on the shared storage"
            )
    return None


def run_dir_problems(cfg: DictConfig, run_dir: Path) -> list[Problem]:
    if why := storage_problem(cfg, run_dir):
        return [error(("submit.storage.mount_path", "hydra.run.dir", "trainer.default_local_dir"), why)]
    return []


def create(body: dict[str, Any]) -> str:
    """Create the RayJob with the kubernetes client and the user's kubeconfig (or the pod's service account)."""
    from kubernetes import client, config

    try:  # KUBECONFIG as it is now: the client reads it only once, at import (kubernetes/config/kube_config.py)
        config.load_kube_config(config_file=os.environ.get("KUBECONFIG"))
    except Exception:  # no kubeconfig: inside a pod, its service account
        config.load_incluster_config()
    with stoppable():  # an API server that does not answer must not hold Ctrl-C
        created = client.CustomObjectsApi().create_namespaced_custom_object(
            GROUP, VERSION, body["metadata"]["namespace"], PLURAL, body
        )
    return str(created.get("metadata", {}).get("uid") or body["metadata"]["name"])


def submit_kuberay(cfg: DictConfig, run_dir: Path, dry: bool, write_launch_file: Callable[[], Path]) -> str | None:
    """Write launch.yaml and rayjob.yaml; unless dry or submit.apply=false, create the RayJob; its name."""
    refuse_unordered(cfg, "kuberay")  # a resume drill's job in its save job's sweep: no job dependencies here
    if why := storage_problem(cfg, run_dir):
        raise SubmitError(why)
    try:
        manifest(cfg, run_dir, "0" * 64)  # every value checked before anything is written
    except shell.UnsafeValue as err:
        raise SubmitError(f"the RayJob's entrypoint cannot carry a value: {err}") from None
    if not dry and cfg.submit.apply:
        try:
            import kubernetes  # noqa: F401
        except ImportError:
            raise SubmitError(
                "submit.apply=true needs the kubernetes Python client (pip install 'verl-qwen35[kuberay]'); "
                "or set submit.apply=false to write the RayJob and apply it with kubectl"
            ) from None
    body = manifest(cfg, run_dir, digest(write_launch_file()))
    path = run_dir / MANIFEST
    write_private(path, redact(yaml.safe_dump(body, sort_keys=False)))  # as launch.yaml: no shell secret in it
    name, namespace = body["metadata"]["name"], body["metadata"]["namespace"]
    say(f"kuberay    {path} (RayJob {namespace}/{name}: {cfg.trainer.nnodes} worker pod(s); relaunches {run_dir})")
    if dry or not cfg.submit.apply:
        why = "dry run" if dry else "submit.apply=false"
        say(f"kuberay    {why}, not submitted; to submit: kubectl apply -f {shell.quote(str(path))}")
        return None
    try:
        uid = create(body)
    except Exception as err:  # ApiException (409 exists, 403, 404 no CRD), ConfigException, urllib3 errors
        reason = getattr(err, "reason", None) or err
        raise SubmitError(
            f"creating RayJob {namespace}/{name} failed ({reason}); check your kubeconfig, submit.namespace, "
            "that the KubeRay operator is installed, and submit.name (a RayJob of that name may exist)"
        ) from None
    say(f"kuberay    submitted RayJob {namespace}/{name} ({uid})")
    say(f"log        kubectl logs -n {namespace} -f -l job-name={name}")
    return name


BACKEND = Backend(
    name="kuberay",
    options=SubmitKubeRay,
    problems=kuberay_problems,
    run_dir_problems=run_dir_problems,
    submit=submit_kuberay,
)
