"""`verl-qwen35 import`: a verl launch script (or its recorded overrides) becomes a --config-dir preset that
composes to the script's own config, key for key, but for the fixes the report lists."""

import io
import itertools
import shlex
import sys
import tempfile
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest
import yaml
from hydra import compose, initialize_config_dir

from tests.conftest import Outcome, exit_code
from verl_qwen35.checks.versions import rules_line
from verl_qwen35.cli.main import main
from verl_qwen35.config import compose as compose_ours
from verl_qwen35.imports.script import read_overrides, run_script
from verl_qwen35.installed import installed_verl_schema, verl_config_dir
from verl_qwen35.review.flat import flatten
from verl_qwen35.run.environment import effective_env

FIDELITY = Path(__file__).parents[1] / "seed_fidelity"
FIXTURE = Path(__file__).parents[1] / "import_scripts" / "qwen3_5_35b_style.sh"
VERL_SCRIPTS = Path(__file__).parents[1] / "import_scripts" / "verl"  # verl's own, copied at 1dda039b
LISTS = sorted(FIDELITY.glob("*_overrides/*.txt"))


# Keys one verl version does not have: 0.9.1 removed grad_offload, 0.8.0 has no runtime_env.py_executable.
NOT_IN_VERL = {
    "v0_9": ("actor_rollout_ref.actor.megatron.grad_offload=",),
    "v0_8": ("ray_kwargs.ray_init.runtime_env.",),
}


def _script_config(lines: list[str], env: dict[str, str]) -> dict[str, object]:
    """verl's own config with the raw overrides, as main_ppo composes it (as test_seed_fidelity does: a line
    for a key the installed verl lacks is dropped), with the exported environment as ENV.*."""
    lines = [line for line in lines if not line.startswith(NOT_IN_VERL[installed_verl_schema()])]
    with initialize_config_dir(str(verl_config_dir()), version_base=None):
        flat = flatten(compose("ppo_trainer", overrides=lines))
    return flat | {f"ENV.{k}": v for k, v in env.items()}


def _preset_config(command: str) -> dict[str, object]:
    """The report's last line, composed as the command composes it."""
    words = shlex.split(command)
    assert words[:2] == ["verl-qwen35", "--config-dir"]
    cfg = compose_ours(words[3:], [words[2]])
    env = {f"ENV.{k}": v for k, v in effective_env(cfg, environ={}).items() if v != ""}
    return flatten(cfg) | env


def _reported(report: str) -> set[str]:
    """Keys the report names as fixed or not mapped."""
    lines = report.split("changed by us:", 1)[1].splitlines()
    return {line.split(":", 1)[0].strip().split("=", 1)[0] for line in lines if line.startswith("  ")}


def _section(report: str, title: str) -> list[str]:
    lines = report.splitlines()
    start = lines.index(title) + 1 if title in lines else len(lines)
    return [line for line in itertools.takewhile(lambda ln: ln.startswith("  "), lines[start:])]


def _differences(script: dict, preset: dict) -> set[str]:
    ours = {k for k in preset if k.split(".", 1)[0] in {p.split(".", 1)[0] for p in script}}
    keys = set(script) | ours
    parents = {k.rsplit(".", 1)[0] for k in keys}
    return {
        k
        for k in keys
        if script.get(k, "<absent>") != preset.get(k, "<absent>")
        and not (k in parents and {} in (script.get(k), preset.get(k)))
    }


def _import(source: Path, device: str, out: Path) -> Outcome:
    """`verl-qwen35 import SOURCE --device DEVICE --out OUT` in-process, as the `cli` fixture runs it, for a
    module-scoped fixture (a list's /home/user paths are the HOME its preset reads)."""
    err, said = io.StringIO(), io.StringIO()
    with pytest.MonkeyPatch.context() as patch, redirect_stdout(said), redirect_stderr(err):
        if source.suffix == ".txt":
            patch.setenv("HOME", "/home/user")
        patch.setattr(sys, "argv", ["verl_qwen35", "import", str(source), "--device", device, "--out", str(out)])
        try:
            code = main()
        except SystemExit as stop:
            code = exit_code(stop)
    return Outcome(code, said.getvalue(), err.getvalue())


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory):
    """`imported(source, device)`: the import's outcome and its preset directory, once per module (an import
    composes verl's config and ours several times: seconds), shared by every test that inspects it."""
    done: dict[tuple[Path, str], tuple[Outcome, Path]] = {}

    def get(source: Path, device: str) -> tuple[Outcome, Path]:
        if (source, device) not in done:
            out = tmp_path_factory.mktemp("imported") / "preset"
            done[source, device] = (_import(source, device, out), out)
        return done[source, device]

    return get


