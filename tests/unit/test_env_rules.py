"""apply_env and job_environment, one behaviour a case, in-process (the Ray delivery is test_env_delivery).

Every variable a case may change is first cleared through monkeypatch (tests/environ.py), so it is
restored after the case whatever apply_env did to the driver's environment.
"""

import os
import re

import pytest
from omegaconf import open_dict

from tests.environ import cleared
from tests.runs import preflight
from verl_qwen35.config import compose
from verl_qwen35.errors import UserError
from verl_qwen35.run.environment import apply_env, effective_env, job_environment


@pytest.fixture
def npu(monkeypatch):
    """The NPU job config, from a shell that sets none of its variables."""
    cfg = compose(["model=35b", "device=npu"])
    cleared(monkeypatch, [*cfg.env.set, *cfg.env.unset, "SET_BY_THE_JOB"])
    return cfg


def test_apply_env_returns_what_it_set_in_the_driver_and_the_runtime_env(npu, monkeypatch):
    monkeypatch.setenv("https_proxy", "http://corp:3128")
    monkeypatch.setenv("OMP_NUM_THREADS", "4")
    expected = effective_env(npu, dict(os.environ))
    assert apply_env(npu) == expected
    assert expected["OMP_NUM_THREADS"] == "4" and expected["HCCL_BUFFSIZE"] == "300" and expected["https_proxy"] == ""
    assert {k: os.environ.get(k) for k in npu.env.set} == {k: expected[k] for k in npu.env.set}
    assert not any(name in os.environ for name in npu.env.unset)
    assert dict(npu.ray_kwargs.ray_init.runtime_env.env_vars) == expected


def test_apply_env_keeps_other_runtime_env_variables_and_overrides_its_own(npu):
    with open_dict(npu):
        npu.ray_kwargs.ray_init.runtime_env.env_vars = {"NCCL_DEBUG": "INFO", "OMP_NUM_THREADS": "8"}
    apply_env(npu)
    workers = npu.ray_kwargs.ray_init.runtime_env.env_vars
    assert workers["NCCL_DEBUG"] == "INFO", "a runtime_env variable set by the user was dropped"
    assert workers["OMP_NUM_THREADS"] == "1" and workers["HCCL_BUFFSIZE"] == "300"


def test_apply_env_fills_a_runtime_env_without_env_vars(npu):
    with open_dict(npu):
        npu.ray_kwargs.ray_init.runtime_env.env_vars = None
    apply_env(npu)
    assert npu.ray_kwargs.ray_init.runtime_env.env_vars["HCCL_BUFFSIZE"] == "300"


def test_job_environment_applies_then_restores_the_driver_environment(npu, monkeypatch):
    monkeypatch.setenv("http_proxy", "http://corp:3128")
    before = dict(os.environ)
    with job_environment(npu) as values:
        assert values == effective_env(npu, before)
        assert os.environ["HCCL_BUFFSIZE"] == "300" and "http_proxy" not in os.environ
        os.environ["SET_BY_THE_JOB"] = "1"  # whatever the job itself exports goes too
    assert dict(os.environ) == before, "the next job of a sweep would inherit this job's environment"


def test_job_environment_restores_the_driver_environment_when_the_launch_raises(npu, monkeypatch):
    monkeypatch.setenv("http_proxy", "http://corp:3128")
    before = dict(os.environ)
    with pytest.raises(RuntimeError, match="launch failed"), job_environment(npu):
        raise RuntimeError("launch failed")
    assert dict(os.environ) == before


# Every word that marks a variable as secret, restated (config/secrets.py SECRET_WORDS): alone after a
# prefix, in lower and camel case; and with a path word after it, not secret.
SECRET_WORDS = [
    *("KEY", "KEYS", "APIKEY", "TOKEN", "SECRET", "SECRETS", "PASSWORD", "PASSWORDS", "PASSWD", "PASS", "PAT"),
    *("PASSPHRASE", "CREDENTIAL", "CREDENTIALS", "CRED", "CREDS", "AUTH", "AUTHTOKEN", "PRIVATEKEY", "COOKIE"),
    *("AUTHORIZATION", "BEARER", "DSN"),
]


@pytest.mark.parametrize("word", SECRET_WORDS)
def test_each_secret_word_marks_a_variable_secret(word):
    from verl_qwen35.config.secrets import looks_secret

    assert looks_secret(f"MY_{word}")
    assert looks_secret(f"my_{word.lower()}")
    assert looks_secret(f"my{word.capitalize()}")
    for path_word in ("PATH", "FILE", "FILES", "DIR", "DIRS", "DIRECTORY", "FOLDER"):
        assert not looks_secret(f"MY_{word}_{path_word}"), f"MY_{word}_{path_word} names where a secret is"
    assert not looks_secret(f"MY_{word}_MODE"), "a setting about a secret is not the secret"


