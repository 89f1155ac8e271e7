"""Secrets exported in the shell never reach a file or the screen: dry runs, sweeps, Hydra's own printing.

The launch (launch.yaml, Ray) half of this is in tests/system/test_forwarding.py
(test_the_launching_shell_wins_and_its_secrets_reach_the_run_but_no_file_or_output); refusals of secrets put on the
command line or in --config-dir files are rows of tests/integration/test_faults.py.
"""

from pathlib import Path

import pytest
from omegaconf import OmegaConf

from tests.runs import preflight
from verl_qwen35.config import compose
from verl_qwen35.config.secrets import credentials_in, redact, shell_secrets

SECRETS = {
    "WANDB_API_KEY": "wandb-7c1e0f9a2b3d4e5f",
    "HF_TOKEN": "hf_QwErTy0123456789",
    "my_db_password": "hunter2-xyz-long",
    "GITHUB_PAT": "ghp_abcdefghijklmnop",
    "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG",
    "OPENAI_APIKEY": "sk-proj-0011223344",
}


@pytest.fixture
def exported(monkeypatch):
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)


def leaks(tmp_path: Path, said: str) -> list[str]:
    """Every place a secret value shows up: printed, or inside any file under tmp_path."""
    found = [f"printed {name}" for name, value in SECRETS.items() if value in said]
    for path in (p for p in tmp_path.rglob("*") if p.is_file()):
        data = path.read_bytes()
        found += [f"{path}: {name}" for name, value in SECRETS.items() if value.encode() in data]
    return found


@pytest.mark.parametrize(
    "argv",
    [
        ["dry_run=true"],
        ["dry_run=true", "parallel.tp=3"],  # refused: the error path prints and writes too
        ["dry_run=true", "+env.set.HF_TOKEN_PATH=/secrets/hf"],  # a path to a secret is fine
        ["-m", "dry_run=true", "parallel.tp=1,2,3", "hydra.sweep.dir=sweep"],
        ["--cfg", "job", "--resolve"],
        ["--info", "config"],
    ],
    ids=["dry-run", "refused", "token-path", "sweep", "cfg-job", "info"],
)
def test_no_secret_from_the_shell_is_written_or_printed(cli, exported, tmp_path, argv):
    # Hydra's command line takes the overrides as one run: after the flag that starts a sweep, before the others.
    preset = ["device=npu", "model=122b"]
    result = cli(*(["-m", *preset, *argv[1:]] if argv[0] == "-m" else [*preset, *argv]))
    assert result.code in (0, 2), result.said
    assert leaks(tmp_path, result.said) == []
    if argv[0] == "-m":
        assert (tmp_path / "sweep" / "summary.json").is_file() and (tmp_path / "sweep" / "2" / "verdict.json").is_file()


@pytest.mark.parametrize(
    ("override", "named"),
    [
        ("trainer.experiment_name=hf_QwErTy0123456789", "HF_TOKEN"),  # pasted value under an innocent key
        ("+env.set.LOGIN=${oc.env:GITHUB_PAT}", "GITHUB_PAT"),  # read from the shell at resolve time
        ("+trainer.extra={wandb:{api_key:abc}}", "trainer.extra.wandb.api_key"),
    ],
)
def test_a_secret_smuggled_past_the_name_check_is_refused_before_writing(cli, exported, tmp_path, override, named):
    result = cli("device=gpu", "model=35b", "dry_run=true", override)
    assert result.code == 2 and named in result.err
    assert not (tmp_path / "outputs").exists() and leaks(tmp_path, result.said) == []


def test_a_secret_that_reaches_the_composed_config_is_a_preflight_error(exported):
    """Values from --config-dir files or interpolations are scanned again after composition."""
    cfg = compose(["device=gpu", "model=35b"])
    OmegaConf.update(cfg, "ray_kwargs.ray_init.runtime_env.env_vars", {"HF_TOKEN": "abc"}, force_add=True)
    OmegaConf.update(cfg, "trainer.project_name", SECRETS["WANDB_API_KEY"], force_add=True)
    keys = {k for p in preflight(cfg, machine_missing="warning") if p.level == "error" for k in p.keys}
    assert {"ray_kwargs.ray_init.runtime_env.env_vars.HF_TOKEN", "trainer.project_name"} <= keys


