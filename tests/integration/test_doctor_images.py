"""`verl-qwen35 doctor` on each image verl publishes for these models says what to install or change. Each image
is a stand-in of its package set (package metadata at the versions its Dockerfile installs, at verl main
1dda039b's docker/ folder; empty importable packages; CANN's install info; the driver tool), run isolated from
this venv (`python -S`), so the verdict is the one a user of that image sees."""

import json
import os
import shutil
from pathlib import Path

import pytest

from tests.standin import VERL_MAIN_CONFIG, add_dist, isolated, run_isolated, verl_standin

# verl 0.9.1's and verl main's (setup.py) declared transformers; verl 0.9.1's extra verl-core TransferQueue.
VERL_091 = ("transformers!=5.6.0,<5.11,>=5.5.3", 'TransferQueue>=0.1.10; extra == "verl-core"')
VERL_MAIN = ("transformers>=5.5.3,!=5.6.0,<5.11",)
MODULES = {
    "megatron-core": "megatron.core",
    "megatron-bridge": "megatron.bridge",
    "TransferQueue": "transfer_queue",
    "torch-npu": "torch_npu",
    "vllm-ascend": "vllm_ascend",
}
# docker/Dockerfile.stable.vllm: torch 2.11.0 cu130, vLLM 0.24.0, transformers 5.3.0, Megatron-LM core_v0.18.0,
# Megatron-Bridge r0.5.0, TransferQueue 0.1.8, mbridge main; verl v0.7.1 installed for its dependencies (Ray among
# them), then uninstalled.
STABLE_VLLM = {
    "torch": "2.11.0+cu130",
    "vllm": "0.24.0",
    "transformers": "5.3.0",
    "megatron-core": "0.18.0",
    "megatron-bridge": "0.5.0",
    "TransferQueue": "0.1.8",
    "mbridge": "0.15.1",
    "ray": "2.55.1",
}
# docker/ascend/Dockerfile.ascend_9.1.0_a3: vLLM / vllm-ascend 0.23.0, torch 2.10.0, Megatron-LM and MindSpeed
# core_r0.16.0, mbridge, no Megatron-Bridge; verl main (0.10.0.dev) with TransferQueue from its requirements-npu.txt.
ASCEND_910 = {
    "torch": "2.10.0",
    "torch-npu": "2.10.0",
    "vllm": "0.23.0",
    "vllm-ascend": "0.23.0",
    "transformers": "5.5.3",
    "megatron-core": "0.16.0",
    "mindspeed": "0.16.0",
    "mbridge": "0.15.1",
    "TransferQueue": "0.1.11",
    "ray": "2.55.1",
}
# docker/ascend/Dockerfile.ascend_9.0.0_a3_v0.8.0 (and the Qwen3.5 image, CANN 8.5.1, verl 0.8.0.dev): vLLM /
# vllm-ascend 0.18.0, torch 2.9.0, Megatron-LM and MindSpeed core_r0.16.0, Megatron-Bridge de93536e.
ASCEND_900 = ASCEND_910 | {
    "torch": "2.9.0",
    "torch-npu": "2.9.0",
    "vllm": "0.18.0",
    "vllm-ascend": "0.18.0",
    "megatron-bridge": "0.3.0",
}


def image(root: Path, packages: dict[str, str], device: str, cann: str | None = None) -> dict[str, str]:
    """The image's package set under `root`; returns the environment that finds its CANN and driver tool."""
    for dist, version in packages.items():
        add_dist(root, dist, version, module=MODULES.get(dist, dist.replace("-", "_")))
    (root / "transformers" / "models" / "qwen3_5_moe").mkdir(parents=True, exist_ok=True)
    if "torch" in packages and device == "gpu":
        (root / "torch" / "version.py").write_text("__version__ = '2.11.0'\ncuda = '13.0'\n")
    tools = root / "bin"
    tools.mkdir(exist_ok=True)
    tool = tools / ("nvidia-smi" if device == "gpu" else "npu-smi")
    tool.write_text("#!/bin/sh\n")
    tool.chmod(0o755)
    env = {"PATH": f"{tools}{os.pathsep}{os.environ['PATH']}"}
    if cann:
        (root / "cann").mkdir(exist_ok=True)
        (root / "cann" / "ascend_toolkit_install.info").write_text(
            f"package_name=Ascend-cann-toolkit\nversion={cann}\n"
        )
        env["ASCEND_HOME_PATH"] = str(root / "cann")
    isolated(root)
    return env


def doctor(root: Path, device: str, env: dict[str, str]) -> tuple[int, dict]:
    done = run_isolated(root, "-m", "verl_qwen35.cli.doctor", f"device={device}", "--json", env=env)
    assert "Traceback" not in done.stderr, done.stderr
    return done.returncode, {c["name"].split(" (")[0]: c for c in json.loads(done.stdout)["components"]}


def failing(found: dict) -> dict[str, str]:
    return {name: c["note"] for name, c in found.items() if not c["ok"]}


