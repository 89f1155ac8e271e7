"""apply_env and job_environment, one behaviour a case, in-process (the Ray delivery is test_env_delivery).

Every variable a case may change is first cleared through monkeypatch (tests/environ.py), so it is
restored after the case whatever apply_env did to the driver's environment.
"""

import os

import pytest
from omegaconf import open_dict

from tests.environ import cleared
from verl_qwen35.compose import compose
from verl_qwen35.environment import apply_env, effective_env, job_environment


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


# Every word that marks a variable as secret, restated (environment.py SECRET_WORDS): alone after a
# prefix, in lower and camel case; and with a path word after it, not secret.
SECRET_WORDS = [
    *("KEY", "KEYS", "APIKEY", "TOKEN", "SECRET", "SECRETS", "PASSWORD", "PASSWORDS", "PASSWD", "PASS", "PAT"),
    *("PASSPHRASE", "CREDENTIAL", "CREDENTIALS", "CRED", "CREDS", "AUTH", "AUTHTOKEN", "PRIVATEKEY", "COOKIE"),
    *("AUTHORIZATION", "BEARER", "DSN"),
]


@pytest.mark.parametrize("word", SECRET_WORDS)
def test_each_secret_word_marks_a_variable_secret(word):
    from verl_qwen35.environment import looks_secret

    assert looks_secret(f"MY_{word}")
    assert looks_secret(f"my_{word.lower()}")
    assert looks_secret(f"my{word.capitalize()}")
    for path_word in ("PATH", "FILE", "FILES", "DIR", "DIRS", "DIRECTORY", "FOLDER"):
        assert not looks_secret(f"MY_{word}_{path_word}"), f"MY_{word}_{path_word} names where a secret is"
    assert not looks_secret(f"MY_{word}_MODE"), "a setting about a secret is not the secret"


@pytest.mark.parametrize(
    "name", ["MONKEY", "PASSAGE_COUNT", "TOKENIZERS_PARALLELISM", "MAX_TOKENS", "AUTHOR", "KEYBOARD", "RAY_AUTH_MODE"]
)
def test_words_that_only_contain_a_secret_word_are_not_secret(name):
    from verl_qwen35.environment import looks_secret

    assert not looks_secret(name)


@pytest.mark.parametrize(
    "name",
    ["HFTOKEN", "MYAPIKEY", "DBPASSWORD", "DBPASSWD", "GITSECRET", "SSHPASSPHRASE", "AWSCREDENTIAL", "AWSCREDENTIALS"],
)
def test_a_long_word_ending_in_a_secret_word_is_secret(name):
    from verl_qwen35.environment import looks_secret

    assert looks_secret(name)