def test_redact_masks_shell_secret_values_only(exported):
    line = f"a {SECRETS['HF_TOKEN']} b /root/data c"
    assert redact(line) == "a <HF_TOKEN redacted> b /root/data c"


def test_a_plain_word_in_a_secret_looking_variable_is_not_hunted(cli, monkeypatch):
    """RAY_AUTH_MODE=disabled is a setting; `disabled` appears in verl's config and must not be refused."""
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")
    monkeypatch.setenv("SOME_TOKEN", "enabled")
    result = cli("device=gpu", "model=35b", "dry_run=true")
    assert result.code == 0, result.said


@pytest.mark.parametrize(
    "value",
    [
        "https://ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8@github.com/org/repo.git",  # a token as URL user name
        "https://AbCdEf1234567890GhIjKl@git.example.com/x",  # one without a vendor prefix
        "http://alice:pr0xy@proxy.example:3128",  # user:password
        "hf_QwErTyUiOpAsDfGhJkLzXcVbNm12345678",
        "Bearer sk-proj-abcdefghijklmnopqrstuvwx",
        "AKIAIOSFODNN7EXAMPLE",
        "https://collector.example/v1?project=a&access_token=abcdef0123456789",  # a secret query parameter
    ],
)
def test_a_credential_is_recognised_whatever_its_key(value):
    assert credentials_in(value)
    assert "<redacted>" in redact(value, environ={})


@pytest.mark.parametrize(
    "value",
    [
        "http://proxy.example:3128",
        "ssh://git@github.com/org/repo.git",
        "https://service-account-2024@host/x",
        "hf_model",
        "/data/task-0123456789abcdefghijklmn/train.parquet",
        "${oc.env:HOME}/data/geo3k/train.parquet",
        "Qwen/Qwen3.5-35B-A3B",
        "https://collector.example/v1?page=2&token_type=bearer",  # a setting about a token, not one
    ],
)
def test_a_plain_value_is_not_taken_for_a_credential(value):
    assert credentials_in(value) is None
    assert redact(value, environ={}) == value


def test_a_shell_variable_holding_credentials_is_a_secret_whatever_its_name():
    environ = {
        "HTTPS_PROXY": "http://alice:pr0xy@proxy:3128",
        "http_proxy": "http://proxy:3128",
        "MODE": "x",
        "COLLECTOR_ENDPOINT": "https://collector.example/v1?access_token=abcdef0123456789",
    }
    assert shell_secrets(environ) == {k: environ[k] for k in ("HTTPS_PROXY", "COLLECTOR_ENDPOINT")}


# Shapes that made a pattern rescan the rest of the value from every position (quadratic: 30 KB took 24 s).
LONG_SHAPES = {
    "letters": "a",
    "assignments": "a=",
    "vendor prefixes": "sk-",
    "url schemes": "a://b:",
    "query": "?a=b&",
    "backslashes": "\\",
    "lines": "x\n",
}


def test_a_long_value_is_scanned_in_linear_time():
    """A 64 KB value of each shape scanned (findings, redaction) within a bound with wide slack for a loaded CI
    machine (~0.01 s each alone); a quadratic pattern took 6 s at 10 KB, so minutes here."""
    import time

    from verl_qwen35.config.secrets import findings, redact_config_text

    for name, unit in LONG_SHAPES.items():
        value = unit * (2**16 // len(unit))
        start = time.perf_counter()
        list(findings("trainer.experiment_name", value, {}))
        redact_config_text(value, environ={})
        assert time.perf_counter() - start < 5, f"{name}: the secret scan is not linear in the value's length"
