"""Resume and relaunch see a Megatron checkpoint written by the other verl (v1 by 0.8, v2 by 0.9; verl PR #6014)
before any device starts, and say the migration; resume_mode / resume_from_path against what is on disk.

The fake checkpoints hold the file names verl's own checkpoint code writes (no tensors: the detection, like
verl 0.9.1's MegatronCheckpointManager._raise_for_old_layout, reads directory names only).
"""

from pathlib import Path

import pytest
from omegaconf import OmegaConf

from verl_qwen35.checks.checkpoint_layout import written_layout
from verl_qwen35.config import compose
from verl_qwen35.installed import installed_verl_schema
from verl_qwen35.run.launch_record import write_launch_file

# On every verl CI tests (-m each_verl): the checkpoint layout of each verl version.
pytestmark = pytest.mark.each_verl

# verl 0.8.0 MegatronCheckpointManager.save_checkpoint: <role>/dist_ckpt (torch_dist), <role>/huggingface (mbridge).
V1 = ["dist_ckpt/.metadata", "dist_ckpt/__0_0.distcp", "huggingface/config.json", "transformer_config.json"]
# verl 0.9.1: model/ optimizer/ extra/ (MANIFEST_SCHEMA_VERSION = 2), the manifest written last.
V2 = [
    "model/huggingface/config.json",
    "optimizer/dist_ckpt/.metadata",
    "extra/dist_ckpt/.metadata",
    "transformer_config.json",
    "ckpt_contents.json",
]
OWN, OTHER = (V1, V2) if installed_verl_schema() == "v0_8" else (V2, V1)
BASE = ["device=gpu", "model=35b", "dry_run=true"]


def checkpoint(root: Path, step: int, files: list[str], tracker: str | None = None) -> Path:
    """<root>/global_step_<step>/actor with these files, and the tracker file verl writes after each save."""
    actor = root / f"global_step_{step}" / "actor"
    actor.mkdir(parents=True, exist_ok=True)
    for name in files:
        (actor / name).parent.mkdir(parents=True, exist_ok=True)
        (actor / name).write_text("{}")
    (root / "latest_checkpointed_iteration.txt").write_text(str(step) if tracker is None else tracker)
    return actor.parent


def test_the_layouts_are_told_apart(tmp_path):
    """Also on verl 0.8, where verl's own check below does not exist; an empty or missing role is neither."""
    found = [written_layout(checkpoint(tmp_path / name, 1, files) / "actor") for name, files in [("a", V1), ("b", V2)]]
    assert found == ["v1", "v2"]
    assert written_layout(checkpoint(tmp_path / "c", 1, []) / "actor") is None


@pytest.mark.skipif(installed_verl_schema() != "v0_9", reason="verl 0.9.1's own layout check")
@pytest.mark.parametrize(("files", "legacy"), [(V1, True), (V2, False), (["transformer_config.json"], False)])
def test_the_detection_agrees_with_verl_0_9s_own(tmp_path, files, legacy):
    from verl.utils.checkpoint.megatron_checkpoint_manager import MegatronCheckpointManager

    actor = checkpoint(tmp_path, 3, files) / "actor"
    try:
        MegatronCheckpointManager._raise_for_old_layout(str(actor))
        refused = False
    except RuntimeError as err:
        refused = "migrate_megatron_checkpoint_layout.py" in str(err)
    assert refused is legacy and (written_layout(actor) == "v1") is legacy


def test_resume_path_to_the_other_layout_is_refused_naming_the_key_and_the_fix(cli, tmp_path):
    step = checkpoint(tmp_path / "ckpt", 20, OTHER)
    said = cli(*BASE, "trainer.resume_mode=resume_path", f"trainer.resume_from_path={step}")
    assert said.code == 2, said.said
    (line,) = [ln for ln in said.err.splitlines() if ln.startswith("ERROR") and "checkpoint" in ln]
    assert "trainer.resume_from_path" in line
    if OTHER is V1:
        assert f"migrate_megatron_checkpoint_layout.py --checkpoint {step / 'actor'}" in line
    else:
        assert "verl 0.9" in line and "resume_mode=disable" in line


def test_resume_path_to_the_own_layout_passes(cli, tmp_path):
    step = checkpoint(tmp_path / "ckpt", 20, OWN)
    said = cli(*BASE, "trainer.resume_mode=resume_path", f"trainer.resume_from_path={step}")
    assert said.code == 0, said.said
    assert "checkpoint" not in said.err


def test_auto_resume_reads_the_tracker_and_refuses_the_other_layout(cli, tmp_path):
    root = tmp_path / "ckpt"
    checkpoint(root, 5, OWN)
    checkpoint(root, 10, OTHER)  # the tracker names the newest, step 10
    said = cli(*BASE, f"trainer.default_local_dir={root}")
    assert said.code == 2, said.said
    (line,) = [ln for ln in said.err.splitlines() if ln.startswith("ERROR") and "global_step_10" in ln]
    assert "trainer.default_local_dir" in line and "resume_mode=auto" in line


def test_auto_resume_of_the_own_layout_and_a_fresh_start_pass(cli, tmp_path):
    checkpoint(tmp_path / "ckpt", 10, OWN)
    assert cli(*BASE, f"trainer.default_local_dir={tmp_path / 'ckpt'}").code == 0
    assert cli(*BASE, f"trainer.default_local_dir={tmp_path / 'empty'}").code == 0


def test_resume_mode_disable_ignores_what_is_on_disk(cli, tmp_path):
    checkpoint(tmp_path / "ckpt", 10, OTHER)
    said = cli(*BASE, f"trainer.default_local_dir={tmp_path / 'ckpt'}", "trainer.resume_mode=disable")
    assert said.code == 0, said.said


def test_a_tracker_that_is_not_a_step_is_refused_naming_the_key(cli, tmp_path):
    checkpoint(tmp_path / "ckpt", 10, OWN, tracker="ten\n")
    said = cli(*BASE, f"trainer.default_local_dir={tmp_path / 'ckpt'}")
    assert said.code == 2, said.said
    (line,) = [ln for ln in said.err.splitlines() if ln.startswith("ERROR")]
    assert "trainer.default_local_dir" in line and "'ten'" in line and "Traceback" not in said.said


def test_a_tracker_naming_a_missing_step_warns_that_verl_starts_from_scratch(cli, tmp_path):
    checkpoint(tmp_path / "ckpt", 10, OWN, tracker="30")
    said = cli(*BASE, f"trainer.default_local_dir={tmp_path / 'ckpt'}")
    assert said.code == 0, said.said
    assert "global_step_30 does not exist" in said.err and "from scratch" in said.err


def test_relaunch_refuses_a_checkpoint_of_the_other_layout_before_launching(tmp_path, monkeypatch, capsys):
    from verl_qwen35.cli.relaunch import main as relaunch

    monkeypatch.chdir(tmp_path)
    cfg = compose(["model=35b", "device=gpu", f"trainer.default_local_dir={tmp_path / 'ckpt'}"])
    OmegaConf.resolve(cfg)
    write_launch_file(cfg, tmp_path)
    checkpoint(tmp_path / "ckpt", 20, OTHER)
    capsys.readouterr()
    assert relaunch([str(tmp_path)]) == 2
    err = capsys.readouterr().err
    (line,) = [ln for ln in err.splitlines() if "global_step_20" in ln]
    assert line.startswith("ERROR") and "trainer.default_local_dir" in line, err
