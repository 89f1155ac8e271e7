"""Values verl rewrites at start-up are judged as verl runs them: `trainer.device` follows the machine.

The twin runs verl's own `auto_set_device` (verl/utils/device.py) on the same config. Its platform is a
device stub where this CPU host has none to detect: verl 0.9.1's public `set_platform` with verl's own CUDA
and NPU platform classes; verl 0.8.0 only detects Ascend (torch_npu), so on a GPU machine it runs as here.
"""

from importlib.metadata import version

import pytest
from omegaconf import OmegaConf
from packaging.version import Version

from verl_qwen35.checks.rewrites import DEVICE_NAMES, startup_rewrites
from verl_qwen35.config import compose

pytestmark = pytest.mark.each_verl
CASES = [(machine, typed) for machine in ("gpu", "npu") for typed in ("cuda", "npu", "cpu")]


def _as_verl_sets_it(machine: str, typed: str) -> str | None:
    """What verl's auto_set_device leaves in trainer.device on `machine`; None where it cannot be run here."""
    from verl.utils.device import auto_set_device

    cfg = OmegaConf.create({"trainer": {"device": typed}})
    if Version(version("verl")).release >= (0, 9):
        from verl.plugin.platform import get_platform, set_platform
        from verl.plugin.platform.platform_cuda import PlatformCUDA
        from verl.plugin.platform.platform_npu import PlatformNPU

        before = get_platform()
        set_platform(PlatformNPU() if machine == "npu" else PlatformCUDA())
        try:
            auto_set_device(cfg)
        finally:
            set_platform(before)
    elif machine == "gpu":
        auto_set_device(cfg)  # 0.8.x looks for torch_npu only; this host has none, as a GPU host
    else:
        return None
    return cfg.trainer.device


@pytest.mark.parametrize(("machine", "typed"), CASES)
def test_trainer_device_is_judged_as_verl_sets_it(machine, typed):
    cfg = compose([f"device={machine}", "model=35b", f"trainer.device={typed}"])
    notes, errors = startup_rewrites(cfg)
    verl_sets = _as_verl_sets_it(machine, typed)
    if verl_sets is None:
        pytest.skip("verl 0.8's auto_set_device detects Ascend through torch_npu, which this host lacks")
    if verl_sets == DEVICE_NAMES[machine]:
        assert not errors
        assert bool(notes) == (typed != verl_sets), notes
        assert all(f"sets {verl_sets}" in n for n in notes)
    else:
        assert [e.keys for e in errors] == [("trainer.device",)], (verl_sets, errors)


def test_a_device_name_verl_corrects_is_not_refused(cli):
    run = cli("device=npu", "model=35b", "trainer.device=cuda", "dry_run=true")
    assert run.code == 0, run.said
    assert "auto_set_device sets npu" in run.out and "device     npu" in run.out


def test_a_gpu_stack_on_an_npu_machine_is_refused_with_the_choices(cli):
    run = cli("model=35b", "device=gpu", "hardware=a3", "dry_run=true")
    assert run.code == 2 and "hardware=a3 is an NPU machine" in run.said and "pass device=npu" in run.said
