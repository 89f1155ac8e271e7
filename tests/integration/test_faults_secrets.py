"""Fault table, secrets and loaders (issue 21 items 2 and 3): each row is a file or a command line a
user (or an attacker who can write one of their files) hands the command. Every row must end in exit 2
with one message naming the file or key, no traceback, no secret value printed or anywhere on disk
outside the files handed in, and nothing half-written (no run or sweep directory where the refusal
comes before writing; every file written parses whole where it comes after).

Rows run the real entrypoint in-process (`cli`, tests/conftest.py); rows that could hang (alias
bombs), need bytes that are not UTF-8 in argv, or a file size limit run it as a subprocess.
"""

import json
import os
import resource
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from verl_qwen35.installed import conf_dir

BASE = ("device=gpu", "model=35b", "dry_run=true")
GITHUB_TOKEN = "ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"  # GitHub's classic format: ghp_ + 36
HF_TOKEN = "hf_QwErTyUiOpAsDfGhJkLzXcVbNm12345678"
PASSWORD = "hunter2-very-secret"
PROXY_PASSWORD = "pr0xyPassw0rd"
SECRETS = (GITHUB_TOKEN, HF_TOKEN, PASSWORD, PROXY_PASSWORD)
# The shell of every row: a secret-named variable, a token under a plain name, a proxy with a password.
SHELL = {
    "GITHUB_PAT": GITHUB_TOKEN,
    "MY_SETTING": HF_TOKEN,
    "HTTPS_PROXY": f"http://alice:{PROXY_PASSWORD}@proxy.example:3128",
}
GIVEN = "given"  # everything a row hands in lives here; everything else under tmp_path is the command's


def _bomb(levels: int = 9) -> str:
    """A "billion laughs" YAML file: 10**levels nodes once its aliases are expanded."""
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


def _preset(name: str) -> str:
    return (conf_dir() / name).read_text()


