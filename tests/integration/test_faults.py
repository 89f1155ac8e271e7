"""Fault injection: every mistake a user can make at the command line is answered with one message,
exit 2, no traceback, the key or file to change named, and nothing written where it should not be.

Each row runs the real entrypoint (argv parsing, Hydra composition, preflight, plan) in-process;
`cli` in tests/conftest.py is the runner. Rows marked #7 are answered by the value checks of issue #7.
"""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from verl_qwen35.installed import conf_dir

BASE = ("device=gpu", "model=35b", "dry_run=true")
SHELL_SECRET = "sk-live-7f3a9c2e1b"


def _user_conf(tmp: Path) -> None:
    """--config-dirs with one file per fault (and one good layout to copy from). Every YAML file of a
    --config-dir is read before Hydra starts, so the files no YAML reader can load have dirs of their own."""
    (tmp / "my" / "parallel").mkdir(parents=True)
    (tmp / "my" / "model").mkdir()
    good = (conf_dir() / "parallel" / "35b_gpu.yaml").read_text()
    (tmp / "my" / "parallel" / "ok.yaml").write_text(good)
    (tmp / "my" / "parallel" / "short.yaml").write_text("tp: 2\npp: 1\n")
    (tmp / "my" / "parallel" / "alist.yaml").write_text("- tp\n- pp\n")
    (tmp / "broken" / "parallel").mkdir(parents=True)
    (tmp / "broken" / "parallel" / "broken.yaml").write_text("tp: 2\npp: [1\n")
    (tmp / "binary" / "parallel").mkdir(parents=True)
    (tmp / "binary" / "parallel" / "binary.yaml").write_bytes(b"\x00\x01\x02tp: 1\n")
    shutil.copytree(tmp / "my", tmp / "mé dir")  # a --config-dir path with a space and non-ASCII
    shutil.copy(conf_dir() / "model" / "35b.yaml", tmp / "my" / "model" / "mine.yaml")
    # Every file of a --config-dir is scanned for secrets, chosen or not: the leaky preset has a dir of its own.
    (tmp / "leaky" / "model").mkdir(parents=True)
    (tmp / "leaky" / "parallel").mkdir()
    leaky = (conf_dir() / "model" / "35b.yaml").read_text() + "env:\n  set:\n    WANDB_API_KEY: abc123\n"
    (tmp / "leaky" / "model" / "leaky.yaml").write_text(leaky)
    (tmp / "leaky" / "parallel" / "leaky_gpu.yaml").write_text(good)


