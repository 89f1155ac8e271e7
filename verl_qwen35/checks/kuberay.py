"""The `submit=kuberay` values, checked before anything is written or submitted.

Names are Kubernetes' own rules (k8s.io/apimachinery/pkg/util/validation/validation.go): a RayJob's
metadata.name a DNS-1035 label of at most 47 characters (KubeRay's ValidateRayJobMetadata,
ray-operator/controllers/ray/utils/validation.go), the namespace a DNS-1123 label, a Secret's and a
PersistentVolumeClaim's names DNS-1123 subdomains, node selector keys qualified names and values label
values. The image is mandatory and must hold this package (the job runs `verl_qwen35.relaunch`): a stock
verl image is named, as a warning. Values become YAML data (quoted by the YAML writer), so quotes and `$(...)`
in them stay text; what is refused is what Kubernetes refuses or what would run elsewhere than meant.
"""

import re
from pathlib import PurePosixPath
from typing import Any

from omegaconf import DictConfig, OmegaConf

from verl_qwen35 import shell
from verl_qwen35.checks.problem import Problem, error, warning

_DNS1035 = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
_DNS1123_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_QUALIFIED = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
# An image reference: registry/path:tag@digest characters only (distribution/reference's grammar's alphabet).
_IMAGE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/:@+-]*")
PACKAGE = "verl-qwen35"
BUILD = (
    "build one FROM verl's image (quay.io/ascend/verl:<tag>, verlai/verl:<tag>) that adds this package with "
    '`pip install --no-deps` (docs/clusters.md, "The image") and set submit.image to it'
)
MAX_RAYJOB_NAME = 47  # KubeRay's MaxRayJobNameLength (constant.go)
# Devices a whole node holds, as run/submit/kuberay.py assumes when submit.node_devices is null.
DEFAULT_NODE_DEVICES = {"gpu": 8, "npu": 16}


def stock_verl_image(image: str) -> bool:
    """verl's published images (verlai/verl, quay.io/ascend/verl: a repository named `verl`) ship verl and its
    stack, not this package."""
    name = image.split("@", 1)[0]
    last = name.rsplit("/", 1)[-1]
    return last.split(":", 1)[0] == "verl"


def _name(key: str, value: Any, pattern: re.Pattern, limit: int, what: str, found: list[Problem]) -> None:
    if not (isinstance(value, str) and len(value) <= limit and pattern.fullmatch(value)):
        found.append(error(key, f"{key}={value!r}: Kubernetes needs {what} of at most {limit} characters"))


def _label_key(key: str, name: Any, found: list[Problem]) -> None:
    prefix, _, local = str(name).rpartition("/") if isinstance(name, str) else ("", "", "")
    if not (
        isinstance(name, str)
        and len(local) <= 63
        and _QUALIFIED.fullmatch(local)
        and (not prefix or (len(prefix) <= 253 and _DNS1123_SUBDOMAIN.fullmatch(prefix)))
    ):
        found.append(error(key, f"{key}: {name!r} is not a Kubernetes label key (e.g. accelerator-type)"))


def _selector(s: DictConfig, found: list[Problem]) -> None:
    key = "submit.node_selector"
    chosen = s.get("node_selector")
    if not OmegaConf.is_dict(chosen):
        found.append(error(key, f"{key}: a mapping of node labels, e.g. {{accelerator-type: module-a3-16}}"))
        return
    for name, value in chosen.items():
        _label_key(key, name, found)
        if not (isinstance(value, str) and len(value) <= 63 and (value == "" or _QUALIFIED.fullmatch(value))):
            found.append(error(f"{key}.{name}", f"{key}.{name}={value!r}: not a Kubernetes label value"))


def _path(key: str, value: Any, found: list[Problem]) -> None:
    if not (isinstance(value, str) and PurePosixPath(value).is_absolute() and value.isprintable()):
        found.append(error(key, f"{key}={value!r}: an absolute path without control characters"))


