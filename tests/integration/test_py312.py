"""The Python 3.12 leg (scripts/test312.sh): this package on 3.12 with the newest megatron-core that installs
there (0.17+ need 3.12; verl main's images are 3.12), without torch: every preset composes and dry-runs, and
the rules name the megatron-core they followed (its shipped field list, read from the wheel's source)."""

import sys
from importlib.metadata import version

import pytest

from verl_qwen35.config.choices import presets

pytestmark = [
    pytest.mark.py312,
    pytest.mark.skipif(sys.version_info < (3, 12), reason="the Python 3.12 leg: bash scripts/test312.sh"),
]


@pytest.mark.parametrize(("model", "device"), presets(), ids=lambda v: str(v))
def test_every_preset_composes_and_passes_a_dry_run_on_python_3_12(cli, model, device):
    checked = cli(f"model={model}", f"device={device}", "dry_run=true")
    assert checked.code == 0 and "verdict    OK" in checked.out, checked.said
    release = ".".join(version("megatron-core").split(".")[:2])
    assert f"megatron-core {release} (installed; " in checked.out  # the rules line names the release they followed
