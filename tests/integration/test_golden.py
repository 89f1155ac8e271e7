"""The committed golden configs equal what the code composes; a hand edit is caught."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from verl_qwen35.installed import installed_verl_schema

# On every verl CI tests (-m each_verl): the goldens of the installed verl's schema.
pytestmark = pytest.mark.each_verl

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "golden.py"


def check(golden_dir: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(SCRIPT), "--check", "--dir", str(golden_dir)], capture_output=True, text=True
    )


def test_committed_goldens_are_current():
    run = check(ROOT / "golden")
    assert run.returncode == 0, f"regenerate with: python scripts/golden.py\n{run.stdout}{run.stderr}"


def test_a_hand_edited_golden_fails(tmp_path):
    shutil.copytree(ROOT / "golden", tmp_path / "golden")
    edited = tmp_path / "golden" / installed_verl_schema() / "122b_npu.yaml"
    edited.write_text(edited.read_text().replace("gpu_memory_utilization: 0.6", "gpu_memory_utilization: 0.7", 1))
    run = check(tmp_path / "golden")
    assert run.returncode == 1
    assert "122b_npu.yaml" in run.stdout and "35b_gpu" not in run.stdout