def _storage(s: DictConfig, found: list[Problem]) -> None:
    storage = s.get("storage")
    mount, pvc, host = storage.get("mount_path"), storage.get("pvc"), storage.get("host_path")
    if mount is None:
        found.append(
            error(
                "submit.storage.mount_path",
                "submit.storage.mount_path is null: the pods need shared storage holding the run directory and "
                "the checkpoints, e.g. submit.storage.mount_path=/mnt/shared submit.storage.pvc=shared",
            )
        )
    else:
        _path("submit.storage.mount_path", mount, found)
    if pvc is not None and host is not None:
        keys = ("submit.storage.pvc", "submit.storage.host_path")
        found.append(error(keys, "submit.storage.pvc and submit.storage.host_path are both set; keep one"))
    if pvc is not None:
        _name("submit.storage.pvc", pvc, _DNS1123_SUBDOMAIN, 253, "a PersistentVolumeClaim name", found)
    elif host is not None:
        _path("submit.storage.host_path", host, found)
    elif mount is not None:
        found.append(
            error(
                ("submit.storage.pvc", "submit.storage.host_path"),
                "no shared storage: set submit.storage.pvc (a PersistentVolumeClaim) or submit.storage.host_path",
            )
        )


def _secrets(s: DictConfig, found: list[Problem]) -> None:
    secret, names = s.get("secret_name"), s.get("secret_env")
    if secret is not None:
        _name("submit.secret_name", secret, _DNS1123_SUBDOMAIN, 253, "a Secret name (a DNS-1123 subdomain)", found)
    if not OmegaConf.is_list(names):
        found.append(error("submit.secret_env", "submit.secret_env: a list of variable names, e.g. [WANDB_API_KEY]"))
        return
    for i, name in enumerate(names):
        if why := shell.variable_problem(name):
            found.append(error(f"submit.secret_env[{i}]", f"submit.secret_env[{i}]: {why}"))
    if names and secret is None:
        found.append(
            error("submit.secret_name", "submit.secret_env names variables but submit.secret_name (a Secret) is null")
        )


def _integer(key: str, value: Any, low: int, found: list[Problem], optional: bool = False) -> None:
    if value is None and optional:
        return
    if not (isinstance(value, int) and not isinstance(value, bool) and value >= low):
        found.append(error(key, f"{key}={value!r}: must be an integer >= {low}{' or null' if optional else ''}"))


def kuberay_problems(cfg: DictConfig) -> list[Problem]:
    """Every unusable `submit.*` value of submit=kuberay, each naming its key."""
    s, found = cfg.submit, []
    image = s.get("image")
    if image is None:
        found.append(
            error(
                "submit.image",
                f"submit.image is null: every pod needs a container image holding verl, vLLM and {PACKAGE} (the "
                f"job runs `python -m verl_qwen35 relaunch`): {BUILD}",
            )
        )
    elif not (isinstance(image, str) and len(image) <= 4096 and _IMAGE.fullmatch(image)):
        found.append(error("submit.image", f"submit.image={image!r}: not an image reference (registry/name:tag)"))
    elif stock_verl_image(image):
        found.append(
            warning(
                "submit.image",
                f"submit.image={image} is a stock verl image, which does not hold {PACKAGE}: the job runs "
                f"`python -m verl_qwen35 relaunch` in it and would stop at once unless your image adds it; {BUILD}",
            )
        )
    if s.get("name") is not None:
        what = "a DNS-1035 label (lower-case letters, digits, '-', a letter first)"
        _name("submit.name", s.name, _DNS1035, MAX_RAYJOB_NAME, what, found)
    _name("submit.namespace", s.get("namespace"), _DNS1123_LABEL, 63, "a DNS-1123 label", found)
    _integer("submit.node_devices", s.get("node_devices"), 1, found, optional=True)
    _integer("submit.ttl_seconds_after_finished", s.get("ttl_seconds_after_finished"), 0, found)
    _integer("submit.active_deadline_seconds", s.get("active_deadline_seconds"), 1, found, optional=True)
    from verl_qwen35.model.layout import device_of  # `--cfg job` loads the backends, not the model

    device = device_of(cfg)
    holds = s.get("node_devices") or DEFAULT_NODE_DEVICES[device]
    per_pod = cfg.trainer.n_gpus_per_node
    if isinstance(holds, int) and isinstance(per_pod, int) and per_pod > holds:
        found.append(
            error(
                ("parallel.devices_per_node", "submit.node_devices"),
                f"parallel.devices_per_node={per_pod} but a node holds {holds} device(s) (submit.node_devices): "
                "no node can run a worker pod; lower parallel.devices_per_node (raise parallel.nnodes)",
            )
        )
    _selector(s, found)
    _secrets(s, found)
    _storage(s, found)
    return found
