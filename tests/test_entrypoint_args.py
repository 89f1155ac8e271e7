"""Hydra's own flags pass through the entrypoint untouched; only overrides are checked and filled in."""

from verl_qwen35.__main__ import _split_argv


def test_flags_values_and_overrides_are_told_apart():
    flags, overrides, dirs = _split_argv(
        [
            "-m",
            "--cfg",
            "job",
            "--resolve",
            "-p",
            "parallel",
            "--config-dir",
            "mine",
            "-cd=also",
            "model=122b",
            "--info",
            "defaults",
            "device=npu",
            "--info",
            "parallel.tp=2",
        ]
    )
    assert flags == [
        "-m",
        "--cfg",
        "job",
        "--resolve",
        "-p",
        "parallel",
        "--config-dir",
        "mine",
        "-cd=also",
        "--info",
        "defaults",
        "--info",
    ]
    assert overrides == ["model=122b", "device=npu", "parallel.tp=2"]
    assert dirs == ["mine", "also"]