# One import per distinct code path, each with a dry run: every verl Qwen3.5 Megatron GRPO script at 1dda039b
# (examples/, examples/ascend_extras/, tests/special_npu/) on one device, and the seed's recorded lists (.txt:
# read, not run) for the model and device pairs those scripts leave. Not repeated: a script's other device
# branch (only values differ; that device's mapping is the seed list's) and upstream_overrides/*.txt (the
# recordings of the 35B and 122B scripts: test_verls_scripts_record_the_overrides_verl_recorded).
# (source, device, model)
# On verl 0.8 (each_verl) only the Ascend image's cases: the NPU scripts and the seed's lists, written for 0.8 (the
# GPU scripts' import is the same code; what differs by verl is the schema they compose against).
EACH = pytest.mark.each_verl
CASES = [
    pytest.param(VERL_SCRIPTS / "run_qwen3_5_35b_megatron.sh", "gpu", "35b"),
    pytest.param(VERL_SCRIPTS / "run_qwen3_5_122b_a10b_megatron.sh", "npu", "122b", marks=EACH),
    pytest.param(VERL_SCRIPTS / "run_qwen3_5_397b_megatron.sh", "gpu", "397b"),
    pytest.param(VERL_SCRIPTS / "run_qwen3_5_122b_a10b_32k_megatron.sh", "npu", "122b"),  # no max_model_len of ours
    pytest.param(VERL_SCRIPTS / "run_grpo_qwen3_5_35b_megatron_npu.sh", "npu", "35b"),  # the nightly CI: rm, mkdir, tee
    pytest.param(FIDELITY / "seed_overrides" / "35b_npu.txt", "npu", "35b", marks=EACH),
    pytest.param(FIDELITY / "seed_overrides" / "122b_gpu.txt", "gpu", "122b"),
    pytest.param(FIDELITY / "seed_overrides" / "397b_npu.txt", "npu", "397b", marks=EACH),
]
_DEFAULTS = "verl's default (the script leaves it; our preset has another value):"


@pytest.mark.parametrize(("source", "device", "model"), CASES, ids=lambda v: v.name if isinstance(v, Path) else v)
def test_an_imported_preset_is_the_script_but_for_the_reported_fixes(imported, cli, monkeypatch, source, device, model):
    done, out = imported(source, device)
    assert done.code == 0, done.said
    assert "still differs" not in done.out
    if source.suffix == ".txt":
        monkeypatch.setenv("HOME", "/home/user")
        recorded = read_overrides(source)
    else:
        recorded = run_script(source, device)
    not_mapped = _section(done.out, "not mapped:")
    lacking = [line for line in recorded.overrides if line.startswith(NOT_IN_VERL[installed_verl_schema()])]
    assert sorted(line.split(": ", 1)[0].strip() for line in not_mapped) == sorted(lacking)
    script = _script_config(recorded.overrides, recorded.env)
    command = done.out.strip().splitlines()[-1]
    assert command.startswith(f"verl-qwen35 --config-dir {out} device={device} model={model}")
    preset = _preset_config(command)
    unreported = _differences(script, preset) - _reported(done.out)
    assert not unreported, {k: (script.get(k), preset.get(k)) for k in unreported}
    if source.suffix == ".sh":  # the report says what the script set and what is verl's default apart
        text = source.read_text()
        given = [line.split(" -> ")[0].split(",")[0].strip() for line in _section(done.out, "set by the script:")]
        assert given and all(key.removeprefix("export ") in text for key in given), given
        defaults = [line.split(" -> ")[0].strip() for line in _section(done.out, _DEFAULTS)]
        assert not [key for key in defaults if key.split(",")[0] in text], defaults
        assert "model.hf_id" not in done.out  # the model path stays a path
    checked = cli(*shlex.split(command)[1:], "dry_run=true")
    assert checked.code == 0 and "verdict    OK" in checked.out, checked.said
    assert "replaces the logger group" not in checked.out  # the script's trainer.logger became logger=[...]
    assert rules_line(device) in checked.out  # the stack the rules assumed, as `verl-qwen35 doctor` says it