# (id, argv after the BASE overrides, exit code, what the message must name)
CASES = [
    # values of the wrong type or null (issue #7's value check answers these in the preflight)
    ("batch-abc #7", ["data.train_batch_size=abc"], 2, ["data.train_batch_size"]),
    ("tp-two", ["parallel.tp=two"], 2, ["parallel.tp"]),
    ("tp-null", ["parallel.tp=null"], 2, ["parallel.tp"]),
    ("vpp-zero", ["parallel.vpp=0"], 2, ["parallel.vpp"]),
    ("prompt-null #7", ["data.max_prompt_length=null"], 2, ["data.max_prompt_length"]),
    ("nnodes-zero", ["parallel.nnodes=0"], 2, ["parallel.nnodes", "step       not predicted: parallel.nnodes"]),
    # the NPU layout on 8 GPUs: the expert grid does not divide, nothing to time, no empty list of choices
    ("npu-layout-on-h100", ["parallel=35b_npu"], 2, ["parallel.ep", "not predicted: world 8 is smaller"]),
    ("no-ep-fits", ["parallel.tp=1", "parallel.etp=3"], 2, ["no ep fits: etp*pp=3 does not divide world 8"]),
    ("env-set-null", ["env.set=null"], 2, ["env.set"]),
    ("env-null", ["env=null"], 2, ["env"]),
    ("env-unset-text", ["env.unset=abc"], 2, ["env.unset"]),
    ("env-value-list", ["+env.set.MY_LIST=[1,2]"], 2, ["env.set.MY_LIST"]),
    ("trainer-null", ["trainer=null"], 2, ["trainer"]),
    ("verl-group-null", ["data=null"], 2, ["data=null"]),
    ("otc-null", ["megatron.override_transformer_config=null"], 2, ["megatron.override_transformer_config"]),
    ("rollout-number", ["actor_rollout_ref.rollout=5"], 2, ["actor_rollout_ref.rollout"]),
    ("unwritable-run-dir", ["hydra.run.dir=/proc/verl_qwen35_nope"], 2, ["/proc/verl_qwen35_nope"]),
    ("config-name-missing", ["--config-name", "nope"], 2, ["nope"]),
    ("dry-run-yes", ["dry_run=yes"], 2, ["dry_run"]),
    ("dry-run-list", ["dry_run=[1]"], 2, ["dry_run"]),
    # overrides Hydra cannot parse
    ("unclosed-list", ["parallel.tp=[1,2"], 2, ["parallel.tp=[1,2", "hydra.cc"]),
    ("trailing-comma", ["parallel.tp=1,2,"], 2, ["parallel.tp=1,2,"]),
    ("non-ascii-unquoted", ["data.train_files=/data/dätä/train.parquet"], 2, ["data.train_files", "quote"]),
    ("bad-cfg-flag", ["--cfg", "jbo"], 2, ["--cfg"]),
    # group choices
    ("model-case", ["model=122B"], 2, ["model=122B", "122b"]),
    ("device-tpu", ["device=tpu"], 2, ["device=tpu", "gpu, npu"]),
    ("verl-hf-model", ["model=hf_model"], 2, ["model=hf_model"]),
    ("model-at-package", ["model@actor_rollout_ref.model=35b"], 2, ["model@actor_rollout_ref.model"]),
    ("parallel-unknown", ["parallel=nope"], 2, ["parallel=nope"]),
    ("schema-unknown", ["verl_schema=v0_7"], 2, ["verl_schema=v0_7"]),
    # Hydra's composition errors
    ("typo-shorthand", ["parallel.tpp=2"], 2, ["parallel.tpp", "did you mean `parallel.tp`"]),
    (
        "typo-verl-key",
        ["actor_rollout_ref.actor.megatron.tensor_model_paralel_size=2"],
        2,
        ["`actor_rollout_ref.actor.megatron.tensor_model_parallel_size`", "parallel.tp=2"],
    ),
    ("typo-rollout", ["actor_rollout_ref.rollout.gpu_memory_utilisation=0.5"], 2, ["gpu_memory_utilization"]),
    ("unknown-top", ["foo=bar"], 2, ["foo", "+foo="]),
    ("append-existing", ["+parallel.tp=2"], 2, ["parallel.tp"]),
    ("delete-missing", ["~parallel.nope"], 2, ["parallel.nope"]),
    ("into-a-number", ["trainer.nnodes.x=1"], 2, ["trainer.nnodes.x"]),
    # interpolations
    ("interp-missing", ["parallel.tp=${nope}"], 2, ["parallel.tp", "nope"]),
    (
        "env-var-missing",
        ["data.train_files=${oc.env:VERL_QWEN35_NOT_SET}"],
        2,
        ["data.train_files", "VERL_QWEN35_NOT_SET"],
    ),
    ("cfg-resolve-missing", ["--cfg", "job", "--resolve", "parallel.tp=${nope}"], 2, ["parallel.tp", "nope"]),
    # layouts that cannot run
    ("tp-not-dividing", ["parallel.tp=3"], 2, ["parallel.tp"]),
    ("trainer-key-past-parallel", ["trainer.nnodes=2"], 2, ["parallel.nnodes"]),
    ("full-missing-data", ["dry_run=full"], 2, ["data.train_files"]),
    # --config-dir files
    ("conf-dir-missing", ["--config-dir", "{tmp}/nowhere"], 2, ["nowhere"]),
    ("conf-yaml-syntax", ["--config-dir", "{tmp}/broken", "parallel=broken"], 2, ["broken.yaml line 3", "YAML"]),
    (
        "conf-layout-short",
        ["--config-dir", "{tmp}/my", "parallel=short"],
        2,
        ["parallel.nnodes is missing"],  # the schema's mandatory key (devices_per_node is the hardware's node)
    ),
    ("conf-binary", ["--config-dir", "{tmp}/binary", "parallel=binary"], 2, ["binary.yaml", "binary"]),
    ("conf-not-mapping", ["--config-dir", "{tmp}/my", "parallel=alist"], 2, ["alist.yaml", "mapping"]),
    ("conf-model-no-layout", ["--config-dir", "{tmp}/my", "model=mine"], 2, ["parallel/mine_gpu.yaml", "parallel="]),
    ("conf-model-layout-ok", ["--config-dir", "{tmp}/my", "model=mine", "parallel=ok"], 0, []),
    ("conf-secret-in-file", ["--config-dir", "{tmp}/leaky", "model=leaky"], 2, ["leaky.yaml", "WANDB_API_KEY"]),
    # secrets on the command line
    ("secret-env-set", ["+env.set.WANDB_API_KEY=abc"], 2, ["env.set.WANDB_API_KEY"]),
    ("secret-lowercase", ["+env.set.hf_token=abc"], 2, ["env.set.hf_token"]),
    ("secret-ray-env", ["+ray_kwargs.ray_init.runtime_env.env_vars.GITHUB_PAT=abc"], 2, ["GITHUB_PAT"]),
    ("secret-ray-dict", ["ray_kwargs.ray_init.runtime_env={env_vars:{DB_PASSWORD:abc}}"], 2, ["DB_PASSWORD"]),
    ("secret-hydra-env", ["+hydra.job.env_set.MY_APIKEY=abc"], 2, ["MY_APIKEY"]),
    ("secret-config-key", ["+trainer.wandb_api_key=abc"], 2, ["trainer.wandb_api_key"]),
    ("secret-read-env", ["+env.set.X=${oc.env:HF_TOKEN}"], 2, ["env.set.X", "HF_TOKEN"]),
    (
        "secret-shell-value",
        [f"trainer.experiment_name={SHELL_SECRET}"],
        2,
        ["trainer.experiment_name", "SERVICE_TOKEN"],
    ),
    ("secret-in-sweep", ["-m", "+env.set.AUTH=a,b"], 2, ["env.set.AUTH"]),
    ("token-path-passes", ["+env.set.HF_TOKEN_PATH=/secrets/hf"], 0, []),
    ("key-file-passes", ["+env.set.SSH_KEY_FILE=/x", "+env.set.CREDENTIALS_DIR=/y"], 0, []),
    # a verl key given another kind of value than verl's own default (checks/verl_types.py)
    ("verl-int-as-text", ["dry_run=true", "trainer.total_epochs=ten"], 2, ["trainer.total_epochs", "'ten'"]),
    ("verl-float-as-text", ["dry_run=true", "actor_rollout_ref.actor.optim.lr=1e-6x"], 2, ["optim.lr", "'1e-6x'"]),
    ("verl-flag-as-text", ["dry_run=true", "trainer.val_before_train=maybe"], 2, ["trainer.val_before_train"]),
    ("verl-float-for-int-default", ["dry_run=true", "actor_rollout_ref.actor.entropy_coeff=0.001"], 0, []),
    ("verl-null-for-number", ["dry_run=true", "trainer.total_training_steps=null"], 0, []),
    # every problem at once: the type errors beside the rule errors that do not read a bad value (checks/masked.py),
    # and every schema refusal of the typed nodes before Hydra stops at the first (config/overrides.py)
    (
        "type-and-rule-at-once",
        ["trainer.total_epochs=ten", "actor_rollout_ref.rollout.n=1"],
        2,
        ["[trainer.total_epochs] ='ten'", "[actor_rollout_ref.rollout.n] =1: GRPO"],
    ),
    (
        "sign-and-rule-at-once",
        ["data.train_batch_size=-3", "trainer.total_epochs=0"],
        2,
        ["[data.train_batch_size] =-3", "[trainer.total_epochs] =0: the run has 0 training steps"],
    ),
    (
        "schema-types-at-once",
        ["parallel.vpp=two", "parallel.tp=x", "parallel.tpp=2", "trainer.total_epochs=ten"],
        2,
        ["4 overrides", "parallel.vpp: Value 'two'", "parallel.tp: Value 'x'", "did you mean `parallel.tp`", "='ten'"],
    ),
    ("schema-dict-entry-passes", ["hardware.sources.hbm_gbps=measured"], 0, []),  # a preset's key of a dict field
    ("checkpoint-dir-null", ["trainer.default_local_dir=null"], 2, ["trainer.default_local_dir"]),
    ("checkpoint-dir-empty", ["trainer.default_local_dir=''"], 2, ["trainer.default_local_dir"]),
    # fine inputs around the faults
    ("quoted-space-non-ascii", ['data.train_files="/data/my dir/dätä.parquet"'], 0, []),
    ("conf-dir-space-non-ascii", ["--config-dir", "{tmp}/mé dir", "parallel=ok"], 0, []),
    ("run-dir-space-non-ascii", ['hydra.run.dir="{tmp}/rün dir"'], 0, []),
]


