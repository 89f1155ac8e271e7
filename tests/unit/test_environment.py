"""Device environment: shell values win, proxies are cleared everywhere, no secrets in the config."""

import os

import pytest

from tests.environ import cleared
from verl_qwen35.config import compose
from verl_qwen35.config.secrets import looks_secret
from verl_qwen35.errors import UserError
from verl_qwen35.run.environment import apply_env, effective_env, from_shell

PROXIES = ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY")


def test_each_device_carries_its_own_variables_and_clears_proxies():
    gpu = effective_env(compose(["device=gpu"]), environ={})
    npu = effective_env(compose(["device=npu"]), environ={})
    assert gpu["CUDA_DEVICE_MAX_CONNECTIONS"] == npu["CUDA_DEVICE_MAX_CONNECTIONS"] == "1"
    assert npu["HCCL_CONNECT_TIMEOUT"] == "5400" and "HCCL_CONNECT_TIMEOUT" not in gpu
    for env in (gpu, npu):
        assert all(env[p] == "" for p in PROXIES)


def test_a_value_in_the_users_environment_wins():
    cfg = compose(["device=npu"])
    env = effective_env(cfg, environ={"OMP_NUM_THREADS": "8", "http_proxy": "http://corp:3128"})
    assert env["OMP_NUM_THREADS"] == "8"
    assert env["http_proxy"] == ""
    assert from_shell(cfg, environ={"OMP_NUM_THREADS": "8", "HCCL_BUFFSIZE": "300"}) == {"OMP_NUM_THREADS": "8"}


def test_apply_sets_driver_and_runtime_env(monkeypatch):
    cfg = compose(["device=npu"])
    cleared(monkeypatch, [*cfg.env.set, *cfg.env.unset])  # apply_env sets them; restored after the test
    monkeypatch.setenv("https_proxy", "http://corp:3128")
    monkeypatch.setenv("TASK_QUEUE_ENABLE", "2")
    apply_env(cfg)
    assert "https_proxy" not in os.environ
    assert os.environ["HCCL_BUFFSIZE"] == "300" and os.environ["TASK_QUEUE_ENABLE"] == "2"
    workers = cfg.ray_kwargs.ray_init.runtime_env.env_vars
    assert workers["TASK_QUEUE_ENABLE"] == "2" and workers["https_proxy"] == ""


def test_shell_secrets_never_enter_the_config(monkeypatch):
    monkeypatch.setenv("WANDB_API_KEY", "sekrit")
    monkeypatch.setenv("HF_TOKEN", "sekrit")
    cfg = compose(["device=npu"])
    cleared(monkeypatch, [*cfg.env.set, *cfg.env.unset])
    apply_env(cfg)
    assert "sekrit" not in str(cfg)


def test_a_secret_named_in_env_is_refused_before_composing():
    with pytest.raises(UserError, match="env.set.WANDB_API_KEY: WANDB_API_KEY looks like a secret"):
        compose(["device=gpu", "+env.set.WANDB_API_KEY=abc"])


@pytest.mark.parametrize(
    "name",
    [
        "WANDB_API_KEY",
        "HF_TOKEN",
        "APIKEY",
        "api_key",
        "Token",
        "MY_SECRET",
        "DB_PASSWORD",
        "PGPASSWD",
        "FTP_PASS",
        "GITHUB_PAT",
        "PRIVATE_KEY",
        "SSH_PASSPHRASE",
        "AWS_CREDENTIAL",
        "BASIC_AUTH",
        "wandbApiKey",
        "HFTOKEN",
        "Authorization",
        "SENTRY_DSN",
    ],
)
def test_secret_spellings_in_any_case(name):
    assert looks_secret(name) and looks_secret(name.lower()) and looks_secret(name.upper())


@pytest.mark.parametrize(
    "name",
    [
        "HF_TOKEN_PATH",
        "SSH_KEY_FILE",
        "CREDENTIALS_DIR",
        "TOKENIZERS_PARALLELISM",
        "PATH",
        "PWD",
        "HOME",
        "CUDA_DEVICE_MAX_CONNECTIONS",
        "PYTORCH_NPU_ALLOC_CONF",
        "HCCL_BUFFSIZE",
        "PASSTHROUGH_MODE",
        "RAY_AUTH_MODE",
        "SSH_AUTH_SOCK",
        "VLLM_MAX_TOKENS",
        "PATCH_LEVEL",
    ],
)
def test_paths_files_and_ordinary_names_pass(name):
    assert not looks_secret(name)


def test_every_shipped_variable_passes(combo):
    cfg = compose([f"model={combo[0]}", f"device={combo[1]}"])
    assert not [name for name in cfg.env.set if looks_secret(name)]