# config/secrets.py SETTING_WORDS, restated: a last word that makes the name a setting about a secret.
@pytest.mark.parametrize(
    "word", ["MODE", "TYPE", "METHOD", "ENABLE", "ENABLED", "DISABLE", "DISABLED", "SOCK", "TIMEOUT"]
)
def test_each_setting_word_makes_a_secret_named_variable_a_setting(word):
    from verl_qwen35.config.secrets import looks_secret

    assert not looks_secret(f"RAY_AUTH_{word}") and not looks_secret(f"MY_TOKEN_{word.lower()}")
    assert looks_secret(f"RAY_AUTH_{word}_TOKEN"), "only the last word decides"


@pytest.mark.parametrize(
    "name", ["MONKEY", "PASSAGE_COUNT", "TOKENIZERS_PARALLELISM", "MAX_TOKENS", "AUTHOR", "KEYBOARD", "RAY_AUTH_MODE"]
)
def test_words_that_only_contain_a_secret_word_are_not_secret(name):
    from verl_qwen35.config.secrets import looks_secret

    assert not looks_secret(name)


@pytest.mark.parametrize(
    "name",
    ["HFTOKEN", "MYAPIKEY", "DBPASSWORD", "DBPASSWD", "GITSECRET", "SSHPASSPHRASE", "AWSCREDENTIAL", "AWSCREDENTIALS"],
)
def test_a_long_word_ending_in_a_secret_word_is_secret(name):
    from verl_qwen35.config.secrets import looks_secret

    assert looks_secret(name)


def test_job_environment_takes_the_shell_value_by_default_and_the_config_value_when_told(npu, monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "7")
    with job_environment(npu) as values:
        assert values["OMP_NUM_THREADS"] == "7"
    with job_environment(npu, use_shell_env=False) as values:
        assert values["OMP_NUM_THREADS"] == "1"


def test_a_long_word_ending_in_a_secret_word_counts_from_seven_letters():
    from verl_qwen35.config.secrets import looks_secret

    assert looks_secret("HFTOKEN") and not looks_secret("XTOKEN"), "6 letters: a word of its own, 7: a name + TOKEN"


def test_a_shell_secret_value_counts_from_ten_characters():
    from verl_qwen35.config.secrets import shell_secrets

    ten, nine = "abcd-12345", "abcd-1234"
    assert shell_secrets({"MY_TOKEN": ten, "HF_TOKEN": nine}) == {"MY_TOKEN": ten}


def test_an_env_of_names_and_texts_composes_a_number_as_text():
    cfg = compose(["model=35b", "+env.set.A=1", "env.unset=[b]"])
    assert cfg.env.set.A == "1" and list(cfg.env.unset) == ["b"]
    assert [p for p in preflight(cfg, machine_missing="warning") if any(k.startswith("env") for k in p.keys)] == []


# The schema types env.set as NAME: text and env.unset as a list of names (config/schema.py Env).
@pytest.mark.parametrize(
    ("override", "key"),
    [
        ("env=[1]", "env"),
        ("env.set=x", "env.set"),
        ("+env.set.A=null", "env.set.A"),
        ("+env.set.A={b:1}", "env.set.A"),
        ("env.unset=http_proxy", "env.unset"),
        ("env.unset=[null]", "env.unset[0]"),
    ],
)
def test_each_malformed_part_of_env_is_refused_while_composing_naming_its_key(override, key):
    with pytest.raises(UserError, match=rf"^Error merging override {re.escape(override)} {re.escape(key)}: "):
        compose(["model=35b", override])


def test_a_list_inside_env_unset_is_refused_naming_its_element():
    """Hydra merges `[[a]]` into list[str] unchecked (OmegaConf checks list elements on assignment only)."""
    with pytest.raises(UserError, match=r"^env\.unset\[0\]: Cannot convert 'list' to string"):
        compose(["model=35b", "env.unset=[[a]]"])


def test_an_env_removed_is_refused_before_anything_is_written():
    with pytest.raises(UserError, match=r"^env=null: removes the whole env section .*\(env\.KEY=VALUE\)$"):
        compose(["model=35b", "env=null"])


def test_an_env_replaced_by_a_value_is_refused_by_the_preflight_naming_env():
    cfg = compose(["model=35b", "env=x"])
    assert [(p.level, p.keys, p.message) for p in preflight(cfg, machine_missing="warning")] == [
        (
            "error",
            ("env",),
            "env='x': a section of keys that the checks and verl read; set keys inside it (env.KEY=VALUE) "
            "instead of replacing it",
        )
    ]


@pytest.mark.parametrize("env", [None, "x", {"set": "x"}, {"set": None}])
def test_env_names_of_a_malformed_env_are_none(env):
    from omegaconf import OmegaConf

    from verl_qwen35.run.environment import env_names

    assert env_names(OmegaConf.create({"env": env})) == []
    assert env_names(OmegaConf.create({"env": {"set": {"A": 1, "B": "x"}}})) == ["A", "B"]
