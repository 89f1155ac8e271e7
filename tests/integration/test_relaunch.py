"""launch.yaml: what a launch records, and every damaged record answered with one message and exit 2.

The launch itself (and a relaunch from another directory resuming the same checkpoint) runs
for real through verl and Ray in tests/system/test_forwarding.py.
"""

import re
from pathlib import Path

import pytest
import yaml
from omegaconf import OmegaConf

from verl_qwen35.cli.relaunch import main as relaunch
from verl_qwen35.config import compose
from verl_qwen35.installed import installed_verl_schema
from verl_qwen35.records.launch import read_launch_file
from verl_qwen35.run.launch_record import write_launch_file

# On every verl CI tests (-m each_verl): launch records of the installed verl's schema.
pytestmark = pytest.mark.each_verl

SECRET = "hf_live_0123456789abcdef"


def recorded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *overrides: str) -> Path:
    monkeypatch.chdir(tmp_path)
    cfg = compose(["model=122b", "device=npu", *overrides])
    OmegaConf.resolve(cfg)
    return write_launch_file(cfg, tmp_path)


def test_the_record_holds_the_env_really_used_an_absolute_checkpoint_and_the_schema(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("OMP_NUM_THREADS", "4")  # the shell's value wins over the config's "1"
    monkeypatch.setenv("HF_TOKEN", SECRET)
    path = recorded(tmp_path, monkeypatch)
    text = path.read_text()
    data = yaml.safe_load(text)
    meta, config = data["verl_qwen35"], data["config"]
    assert meta["env_used"]["OMP_NUM_THREADS"] == "4" and config["env"]["set"]["OMP_NUM_THREADS"] == "4"
    assert meta["env_used"]["https_proxy"] == ""
    assert SECRET not in text and "HF_TOKEN" in meta["secrets_not_recorded"] and "export them again" in meta["note"]
    checkpoint = config["trainer"]["default_local_dir"]
    assert Path(checkpoint).is_absolute() and checkpoint.startswith(str(tmp_path))
    assert meta["checkpoint_dir"] == checkpoint and meta["verl_schema"] == installed_verl_schema()
    err = capsys.readouterr().err
    assert "4 nodes" in err and "trainer.default_local_dir" in err and "every node" in err


def test_the_record_reads_back_as_the_same_config(tmp_path, monkeypatch):
    path = recorded(tmp_path, monkeypatch)
    cfg, meta = read_launch_file(path)
    assert cfg.trainer.default_local_dir == meta["checkpoint_dir"]
    assert cfg.actor_rollout_ref.actor.megatron.tensor_model_parallel_size == 2


def _good(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    return recorded(tmp_path, monkeypatch).read_text()


DAMAGED = {
    "empty": (lambda good: "", "empty"),
    "comment-only": (lambda good: "# nothing\n", "empty"),
    "a-list": (lambda good: "- a\n- b\n", "mapping"),
    "a-string": (lambda good: "just text\n", "mapping"),
    "unparsable": (lambda good: "config: [1\n", "line 2"),
    "truncated": (lambda good: good[: len(good) // 3].rsplit("\n", 3)[0] + "\n  broken: [\n", "YAML"),
    "binary": (lambda good: "\x00\x01\x02\x03", "binary"),
    "no-config": (lambda good: good.split("\nconfig:")[0] + "\n", "lacks config"),
    "no-metadata": (lambda good: "config:" + good.split("\nconfig:")[1], "lacks verl_qwen35"),
    "config-not-mapping": (lambda good: good.split("\nconfig:")[0] + "\nconfig: 3\n", "mappings"),
    "config-lacks-trainer": (
        lambda good: yaml.safe_dump({**yaml.safe_load(good), "config": {"data": {"train_batch_size": 1}}}),
        "lacks trainer",
    ),
    "other-schema": (lambda good: good.replace("verl_schema: v0_", "verl_schema: v9_"), "verl_schema=v9_"),
    # A record is data: an interpolation planted in it is refused by key, never resolved (the secret never shown).
    "interpolation": (
        lambda good: re.sub(r"experiment_name: .*", "experiment_name: ${oc.env:HOME}", good),
        ".experiment_name holds an interpolation",
    ),
    "alias-bomb": (
        lambda good: (
            "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
            + "".join(f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 10)}]\n" for i in range(7))
        ),
        "alias",
    ),
}


@pytest.mark.parametrize("damage", sorted(DAMAGED))
def test_a_damaged_launch_file_is_refused_with_one_message(tmp_path, monkeypatch, capsys, damage):
    make, named = DAMAGED[damage]
    good = _good(tmp_path, monkeypatch)
    run = tmp_path / "run"
    run.mkdir()
    (run / "launch.yaml").write_text(make(good))
    capsys.readouterr()
    with pytest.raises(SystemExit) as stop:
        relaunch([str(run)])
    err = capsys.readouterr().err
    assert stop.value.code == 2
    assert "Traceback" not in err and named in err, err
    assert len(err.strip().splitlines()) == 1 and "launch.yaml" in err


def test_a_run_dir_without_launch_file_is_refused(tmp_path, capsys):
    with pytest.raises(SystemExit) as stop:
        relaunch([str(tmp_path)])
    assert stop.value.code == 2 and "launch.yaml" in capsys.readouterr().err
