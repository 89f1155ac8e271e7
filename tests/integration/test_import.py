"""`verl-qwen35 import`: a verl launch script (or its recorded overrides) becomes a --config-dir preset that
composes to the script's own config, key for key, but for the fixes the report lists."""

import itertools
import shlex
from pathlib import Path

import pytest
import yaml
from hydra import compose, initialize_config_dir

from verl_qwen35.config import compose as compose_ours
from verl_qwen35.imports.script import read_overrides, run_script
from verl_qwen35.installed import installed_verl_schema, verl_config_dir
from verl_qwen35.review.flat import flatten
from verl_qwen35.run.environment import effective_env

FIDELITY = Path(__file__).parents[1] / "seed_fidelity"
FIXTURE = Path(__file__).parents[1] / "import_scripts" / "qwen3_5_35b_style.sh"
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
    lines = report.split("fixed on the way:", 1)[1].splitlines()
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


@pytest.mark.each_verl
@pytest.mark.parametrize("listed", LISTS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_an_imported_list_composes_to_the_script_but_for_the_reported_fixes(listed, cli, tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", "/home/user")
    device = listed.stem.split("_")[1]
    done = cli("import", str(listed), "--device", device, "--out", str(tmp_path / "preset"))
    assert done.code == 0, done.said
    assert "still differs" not in done.out
    recorded = read_overrides(listed)
    not_mapped = _section(done.out, "not mapped:")
    lacking = [line for line in recorded.overrides if line.startswith(NOT_IN_VERL[installed_verl_schema()])]
    assert sorted(line.split(": ", 1)[0].strip() for line in not_mapped) == sorted(lacking)
    script = _script_config(recorded.overrides, recorded.env)
    preset = _preset_config(done.out.strip().splitlines()[-1])
    unreported = _differences(script, preset) - _reported(done.out)
    assert not unreported, {k: (script.get(k), preset.get(k)) for k in unreported}
    command = done.out.strip().splitlines()[-1]
    assert f"model={listed.stem.split('_')[0]}" in command
    checked = cli(*shlex.split(command)[1:], "dry_run=true")
    assert checked.code == 0 and "verdict    OK" in checked.out, checked.said


@pytest.mark.each_verl
@pytest.mark.parametrize("device", ["gpu", "npu"])
def test_a_script_in_verls_style_records_the_overrides_verl_recorded(device):
    recorded = run_script(FIXTURE, device)
    upstream = read_overrides(FIDELITY / "upstream_overrides" / f"35b_{device}.txt")
    assert recorded.overrides == [line.replace("/home/user", "${oc.env:HOME}") for line in upstream.overrides]
    assert recorded.env == upstream.env
    assert recorded.unset_proxies is False  # the 35B script never clears proxies


def test_the_report_ends_with_a_command_whose_dry_run_passes(cli, tmp_path):
    done = cli("import", str(FIXTURE), "--device", "npu", "--out", str(tmp_path / "preset"))
    assert done.code == 0, done.said
    command = done.out.strip().splitlines()[-1]
    assert command.startswith(f"verl-qwen35 --config-dir {tmp_path / 'preset'} device=npu model=35b")
    assert "proxies cleared on every device" in done.out
    assert "parallel/imported.yaml:pp = 2" not in done.out  # 35b_npu's own layout: nothing to write
    checked = cli(*shlex.split(command)[1:], "dry_run=true")
    assert checked.code == 0, checked.said
    assert "verdict    OK" in checked.out


def test_a_changed_layout_lands_in_parallel(cli, tmp_path):
    script = tmp_path / "mine.sh"
    text = FIXTURE.read_text().replace("gpu) TP=2; PP=1; EP=8;", "gpu) TP=${TP:-2}; PP=${PP:-1}; EP=${EP:-8};")
    (tmp_path / "fixture.sh").write_text(text)
    script.write_text(f"TP=4 PP=2 EP=4 exec bash {tmp_path / 'fixture.sh'} actor_rollout_ref.rollout.n=8\n")
    done = cli("import", str(script), "--out", str(tmp_path / "preset"))
    assert done.code == 0, done.said
    layout = yaml.safe_load((tmp_path / "preset" / "parallel" / "imported.yaml").read_text())
    assert {k: layout[k] for k in ("tp", "pp", "ep")} == {"tp": 4, "pp": 2, "ep": 4}
    assert "parallel=imported" in done.out.splitlines()[-1]
    cfg = compose_ours(shlex.split(done.out.splitlines()[-1])[3:], [tmp_path / "preset"])
    assert cfg.actor_rollout_ref.ref.megatron.tensor_model_parallel_size == 4
    assert cfg.actor_rollout_ref.rollout.n == 8
    # verl derives actor.rollout_n (and the critic's) from rollout.n: not written, so they keep following it
    assert "rollout_n" not in (tmp_path / "preset" / "tuning" / "imported.yaml").read_text()
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


def test_secrets_are_not_written(cli, tmp_path):
    token = "hf_" + "a1B2c3D4e5F6g7H8i9J0kLmN"
    script = tmp_path / "secret.sh"
    script.write_text(
        f"export WANDB_API_KEY=0123456789abcdef0123\nexport MY_NOTE=keep\n"
        f"python3 -m verl.trainer.main_ppo model_engine=megatron actor_rollout_ref.model.path=Qwen/Qwen3.5-35B-A3B "
        f"trainer.experiment_name={token}\n"
    )
    done = cli("import", str(script), "--out", str(tmp_path / "preset"))
    assert done.code == 0, done.said
    written = "".join(p.read_text() for p in (tmp_path / "preset").rglob("*.yaml"))
    assert "0123456789abcdef0123" not in written and token not in written and "WANDB_API_KEY" not in written
    assert "MY_NOTE: keep" in written
    assert "WANDB_API_KEY: not written" in done.out and "trainer.experiment_name: not written" in done.out
    assert token not in done.out


def test_values_are_written_as_yaml_data_not_as_config(cli, tmp_path, monkeypatch):
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


def test_proxies_cleared_on_one_device_only_are_cleared_on_every_device(cli, tmp_path):
    text = FIXTURE.read_text().replace(
        "    export CPU_AFFINITY_CONF=1\n", "    export CPU_AFFINITY_CONF=1\n    unset http_proxy https_proxy\n"
    )
    (tmp_path / "mine.sh").write_text(text)
    done = cli("import", str(tmp_path / "mine.sh"), "--device", "gpu", "--out", str(tmp_path / "preset"))
    assert done.code == 0, done.said
    assert "ENV.http_proxy: proxies cleared on every device (it clears them on npu only)" in done.out
    on_npu = cli("import", str(tmp_path / "mine.sh"), "--device", "npu", "--out", str(tmp_path / "npu"))
    assert "proxies cleared" not in on_npu.out