@pytest.mark.parametrize(("argv", "code", "named"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_fault_is_answered(cli, tmp_path, monkeypatch, argv, code, named):
    _user_conf(tmp_path)
    monkeypatch.setenv("MY_SERVICE_TOKEN", SHELL_SECRET)
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    first = next((i for i, a in enumerate(argv) if "=" in a and not a.startswith("-")), len(argv))
    result = cli(*argv[:first], *BASE, *argv[first:])  # Hydra reads flags, then one run of overrides
    assert result.code == code, result.said
    assert "Traceback" not in result.said
    # Words, not internals: no exception class names, no empty list of choices.
    assert not re.search(r"\b[A-Z]\w*(Error|Exception)\b", result.said), result.said
    assert "one of []" not in result.said, result.said
    for name in named:
        assert name in result.said, result.said
    if code == 2 and any("secret" in n.lower() or n.isupper() for n in named):
        assert "abc123" not in result.said and SHELL_SECRET not in result.said


def test_a_rule_that_reads_a_bad_value_is_not_guessed_beside_it(cli):
    """Greedy GRPO groups are refused for n >= 2 (the rule names the temperature, reads n): with n wrong, its verdict
    would be about a stand-in n, so only n is reported; with n valid, both."""
    errors = []
    for n in ("2.5", "5"):
        said = cli(*BASE, f"actor_rollout_ref.rollout.n={n}", "actor_rollout_ref.rollout.temperature=0").said
        errors.append({line.split("]")[0].split("[")[1] for line in said.splitlines() if line.startswith("ERROR")})
    assert errors == [{"actor_rollout_ref.rollout.n"}, {"actor_rollout_ref.rollout.temperature"}], said


def test_at_least_forty_faults():
    assert sum(code == 2 for _, _, code, _ in CASES) >= 40


@pytest.mark.parametrize(
    "argv",
    [
        ["+env.set.WANDB_API_KEY=abc"],
        ["parallel.tp=[1,2"],
        ["model=122B"],
        ["ray_kwargs.ray_init.runtime_env={env_vars:{HF_TOKEN:x}}"],
    ],
)
def test_refused_before_hydra_writes_anything(cli, tmp_path, argv):
    result = cli(*BASE, *argv)
    assert result.code == 2
    assert not (tmp_path / "outputs").exists(), "Hydra wrote .hydra/ before the refusal"


def test_home_unset_names_home_and_the_keys(cli, monkeypatch):
    monkeypatch.delenv("HOME")
    result = cli(*BASE)
    assert result.code == 2 and "HOME" in result.err and "data.train_files" in result.err
    given = cli(*BASE, "data.train_files=/d/train.parquet", "data.val_files=/d/test.parquet")
    assert given.code == 0, given.said


def test_refused_config_still_writes_a_verdict_and_no_plan_crash(cli, tmp_path):
    result = cli(*BASE, "parallel.tp=0", "hydra.run.dir=run")
    assert result.code == 2 and "REFUSED" in result.err
    assert '"valid": false' in (tmp_path / "run" / "verdict.json").read_text()


def _subprocess(tmp_path: Path, *argv: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "RAY_ADDRESS": "local"}
    env.pop("HYDRA_FULL_ERROR", None)
    return subprocess.run(
        [sys.executable, "-m", "verl_qwen35", *argv], cwd=tmp_path, capture_output=True, text=True, env=env
    )


# The repository's before-stop hook runs exactly these; as a user's shell would, in a fresh process.
HOOK = ["data.train_batch_size=abc", "parallel.tp=two", "parallel.tp=[1,2", "model=122B", "env.set=null"]


@pytest.mark.parametrize("override", HOOK)
def test_hook_cases_in_a_fresh_process(tmp_path, override):
    run = _subprocess(tmp_path, *BASE, override)
    assert run.returncode == 2, run.stderr
    assert "Traceback" not in run.stdout + run.stderr
    assert override.split("=")[0] in run.stderr


@pytest.mark.parametrize(
    "argv", [["--info"], ["--info", "defaults", "model=122b"], ["model=122b", "--info", "defaults"]]
)
def test_info_bare_and_with_overrides_works_as_hydras(tmp_path, argv):
    run = _subprocess(tmp_path, *argv)
    assert run.returncode == 0, run.stderr
    assert "Defaults List" in run.stdout and "Traceback" not in run.stderr


@pytest.mark.parametrize(("flag", "says"), [("--hydra-help", "Hydra"), ("--version", "Hydra 1.")])
def test_hydras_own_help_and_version_still_work(tmp_path, flag, says):
    run = _subprocess(tmp_path, flag)
    assert run.returncode == 0 and says in run.stdout, run.stderr


def test_a_missing_runtime_package_is_named_with_its_extra(tmp_path):
    """An install without verl's runtime extras: verl's start-up imports cachetools (verl/workers/rollout/router.py).
    The interpreter is told the module is absent (`sys.modules[name] = None` makes its import raise
    ModuleNotFoundError, Python's documented behaviour); nothing is uninstalled."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = {"prompt": [[{"role": "user", "content": "1+1?"}]] * 256, "data_source": ["hiyouga/geometry3k"] * 256}
    rows["reward_model"] = [{"style": "rule", "ground_truth": "2"}] * 256
    for name in ("train", "test"):
        pq.write_table(pa.table(rows), tmp_path / f"{name}.parquet")
    argv = [
        *BASE[:2],
        "dry_run=full",
        f"data.train_files={tmp_path}/train.parquet",
        f"data.val_files={tmp_path}/test.parquet",
    ]
    probe = (
        f"import sys; sys.modules['cachetools'] = None\nfrom verl_qwen35.cli.main import main\nsys.exit(main({argv!r}))"
    )
    env = {**os.environ, "RAY_ADDRESS": "local"}
    env.pop("HYDRA_FULL_ERROR", None)
    run = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True, env=env)
    assert run.returncode == 2 and "Traceback" not in run.stderr, run.stderr
    assert "ERROR   [dry_run] dry_run=full (verl's start-up, rehearsed) imports the package `cachetools`" in run.stderr
    assert "the `launch` extra brings it: pip install" in run.stderr and "[launch]" in run.stderr
