"""The data command skips what is there and fails clearly offline (no hub access at test time)."""

import subprocess
import sys

from verl_qwen35.cli.data import FILES, fetch


def test_existing_files_are_kept_without_touching_the_network(tmp_path, capsys):
    for name in FILES:
        (tmp_path / name).write_bytes(b"PAR1")
    assert fetch(tmp_path) == [tmp_path / name for name in FILES]
    assert capsys.readouterr().out.count("skip") == 2


def test_offline_fails_with_a_clear_message_and_exit_2(tmp_path):
    run = subprocess.run(
        [sys.executable, "-m", "verl_qwen35", "data", "--out", str(tmp_path / "geo3k")],
        capture_output=True,
        text=True,
        env={"HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin"},
    )
    assert run.returncode == 2
    assert "could not fetch tyzhu/geo3k/train.parquet" in run.stderr and "HF_HUB_OFFLINE" in run.stderr
    assert not (tmp_path / "geo3k" / "train.parquet").exists()
