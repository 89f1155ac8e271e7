"""The launch install holds what verl imports at run time; a config-only install is told apart from it.

tests/system/test_wheel.py builds a config-only venv and sees the refusal a user sees there; these
check the other side, in this (launch + test) environment.
"""

import importlib.util

import pytest

from verl_qwen35.errors import UserError
from verl_qwen35.installed import launch_install_command, missing_verl_runtime, schema_for, verl_config_dir
from verl_qwen35.run.machine import runtime_problems

# On every verl CI tests (-m each_verl): what the installed verl imports at run time.
pytestmark = pytest.mark.each_verl


def test_this_environment_has_verl_runtime_so_nothing_is_refused():
    assert missing_verl_runtime() == []
    assert runtime_problems("launch") == [] and runtime_problems("full") == []


def test_launch_extra_brings_what_verl_imports_at_run_time():
    """verl 0.9's TaskRunner.run imports transfer_queue (extra verl-core); the GPU presets load through mbridge
    into megatron-core."""
    main_ppo = (verl_config_dir().parent / "main_ppo.py").read_text()  # read, not imported
    needed = {"mbridge", "megatron"} | ({"transfer_queue"} if "import transfer_queue" in main_ppo else set())
    assert [m for m in sorted(needed) if importlib.util.find_spec(m) is None] == [], (
        "pyproject.toml's `launch` extra misses what verl imports at run time"
    )


def test_launch_command_installs_this_copy_with_the_launch_extra():
    command = launch_install_command()
    assert command.startswith("pip install ") and command.endswith("[launch]'")


@pytest.mark.parametrize(
    ("found", "schema"), [("0.8.0", "v0_8"), ("0.9.0", "v0_9_0"), ("0.9.1", "v0_9"), ("0.9.2.dev0", "v0_9")]
)
def test_the_schema_follows_the_exact_verl_release(found, schema):
    """verl 0.9.0's megatron config still has grad_offload (removed in 0.9.1): the minor version is not enough."""
    assert schema_for(found) == schema


def test_a_verl_older_than_the_oldest_known_is_refused_naming_it():
    with pytest.raises(UserError, match="verl 0.7.1 is older than 0.8.0"):
        schema_for("0.7.1")