# (id, files under given/ (path -> text or bytes), argv ({given} is the directory), what the message names,
# "before": refused before Hydra writes anything, so no directory but given/ may exist afterwards)
CASES = [
    # secrets in files Hydra composes: any group, any defaults depth, a swept choice, any search path entry
    (
        "extra-group-run",
        {"conf/extra/creds.yaml": f"password: {PASSWORD}\n"},
        [*BASE, "+extra=creds", "--config-dir", "{given}/conf"],
        ["creds.yaml", "extra.password"],
        True,
    ),
    (
        "extra-group-sweep",
        {"conf/extra/creds.yaml": f"password: {PASSWORD}\n"},
        ["-m", *BASE, "+extra=creds", "parallel.tp=1,2", "hydra.sweep.dir=sweep", "--config-dir", "{given}/conf"],
        ["creds.yaml"],
        True,
    ),
    (
        "swept-group-choice",
        {"conf/extra/plain.yaml": "note: hello\n", "conf/extra/creds.yaml": f"db:\n  password: {PASSWORD}\n"},
        ["-m", *BASE, "+extra=plain,creds", "hydra.sweep.dir=sweep", "--config-dir", "{given}/conf"],
        ["creds.yaml", "extra.db.password"],
        True,
    ),
    (
        "preset-defaults-two-deep",
        {
            "conf/model/mine.yaml": "defaults:\n  - /extra: deep\n  - _self_\n" + _preset("model/35b.yaml"),
            "conf/parallel/mine_gpu.yaml": _preset("parallel/35b_gpu.yaml"),
            "conf/extra/deep.yaml": "defaults:\n  - sub/leaf@leaf\nname: deep\n",
            "conf/extra/sub/leaf.yaml": f"# @package _global_\nenv:\n  set:\n    HF_TOKEN: {HF_TOKEN}\n",
        },
        ["device=gpu", "model=mine", "dry_run=true", "--config-dir", "{given}/conf"],
        ["leaf.yaml", "env.set.HF_TOKEN"],
        True,
    ),
    (
        "searchpath-entry",
        {"other/extra/creds.yaml": f"api_key: {PASSWORD}\n"},
        [*BASE, "+extra=creds", "hydra.searchpath=[file://{given}/other]"],
        ["creds.yaml", "extra.api_key"],
        True,
    ),
    (
        "computed-env-read-printed",
        {"conf/extra/sneaky.yaml": "which: GITHUB_PAT\nnote: ${oc.env:${extra.which}}\n"},
        ["device=gpu", "model=35b", "+extra=sneaky", "--config-dir", "{given}/conf", "--cfg", "job", "--resolve"],
        ["sneaky.yaml", "extra.note"],
        True,
    ),
    (
        "url-token-user-file",
        {"conf/extra/repo.yaml": f"url: https://{GITHUB_TOKEN}@github.com/org/reward.git\n"},
        [*BASE, "+extra=repo", "--config-dir", "{given}/conf"],
        ["repo.yaml", "extra.url", "user name is a token"],
        True,
    ),
    # secrets on the command line that no variable name gives away
    (
        "url-token-user-override",
        {},
        [*BASE, f"trainer.project_name=https://{GITHUB_TOKEN}@github.com/org/x"],
        ["trainer.project_name", "token"],
        True,
    ),
    ("vendor-token-value", {}, [*BASE, f"+trainer.note={HF_TOKEN}"], ["trainer.note"], True),
    # read from the shell at resolve time: refused by the preflight, the verdict keeps the override as typed
    (
        "env-read-of-token-run",
        {},
        [*BASE, "+trainer.note=${oc.env:MY_SETTING}", "hydra.run.dir=run"],
        ["trainer.note"],
        False,
    ),
    (
        "env-read-of-token-sweep",
        {},
        ["-m", *BASE, "+trainer.note=${oc.env:MY_SETTING}", "parallel.tp=1,2", "hydra.sweep.dir=sweep"],
        ["trainer.note"],
        False,
    ),
    # files beyond the loader's limits, anywhere the package reads one
    ("bomb-other-group", {"conf/extra/lol.yaml": _bomb()}, [*BASE, "--config-dir", "{given}/conf"], ["lol.yaml"], True),
    (
        "bomb-searchpath-entry",
        {"other/extra/lol.yaml": _bomb()},
        [*BASE, "+extra=lol", "hydra.searchpath=[file://{given}/other]"],
        ["lol.yaml", "alias"],
        True,
    ),
    (
        "bomb-presets-listing",
        {"conf/parallel/lol.yaml": _bomb()},
        ["presets", "--config-dir", "{given}/conf"],
        ["lol.yaml", "alias"],
        True,
    ),
    (
        "bomb-presets-flag",
        {"conf/parallel/lol.yaml": _bomb()},
        ["--presets", "--config-dir", "{given}/conf"],
        ["lol.yaml", "alias"],
        True,
    ),
    (
        "bomb-doctor-matrix",
        {"m.yaml": _bomb()},
        ["doctor", "device=gpu", "--matrix", "{given}/m.yaml"],
        ["m.yaml"],
        True,
    ),
    (
        "too-deep-file",
        {"conf/extra/deep.yaml": "a: " + "[" * 5000 + "]" * 5000 + "\n"},
        [*BASE, "--config-dir", "{given}/conf"],
        ["deep.yaml", "nested deeper"],
        True,
    ),
    (
        "config-json-invalid",
        {"model/config.json": '{"hidden_size": 2048,\n'},
        [*BASE, "actor_rollout_ref.model.path={given}/model", "hydra.run.dir=run"],
        ["config.json line 2", "actor_rollout_ref.model.path"],
        False,
    ),
    (
        "config-json-list",
        {"model/config.json": "[1, 2]\n"},
        [*BASE, "actor_rollout_ref.model.path={given}/model", "hydra.run.dir=run"],
        ["config.json", "list"],
        False,
    ),
    (
        "config-json-binary",
        {"model/config.json": b"\x89PNG\r\n\x1a\n\x00\x00\x00"},
        [*BASE, "actor_rollout_ref.model.path={given}/model", "hydra.run.dir=run"],
        ["config.json", "binary"],
        False,
    ),
    (
        "config-json-lfs-pointer",
        {"model/config.json": "version https://git-lfs.github.com/spec/v1\noid sha256:4d7a\nsize 1024\n"},
        [*BASE, "actor_rollout_ref.model.path={given}/model", "hydra.run.dir=run"],
        ["config.json", "git lfs pull"],
        False,
    ),
    (
        "config-json-text-config-list",
        {"model/config.json": '{"text_config": [1]}\n'},
        [*BASE, "actor_rollout_ref.model.path={given}/model", "hydra.run.dir=run"],
        ["config.json", "text_config"],
        False,
    ),
    ("data-out-is-a-file", {"afile": "keep me\n"}, ["data", "--out", "{given}/afile"], ["afile", "a file"], True),
]
SUBPROCESS = {
    "bomb-other-group",
    "bomb-searchpath-entry",
    "bomb-presets-listing",
    "bomb-presets-flag",
    "bomb-doctor-matrix",
}


