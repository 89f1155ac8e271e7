"""How a verl version is judged: a known release by its schema, a newer one by its own config files (with the
rules not verified for it), an older one refused. The config folders are real verl ones: the installed verl's
(no grad_offload since 0.9.1) and verl main 1dda039b's (tests/data/verl_main, grad_offload still there)."""

import pytest

from tests.standin import VERL_MAIN_CONFIG
from verl_qwen35.errors import UserError
from verl_qwen35.installed import verl_config_dir
from verl_qwen35.verl_release import grad_offload_in, standing

pytestmark = pytest.mark.each_verl  # one test reads the installed verl's files


@pytest.mark.parametrize(("found", "schema"), [("0.8.0", "v0_8"), ("0.9.0", "v0_9_0"), ("0.9.1", "v0_9")])
def test_a_known_release_takes_its_schema_and_is_verified(found, schema):
    judged = standing(found)
    assert (judged.schema, judged.newer, judged.unverified) == (schema, False, None)


def test_verl_main_is_judged_by_its_own_files_and_the_verdict_says_its_rules_were_not_verified():
    judged = standing("0.10.0.dev0", VERL_MAIN_CONFIG)
    assert judged.newer and judged.schema == "v0_9_0"  # verl main 1dda039b's engine/megatron.yaml has grad_offload
    assert judged.unverified.startswith("verl 0.10.0.dev0 is newer than 0.9.x, the newest this release knows")
    assert "its rules were not verified" in judged.unverified and "grad_offload" in judged.unverified


def test_a_newer_verl_without_grad_offload_takes_the_schema_without_it(tmp_path):
    (tmp_path / "engine").mkdir()
    text = (VERL_MAIN_CONFIG / "engine" / "megatron.yaml").read_text()
    kept = [line for line in text.splitlines(keepends=True) if not line.startswith("grad_offload:")]
    (tmp_path / "engine" / "megatron.yaml").write_text("".join(kept))
    assert grad_offload_in(VERL_MAIN_CONFIG) and not grad_offload_in(tmp_path)
    assert standing("1.2.0", tmp_path).schema == "v0_9"


def test_the_installed_verls_own_files_agree_with_its_known_schema():
    """The file test above reads is the one the schemas differ by: the installed verl's says so too."""
    from verl_qwen35.installed import installed_verl_version

    assert grad_offload_in(verl_config_dir()) == (standing(installed_verl_version()).schema != "v0_9")


def test_a_newer_verl_whose_megatron_config_is_missing_takes_the_newest_known_schema_and_says_so(tmp_path):
    judged = standing("0.11.0", tmp_path)
    assert judged.schema == "v0_9" and "could not be read" in judged.unverified


@pytest.mark.parametrize("found", ["0.7.1", "0.6.0"])
def test_a_verl_older_than_0_8_is_refused_naming_what_works(found):
    with pytest.raises(UserError, match=rf"verl {found} is older than 0.8.0.*pip install --no-deps 'verl==0.9.1'"):
        standing(found)


def test_a_version_that_is_not_pep_440_is_refused():
    with pytest.raises(UserError, match="not a PEP 440 version"):
        standing("main")