def test_the_gpu_image_says_to_install_verl_which_it_uninstalls(tmp_path):
    env = image(tmp_path, STABLE_VLLM, "gpu")
    code, found = doctor(tmp_path, "gpu", env)
    assert code == 2 and list(failing(found)) == ["verl"], failing(found)
    assert "pip install --no-deps 'verl==0.9.1'" in found["verl"]["note"]
    assert found["megatron-core"]["ok"] and found["megatron-core"]["installed"] == "0.18.0"


def test_after_installing_verl_0_9_1_the_gpu_image_says_which_of_its_packages_verl_declares_too_old(tmp_path):
    env = image(tmp_path, STABLE_VLLM, "gpu")
    add_dist(tmp_path, "verl", "0.9.1", requires=VERL_091, module="verl")
    code, found = doctor(tmp_path, "gpu", env)
    assert code == 2 and set(failing(found)) == {"transformers", "TransferQueue"}, failing(found)
    # the transformers cap is what verl declares, not ours
    assert found["transformers"]["required"] == "!=5.6.0,<5.11,>=5.5.3"
    assert "verl 0.9.1 declares transformers" in found["transformers"]["note"]
    assert "pip install 'transformers!=5.6.0,<5.11,>=5.5.3'" in found["transformers"]["note"]
    assert "pip install 'TransferQueue>=0.1.10'" in found["TransferQueue"]["note"]


def test_the_ascend_9_1_0_image_runs_verl_main_and_lacks_only_megatron_bridge(tmp_path):
    env = image(tmp_path, ASCEND_910, "npu", cann="9.1.0")
    verl_standin(tmp_path, "0.10.0.dev0", VERL_MAIN_CONFIG)
    add_dist(tmp_path, "verl", "0.10.0.dev0", requires=VERL_MAIN)
    code, found = doctor(tmp_path, "npu", env)
    assert code == 2 and list(failing(found)) == ["Megatron-Bridge"], failing(found)
    assert "Megatron-Bridge.git@de93536e" in found["Megatron-Bridge"]["note"]
    assert found["verl"]["ok"] and found["verl"]["note"].startswith("newer than 0.9.x: judged by its own config files")


@pytest.mark.parametrize(("verl", "cann"), [("0.8.0", "9.0.0"), ("0.8.0.dev0", "8.5.1")])  # 9.0.0; the Qwen3.5 image
def test_the_ascend_images_with_verl_0_8_are_ready(tmp_path, verl, cann):
    env = image(tmp_path, ASCEND_900, "npu", cann=cann)
    add_dist(tmp_path, "verl", verl, requires=("transformers",), module="verl")
    code, found = doctor(tmp_path, "npu", env)
    assert code == 0 and failing(found) == {}, failing(found)
    assert "TransferQueue" not in found  # verl 0.8's TaskRunner does not import it


def test_the_mindspeed_bridge_stack_is_ready_and_a_mindspeed_of_another_core_is_named(tmp_path):
    """verl main's run_qwen3_5_35b_megatron.sh, USE_MINDSPEED_BRIDGE=True: Megatron-LM core_v0.18.0, MindSpeed
    core_r0.18.0, Megatron-Bridge v0.5.0. The 0.16 Megatron-Bridge commit is not asked for there."""
    bridge = ASCEND_910 | {"megatron-core": "0.18.0", "mindspeed": "0.18.0", "megatron-bridge": "0.5.0"}
    env = image(tmp_path, bridge, "npu", cann="9.1.0")
    verl_standin(tmp_path, "0.10.0.dev0", VERL_MAIN_CONFIG)
    add_dist(tmp_path, "verl", "0.10.0.dev0", requires=VERL_MAIN)
    code, found = doctor(tmp_path, "npu", env)
    assert code == 0 and failing(found) == {}, failing(found)
    assert found["Megatron-Bridge"]["required"] == ">=0.5,<0.6"
    shutil.rmtree(tmp_path / "mindspeed-0.18.0.dist-info")
    add_dist(tmp_path, "mindspeed", "0.16.0")
    code, found = doctor(tmp_path, "npu", env)
    assert code == 2 and list(failing(found)) == ["MindSpeed"], failing(found)
    assert "install mindspeed core_r0.18.0" in found["MindSpeed"]["note"]


@pytest.mark.parametrize("mcore", ["0.18.0", "0.19.0"])
def test_megatron_core_0_18_and_0_19_fit_on_gpu(tmp_path, mcore):
    env = image(
        tmp_path, STABLE_VLLM | {"megatron-core": mcore, "transformers": "5.9.0", "TransferQueue": "0.1.11"}, "gpu"
    )
    add_dist(tmp_path, "verl", "0.9.1", requires=VERL_091, module="verl")
    code, found = doctor(tmp_path, "gpu", env)
    assert code == 0 and found["megatron-core"]["installed"] == mcore, failing(found)