def _hand_in(tmp_path: Path, files: dict[str, str | bytes]) -> Path:
    given = tmp_path / GIVEN
    given.mkdir()
    for name, content in files.items():
        path = given / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content if isinstance(content, bytes) else content.encode())
    return given


def _written(tmp_path: Path) -> list[Path]:
    """Every file the command wrote: all of tmp_path but what was handed in."""
    return [p for p in tmp_path.rglob("*") if p.is_file() and GIVEN not in p.relative_to(tmp_path).parts]


def assert_clean_refusal(tmp_path: Path, code: int, said: str, named: list[str], before: bool) -> None:
    assert code == 2, said
    assert "Traceback" not in said, said
    for name in named:
        assert name in said, said
    leaked = [s for s in SECRETS if s in said]
    assert not leaked, f"printed: {said}"
    written = _written(tmp_path)
    for path in written:
        data = path.read_bytes()
        assert not [s for s in SECRETS if s.encode() in data], f"{path} holds a secret"
        if path.suffix in (".yaml", ".json"):  # whole files only
            (json.loads if path.suffix == ".json" else yaml.safe_load)(data.decode())
    if before:
        assert [p.name for p in tmp_path.iterdir()] in ([GIVEN], []), f"written before the refusal: {written}"


@pytest.fixture
def shell(monkeypatch):
    for name, value in SHELL.items():
        monkeypatch.setenv(name, value)


def _run(tmp_path: Path, argv: list[str], timeout: int = 300) -> tuple[int, str]:
    env = {k: v for k, v in os.environ.items() if k != "HYDRA_FULL_ERROR"}
    run = subprocess.run(
        [sys.executable, "-m", "verl_qwen35", *argv],
        cwd=tmp_path,
        capture_output=True,
        env={**env, "RAY_ADDRESS": "local", "PYTHONDONTWRITEBYTECODE": "1"},
        timeout=timeout,  # an alias bomb that is built instead of refused would take minutes and GBs
    )
    return run.returncode, (run.stdout + run.stderr).decode("utf-8", "backslashreplace")


