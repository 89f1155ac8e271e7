"""A verl newer than the newest this release knows is judged on its own terms, as a user of verl main's images
(the Ascend 9.1.0 image installs verl main, 0.10.0.dev) would see it: a stand-in install of verl main (its real
trainer config files, tests/data/verl_main, and its package metadata) first on the path, the dry run in a
subprocess. Nothing is patched; the stand-in holds no code, and a fast dry run imports none."""

import pytest

from tests.standin import run_with, verl_standin
from verl_qwen35.installed import verl_config_dir


@pytest.fixture(scope="module")
def verl_main(tmp_path_factory):
    return verl_standin(tmp_path_factory.mktemp("verl_main"), "0.10.0.dev0")


@pytest.mark.parametrize(("model", "device"), [("122b", "gpu"), ("35b", "npu")])
def test_the_presets_compose_on_verl_mains_files_and_the_verdict_names_what_was_not_verified(verl_main, model, device):
    done = run_with(verl_main, "-m", "verl_qwen35", f"model={model}", f"device={device}", "dry_run=true")
    assert done.returncode == 0, done.stderr
    first = done.stdout.splitlines()[0]
    assert first.startswith("judged     for verl 0.10.0.dev0 (installed, newer than 0.9.x, its rules not verified")
    warned = [line for line in done.stderr.splitlines() if line.startswith("WARNING [verl_schema]")]
    assert len(warned) == 1 and "verl 0.10.0.dev0 is newer than 0.9.x" in warned[0], done.stderr
    assert "verl_schema=v0_9_0: its engine/megatron.yaml has grad_offload" in warned[0]
    # verl main's own keys (router_replay, grad_offload) are not judged by 0.9's field lists
    assert "ERROR" not in done.stderr, done.stderr
    assert "rules      verl 0.10.0.dev0 (installed; newer than 0.9.x: the rules of 0.9.x, not verified)" in done.stdout


def test_a_schema_verl_mains_files_do_not_fit_is_one_error_naming_verl_schema(verl_main):
    done = run_with(verl_main, "-m", "verl_qwen35", "model=35b", "device=gpu", "verl_schema=v0_9", "dry_run=true")
    assert done.returncode == 2, done.stdout + done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("ERROR")]
    assert len(errors) == 1 and errors[0].startswith("ERROR   [verl_schema] =v0_9 composes"), errors
    assert "0.10.0.dev0's files need verl_schema=v0_9_0" in errors[0] and "Traceback" not in done.stderr


def test_a_verl_older_than_0_8_is_refused_with_one_line_and_exit_2(tmp_path):
    old = verl_standin(tmp_path, "0.7.1", config=verl_config_dir())
    done = run_with(old, "-m", "verl_qwen35", "model=35b", "device=gpu", "dry_run=true")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "verl 0.7.1 is older than 0.8.0, the oldest verl_qwen35 works with" in done.stderr
