"""The command line is read by Hydra's own argparse parser and override grammar, once, before Hydra runs."""

import shlex

import pytest

from verl_qwen35.cmdline import parse_command_line
from verl_qwen35.errors import UserError


def test_flags_values_and_overrides_are_told_apart_wherever_they_stand():
    line = parse_command_line(shlex.split("model=122b -m --cfg job --resolve -p parallel -cd mine device=npu --info"))
    assert [o.input_line for o in line.overrides] == ["model=122b", "device=npu"]
    assert line.multirun and line.config_dirs[0].name == "mine"
    assert line.flags == [
        "--cfg=job",
        "--resolve",
        "--package=parallel",
        "--multirun",
        "--config-dir=mine",
        "--info=all",
    ]
    assert line.argv() == [*line.flags, "model=122b", "device=npu"]


def test_bare_info_before_an_override_shows_everything():
    line = parse_command_line(["--info", "device=npu"])
    assert line.args.info == "all" and [o.input_line for o in line.overrides] == ["device=npu"]
    assert parse_command_line(["--info", "defaults", "device=npu"]).args.info == "defaults"


def test_an_override_hydra_cannot_parse_is_named():
    with pytest.raises(UserError, match=r"`parallel.tp=\[1,2`"):
        parse_command_line(["model=122b", "parallel.tp=[1,2"])


def test_sweep_values_are_parsed_as_hydra_does():
    (override,) = parse_command_line(["parallel.tp=1,2,4"]).overrides
    assert override.is_sweep_override() and list(override.sweep_iterator()) == [1, 2, 4]