@pytest.mark.parametrize(("files", "argv", "named", "before"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_secret_or_damaged_file_is_refused_cleanly(cli, shell, tmp_path, request, files, argv, named, before):
    given = _hand_in(tmp_path, files)
    argv = [a.replace("{given}", str(given)) for a in argv]
    if request.node.callspec.id in SUBPROCESS:
        code, said = _run(tmp_path, argv, timeout=120)
    else:
        result = cli(*argv)
        code, said = result.code, result.said
    assert_clean_refusal(tmp_path, code, said, named, before)
    if "afile" in files:
        assert (given / "afile").read_text() == "keep me\n"


def test_records_keep_overrides_as_typed(cli, shell, tmp_path):
    """A sweep's verdicts and summary hold `${oc.env:...}` as typed, not the token it resolves to."""
    result = cli("-m", *BASE, "+trainer.note=${oc.env:MY_SETTING}", "parallel.tp=1,2", "hydra.sweep.dir=sweep")
    assert result.code == 2
    verdict = json.loads((tmp_path / "sweep" / "0" / "verdict.json").read_text())
    # As the job was given it (Hydra's sweeper escapes `${` in each job's overrides), never resolved.
    assert [o for o in verdict["overrides"] if o.startswith("+trainer.note=") and "MY_SETTING" in o]
    assert_clean_refusal(tmp_path, result.code, result.said, ["trainer.note"], before=False)


def test_non_utf8_override_is_refused_before_writing(tmp_path):
    code, said = _run(tmp_path, [*BASE, b'trainer.experiment_name="caf\xe9 \xff"', "hydra.run.dir=run"])
    assert_clean_refusal(tmp_path, code, said, ["trainer.experiment_name", "UTF-8"], before=True)


def _file_size_limit() -> None:
    """A full disk, as far as the command can tell: writes beyond 8 KiB fail with EFBIG (SIGXFSZ ignored)."""
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (8192, 8192))


@pytest.mark.parametrize(
    ("argv", "key"),
    [
        ([*BASE, "hydra.run.dir=run"], "hydra.run.dir"),
        (["-m", *BASE, "parallel.tp=1,2", "hydra.sweep.dir=sweep"], "hydra.sweep.dir"),
    ],
    ids=["run", "sweep"],
)
def test_a_full_disk_while_hydra_writes_leaves_nothing_half_written(tmp_path, argv, key):
    env = {k: v for k, v in os.environ.items() if k != "HYDRA_FULL_ERROR"}
    run = subprocess.run(
        [sys.executable, "-m", "verl_qwen35", *argv],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={**env, "PYTHONDONTWRITEBYTECODE": "1"},
        preexec_fn=_file_size_limit,
        timeout=300,
    )
    said = run.stdout + run.stderr
    sweep = key == "hydra.sweep.dir"
    assert_clean_refusal(tmp_path, run.returncode, said, ["File too large", key], before=not sweep)
    if sweep:  # the sweep's claim on its directory, released and empty: no record of a job that never started
        assert [(p.relative_to(tmp_path).as_posix(), p.stat().st_size) for p in _written(tmp_path)] in (
            [("sweep/.sweep.lock", 0)],
            [],
        )


def test_a_shell_value_with_credentials_is_left_to_the_environment(cli, shell, tmp_path):
    """HTTPS_PROXY=http://user:pass@proxy in the shell, for a variable the config sets: not copied into
    job.sbatch, launch.yaml or the output, but named in the record as a secret the shell passes on."""
    result = cli(
        "device=gpu",
        "model=35b",
        "submit=slurm",
        "dry_run=true",
        "env.unset=[]",
        "+env.set.HTTPS_PROXY=http://proxy.example:3128",
        "hydra.run.dir=run",
    )
    assert result.code == 0, result.said
    assert not [s for s in SECRETS if s in result.said]
    for path in _written(tmp_path):
        assert PROXY_PASSWORD.encode() not in path.read_bytes(), path
    assert "HTTPS_PROXY" not in (tmp_path / "run" / "job.sbatch").read_text()
    meta = yaml.safe_load((tmp_path / "run" / "launch.yaml").read_text())["verl_qwen35"]
    assert "HTTPS_PROXY" in meta["secrets_not_recorded"] and "HTTPS_PROXY" not in meta["env_used"]


@pytest.mark.parametrize(
    ("flags", "shown"),
    [
        (["--cfg", "job", "--resolve"], "note: <MY_SETTING redacted>"),
        (["--info", "config"], "note: ${oc.env:MY_SETTING}"),  # unresolved, as Hydra prints it
    ],
    ids=["cfg-resolve", "info-config"],
)
def test_printed_configs_mask_secret_values(cli, shell, tmp_path, flags, shown):
    """Hydra prints `--cfg` and `--info` itself, with no callback: the command masks what it prints."""
    result = cli(
        "device=gpu", "model=35b", "+trainer.note=${oc.env:MY_SETTING}", "+trainer.db_password=plain-text-pw", *flags
    )
    assert result.code == 0, result.err
    assert HF_TOKEN not in result.said and "plain-text-pw" not in result.said
    assert shown in result.out and "db_password: <redacted>" in result.out
    assert "train_batch_size:" in result.out  # the rest as Hydra prints it
    assert _written(tmp_path) == []
