"""Hydra's own flags pass through the entrypoint untouched; only overrides are checked and filled in."""

import shlex

from verl_qwen35.__main__ import _split_argv

FLAGS = "-m --cfg job --resolve -p parallel --config-dir mine -cd=also --info defaults"


def test_flags_values_and_overrides_are_told_apart():
    argv = shlex.split(f"{FLAGS} model=122b --info device=npu parallel.tp=2")
    flags, overrides, dirs = _split_argv(argv)
    assert flags == [*shlex.split(FLAGS), "--info"]
    assert overrides == ["model=122b", "device=npu", "parallel.tp=2"]
    assert dirs == ["mine", "also"]