@pytest.mark.parametrize("device", ["gpu", "npu"])
@pytest.mark.parametrize("model", ["35b", "122b"])
def test_verls_scripts_record_the_overrides_verl_recorded(model, device):
    script = {"35b": "run_qwen3_5_35b_megatron.sh", "122b": "run_qwen3_5_122b_a10b_megatron.sh"}[model]
    recorded = run_script(VERL_SCRIPTS / script, device)
    upstream = read_overrides(FIDELITY / "upstream_overrides" / f"{model}_{device}.txt")
    assert recorded.overrides == [line.replace("/home/user", "${oc.env:HOME}") for line in upstream.overrides]
    assert recorded.env == upstream.env
    assert recorded.unset_proxies is (model == "122b")  # the 122B script clears proxies, the 35B one does not


@pytest.fixture(scope="module")
def style_script(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A script in verl's style that clears proxies on npu only and takes its GPU layout from TP/PP/EP, run
    by a wrapper that gives TP=4 PP=2 EP=4 and one more override."""
    folder = tmp_path_factory.mktemp("style")
    text = FIXTURE.read_text().replace("gpu) TP=2; PP=1; EP=8;", "gpu) TP=${TP:-2}; PP=${PP:-1}; EP=${EP:-8};")
    text = text.replace(
        "    export CPU_AFFINITY_CONF=1\n", "    export CPU_AFFINITY_CONF=1\n    unset http_proxy https_proxy\n"
    )
    (folder / "fixture.sh").write_text(text)
    (folder / "mine.sh").write_text(f"TP=4 PP=2 EP=4 exec bash {folder / 'fixture.sh'} actor_rollout_ref.rollout.n=8\n")
    return folder / "mine.sh"


def test_a_changed_layout_lands_in_parallel(imported, style_script):
    done, out = imported(style_script, "gpu")
    assert done.code == 0, done.said
    layout = yaml.safe_load((out / "parallel" / "imported.yaml").read_text())
    assert {k: layout[k] for k in ("tp", "pp", "ep")} == {"tp": 4, "pp": 2, "ep": 4}
    assert "parallel=imported" in done.out.splitlines()[-1]
    cfg = compose_ours(shlex.split(done.out.splitlines()[-1])[3:], [out])
    assert cfg.actor_rollout_ref.ref.megatron.tensor_model_parallel_size == 4
    assert cfg.actor_rollout_ref.rollout.n == 8
    # verl derives actor.rollout_n (and the critic's) from rollout.n: not written, so they keep following it
    assert "rollout_n" not in (out / "tuning" / "imported.yaml").read_text()
    assert cfg.actor_rollout_ref.actor.rollout_n == 8


def _bad(cli, tmp_path, body: str, *args: str):
    script = tmp_path / "bad.sh"
    script.write_text(body)
    done = cli("import", str(script), "--out", str(tmp_path / "preset"), *args)
    assert done.code == 2, done.said
    assert not (tmp_path / "preset").exists()
    return done


def test_a_script_that_never_calls_main_ppo_is_refused(cli, tmp_path):
    done = _bad(cli, tmp_path, "echo preparing\npython3 examples/data_preprocess/geo3k.py\n")
    assert "never called `python3 -m verl.trainer.main_ppo`" in done.err
    assert "python3 examples/data_preprocess/geo3k.py" in done.err


def test_a_command_the_importer_does_not_provide_is_named(cli, tmp_path):
    done = _bad(
        cli, tmp_path, "set -e\ncurl -sL https://example.com/model.tar | tar x\npython3 -m verl.trainer.main_ppo\n"
    )
    assert "curl" in done.err and "does not provide" in done.err


def test_a_script_that_runs_too_long_is_stopped(cli, tmp_path, monkeypatch):
    monkeypatch.setattr("verl_qwen35.imports.script.TIME_LIMIT_S", 1)
    done = _bad(cli, tmp_path, "sleep 30\npython3 -m verl.trainer.main_ppo\n")
    assert "still running after 1 s" in done.err


@pytest.mark.parametrize("kind", ["file", "full"])
def test_an_out_that_is_a_file_or_not_empty_is_refused(cli, tmp_path, kind):
    out = tmp_path / "out"
    if kind == "file":
        out.write_text("x")
    else:
        out.mkdir()
        (out / "keep.yaml").write_text("a: 1\n")
    listed = FIDELITY / "seed_overrides" / "35b_gpu.txt"
    done = cli("import", str(listed), "--out", str(out))
    assert done.code == 2 and "--out" in done.err
    assert (out.read_text() == "x") if kind == "file" else sorted(p.name for p in out.iterdir()) == ["keep.yaml"]


TOKEN = "hf_" + "a1B2c3D4e5F6g7H8i9J0kLmN"
TRICKY = "a: b # c - ${oc.env:PATH} [x]"  # YAML syntax and an interpolation, as a value


@pytest.fixture(scope="module")
def odd_values(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A script exporting a secret and a plain variable, with a token as a value and a value that reads as YAML."""
    script = tmp_path_factory.mktemp("odd") / "odd.sh"
    tricky = shlex.quote(f"trainer.project_name='{TRICKY}'".replace("${", "\\${"))
    script.write_text(
        f"export WANDB_API_KEY=0123456789abcdef0123\nexport MY_NOTE=keep\n"
        f"python3 -m verl.trainer.main_ppo model_engine=megatron actor_rollout_ref.model.path=Qwen/Qwen3.5-35B-A3B "
        f"trainer.experiment_name={TOKEN} {tricky}\n"
    )
    return script


def test_secrets_are_not_written(imported, odd_values):
    done, out = imported(odd_values, "gpu")
    assert done.code == 0, done.said
    written = "".join(p.read_text() for p in out.rglob("*.yaml"))
    assert "0123456789abcdef0123" not in written and TOKEN not in written and "WANDB_API_KEY" not in written
    assert "MY_NOTE: keep" in written
    assert "WANDB_API_KEY: not written" in done.out and "trainer.experiment_name: not written" in done.out
    assert TOKEN not in done.out


def test_values_are_written_as_yaml_data_not_as_config(imported, odd_values):
    """A value holding YAML syntax or an interpolation comes back as the same string, nothing else."""
    done, out = imported(odd_values, "gpu")
    assert done.code == 0, done.said
    cfg = compose_ours(shlex.split(done.out.splitlines()[-1])[3:], [out])
    assert cfg.trainer.project_name == TRICKY
    assert set(cfg.keys()) == set(compose_ours(["model=35b", "device=gpu"]).keys())


def test_an_environment_read_is_not_resolved_and_an_uncarried_secret_is_neither_written_nor_printed(
    cli, tmp_path, monkeypatch
):
    """A value holding YAML syntax or an interpolation comes back as the same string, nothing else; an
    environment read is never resolved against the importer's environment, and a secret in a line that cannot
    be carried is neither written nor printed."""
    secret = "wJalrXUtnFEMI-K7MDENG-bPxRfiCYEXAMPLEKEY"
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", secret)
    tricky = "a: b # c\n- ${oc.env:PATH} [x]"
    listed = tmp_path / "mine.txt"
    listed.write_text(
        "model_engine=megatron\nactor_rollout_ref.model.path=Qwen/Qwen3.5-35B-A3B\n"
        f"trainer.experiment_name='{tricky.replace(chr(10), ' ')}'\n".replace("${", "\\${")
        + f"trainer.project_name=${{oc.env:AWS_SECRET_ACCESS_KEY}}\n+trainer.no_such_key_api_key={secret}\n"
    )
    done = cli("import", str(listed), "--out", str(tmp_path / "preset"))
    assert done.code == 0 and secret not in done.said and "Traceback" not in done.said, done.said
    assert secret not in "".join(p.read_text() for p in (tmp_path / "preset").rglob("*.yaml"))
    cfg = compose_ours(shlex.split(done.out.splitlines()[-1])[3:], [tmp_path / "preset"])
    assert cfg.trainer.experiment_name == tricky.replace("\n", " ")
    assert set(cfg.keys()) == set(compose_ours(["model=35b", "device=gpu"]).keys())


def test_proxies_cleared_on_one_device_only_are_cleared_on_every_device(imported, style_script):
    on_gpu, _ = imported(style_script, "gpu")
    assert "ENV.http_proxy: proxies cleared on every device (it clears them on npu only)" in on_gpu.out
    on_npu, _ = imported(style_script, "npu")
    assert on_npu.code == 0 and "proxies cleared" not in on_npu.out
    assert "parallel=imported" not in on_npu.out  # 35b_npu's own layout (TP/PP/EP set gpu's only): nothing written


def test_a_scripts_writes_outside_the_sandbox_touch_nothing(tmp_path):
    """verl's nightly NPU script makes, empties and tees into a log under /root/.cache: all skipped."""
    outside = tmp_path / "outside"
    script = tmp_path / "writes.sh"
    script.write_text(
        f"set -e\nmkdir -p {outside}/logs logs\ntouch {outside}/x\nrm -rf {tmp_path}\ncd ..; mkdir -p mine\n"
        f"cp /etc/hostname {outside}/copy\n"
        f"python3 -m verl.trainer.main_ppo data.train_files=$(pwd) | tee {outside}/run.log logs/run.log\n"
    )
    recorded = run_script(script, "gpu")
    assert not outside.exists() and script.is_file()
    assert recorded.overrides[0].startswith(f"data.train_files={tempfile.gettempdir()}/verl-qwen35-import-")
    skipped = [n for n in recorded.notes if "outside the import" in n]
    assert [n.split("`")[1].split()[0] for n in skipped] == ["mkdir", "touch", "rm", "cp", "cp", "tee"]


@pytest.mark.parametrize(
    ("body", "named"),
    [
        ("run_qwen3_5_35b_megatron_lite.sh", "hydra.searchpath=[pkg://verl_mlite.config]"),
        ("python3 -m verl.trainer.main_ppo actor@actor_rollout_ref.actor=mlite_actor", "actor@actor_rollout_ref.actor"),
        ("grpo_qwen35_35b_megatron_async.sh", "verl.experimental.fully_async_policy.fully_async_main"),
        ("run_qwen3_5_397b_a17b_megatron.sh", "verl.trainer.sft_trainer"),  # torchrun
    ],
)
def test_an_engine_or_entrypoint_outside_verls_main_ppo_is_named(cli, tmp_path, body, named):
    script = VERL_SCRIPTS / body
    if not body.endswith(".sh"):
        script = tmp_path / "mine.sh"
        script.write_text(body + "\n")
    done = cli("import", str(script), "--out", str(tmp_path / "p"))
    assert done.code == 2 and named in done.err and "not supported" in done.err or "main_ppo launches only" in done.err
    assert not (tmp_path / "p").exists()


# verl's own scripts of another engine or model (copied at 1dda039b, tests/import_scripts/verl/SOURCES.md): refused
# whole, naming what they are and what this project carries, before any key is mapped or dropped.
@pytest.mark.parametrize(
    ("script", "named"),
    [
        ("run_qwen3_5_35b_fsdp.sh", ["FSDP2", "actor_rollout_ref.actor.strategy=fsdp2", "model_engine=dp"]),
        ("run_qwen3_5_35b_a3b_veomni.sh", ["VeOmni", "model_engine=veomni"]),
        ("run_qwen3_30b_a3b_megatron.sh", ["Qwen/Qwen3-30B-A3B-Base: another model", "Qwen/Qwen3.5-35B-A3B"]),
    ],
)
def test_a_script_of_another_engine_or_model_is_refused_naming_it(cli, tmp_path, script, named):
    done = cli("import", str(VERL_SCRIPTS / script), "--out", str(tmp_path / "p"))
    assert done.code == 2, done.said
    assert all(n in done.err for n in named), done.err
    assert "model_engine=megatron" in done.err or "Qwen3.5/3.6 MoE models" in done.err  # what the project carries
    assert "has no key" not in done.said and "Traceback" not in done.said
    assert not (tmp_path / "p").exists()


MAIN_PPO = "python3 -m verl.trainer.main_ppo"
MEGATRON_35B = f"{MAIN_PPO} model_engine=megatron actor_rollout_ref.model.path=Qwen/Qwen3.5-35B-A3B"


@pytest.mark.parametrize(
    ("line", "named"),
    [
        (f"{MEGATRON_35B} actor_rollout_ref.actor.strategy=fsdp2", "actor_rollout_ref.actor.strategy=fsdp2 (FSDP2)"),
        (f"{MEGATRON_35B} --config-name=sft_trainer_engine", "a config of the installed verl for another trainer"),
        (f"{MEGATRON_35B} --config-name mine", "not a config the installed verl ships"),
        (f"{MEGATRON_35B} --config-path /opt/mine", "configs from outside the installed verl"),
        (f"{MAIN_PPO} actor_rollout_ref.model.path=Qwen/Qwen3.5-35B-A3B", "model_engine=dp"),
    ],
)
def test_a_launch_that_does_not_run_the_megatron_engine_is_refused(cli, tmp_path, line, named):
    done = _bad(cli, tmp_path, line + "\n")
    assert named in done.err, done.err


def test_the_legacy_megatron_trainer_config_is_verls_megatron_engine(cli, tmp_path):
    script = tmp_path / "legacy.sh"
    script.write_text(
        "python3 -m verl.trainer.main_ppo --config-name ppo_megatron_trainer "
        "actor_rollout_ref.model.path=Qwen/Qwen3.5-35B-A3B actor_rollout_ref.rollout.n=8\n"
    )
    done = cli("import", str(script), "--out", str(tmp_path / "p"))
    assert done.code == 0, done.said
    assert "--config-name ppo_megatron_trainer: a Hydra flag" in done.out  # one line, its value with it


A3_2X16 = Path(__file__).parents[1] / "import_scripts" / "qwen3_5_35b_a3_2x16.sh"


def test_a_short_script_imports_into_a_preset_that_alone_is_the_script(imported, cli):
    """Issue 40's new user: 15 overrides for 2 x 16 A3 with TensorBoard. The preset folder holds all of it (no
    `~KEY` on the command line), the report claims nothing the composed preset lacks, and the printed command
    gives a verdict (the script's own mistakes, refused naming keys), never a traceback."""
    done, out = imported(A3_2X16, "npu")
    assert done.code == 0, done.said
    command = done.out.strip().splitlines()[-1]
    assert " ~" not in command and "~" not in command.split("logger=")[-1]
    assert "still differs" not in done.out
    preset = _preset_config(command)
    said = [line.split(":", 1)[0].strip() for line in _section(done.out, "changed by us:")]
    kept = [key for key in said if f"{key}: kept from the preset" in done.out]
    assert kept and [k for k in kept if k not in preset] == []  # every variable said kept is in the preset
    assert "ENV.WANDB_DIR" not in done.out  # the script's logger group has no wandb
    recorded = run_script(A3_2X16, "npu")
    env = {k: v.replace("${oc.env:HOME}", str(Path.home())) for k, v in recorded.env.items()}
    script = _script_config(recorded.overrides, env)
    unreported = _differences(script, preset) - _reported(done.out)
    assert not unreported, {k: (script.get(k), preset.get(k)) for k in unreported}
    assert (
        "actor_rollout_ref.actor.optim.override_optimizer_config"
        in _section(done.out, next(line for line in done.out.splitlines() if line.startswith("ours only, left out")))[1]
    )
    checked = cli(*shlex.split(command)[1:], "dry_run=true")
    assert checked.code == 2 and "verdict    REFUSED" in checked.said, checked.said
    assert "Traceback" not in checked.said and "[actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu]" in checked.said
