"""Device detection gives both answers: npu where torch_npu can be found, gpu where it cannot.

No mock of the detection: a `torch_npu` package directory put on sys.path is what a real
`importlib.util.find_spec` finds on an Ascend host. Its `__init__` raises, so the test also
proves that detecting the device imports nothing (dry runs must not import torch).
"""

import importlib.util

import pytest

from verl_qwen35.config import compose
from verl_qwen35.installed import detect_device


@pytest.fixture
def torch_npu_installed(tmp_path, monkeypatch):
    package = tmp_path / "site" / "torch_npu"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("raise ImportError('detecting the device must not import torch_npu')\n")
    monkeypatch.syspath_prepend(str(package.parent))  # also invalidates the import caches
    assert importlib.util.find_spec("torch_npu") is not None


def test_without_torch_npu_the_device_is_gpu():
    assert importlib.util.find_spec("torch_npu") is None, "this test needs a host without torch_npu"
    assert detect_device() == "gpu"
    assert compose(["model=35b"]).trainer.device == "cuda"


def test_with_torch_npu_findable_the_device_is_npu(torch_npu_installed):
    assert detect_device() == "npu"
    cfg = compose(["model=35b"])
    assert cfg.trainer.device == "npu"
    assert "HCCL_BUFFSIZE" in cfg.env.set, "the NPU device group was not chosen"


def test_an_explicit_device_wins_over_detection(torch_npu_installed):
    assert compose(["model=35b", "device=gpu"]).trainer.device == "cuda"
