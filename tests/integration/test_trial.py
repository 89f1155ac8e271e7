"""The trial group (conf/trial/): any preset becomes a short real run of the same layout and recipe, and the resume
drill's two jobs compose, and a dry run accepts them (the fast one for every preset, the full one on GPU and NPU)."""

import pytest
from omegaconf import OmegaConf

from tests.runs import preflight
from tests.tiny_data import write_geo3k_stub
from verl_qwen35.config import compose
from verl_qwen35.config.choices import options, presets

pytestmark = pytest.mark.each_verl

# Every verl key a trial may change, by option; anything else differing from the run as configured is a defect
# (the layout, recipe, model and data stay those of the real run).
SHORT = {
    "trainer.total_training_steps",
    "trainer.val_before_train",
    "trainer.test_freq",
    "trainer.save_freq",
    "trainer.resume_mode",
    "trainer.logger",
    "data.train_max_samples",
    "env.set.VERL_FILE_LOGGER_PATH",
    "logger.file",
    "ray_kwargs.ray_init.runtime_env.env_vars.VERL_FILE_LOGGER_PATH",
}
DRILL = SHORT | {"trainer.default_local_dir", "trainer.resume_from_path"}


def flat(node, prefix=""):
    """key -> leaf value of a resolved config (the `trial` node itself left out: it only describes)."""
    out = {}
    for key, value in node.items():
        name = f"{prefix}{key}"
        if name == "trial":
            continue
        if isinstance(value, dict) and value:
            out.update(flat(value, f"{name}."))
        else:
            out[name] = value
    return out


def resolved(*overrides):
    cfg = compose(list(overrides))
    OmegaConf.resolve(cfg)
    return cfg


def changed(a, b) -> set[str]:
    fa, fb = flat(OmegaConf.to_container(a)), flat(OmegaConf.to_container(b))
    return {k for k in fa.keys() | fb.keys() if fa.get(k) != fb.get(k)}


def test_the_group_offers_none_short_and_the_drill():
    assert options("trial") == ["drill_resume", "drill_save", "none", "short"]


@pytest.mark.parametrize(("model", "device"), presets())
def test_every_preset_becomes_a_short_run_and_the_dry_run_accepts_it(model, device):
    base = resolved(f"model={model}", f"device={device}")
    batch = base.data.train_batch_size
    for option, allowed in (("short", SHORT), ("drill_save", DRILL), ("drill_resume", DRILL)):
        cfg = resolved(f"model={model}", f"device={device}", f"trial={option}")
        assert changed(base, cfg) <= allowed, f"trial={option} changes more than a short run needs"
        t = cfg.trainer
        assert (t.val_before_train, t.test_freq) == (False, -1)
        assert "file" in t.logger and cfg.env.set.VERL_FILE_LOGGER_PATH == "metrics.jsonl"
        assert cfg.parallel == base.parallel and cfg.actor_rollout_ref.actor.optim == base.actor_rollout_ref.actor.optim
        errors = [str(p) for p in preflight(cfg, machine_missing="warning") if p.level == "error"]
        assert not errors, f"trial={option}: {errors}"
        if option == "short":
            assert (t.total_training_steps, t.save_freq, t.resume_mode) == (4, -1, "disable")
            assert cfg.data.train_max_samples == 4 * batch  # no more prompts than the steps use
        elif option == "drill_save":
            assert (t.total_training_steps, t.save_freq, t.resume_mode) == (4, 4, "disable")
            assert cfg.data.train_max_samples == 5 * batch  # the resumed step's prompts too
        else:
            assert (t.total_training_steps, t.save_freq, t.resume_mode) == (5, -1, "resume_path")
            assert t.resume_from_path == f"{t.default_local_dir}/global_step_4"
            assert cfg.data.train_max_samples == 5 * batch


def test_the_steps_and_the_drill_folder_are_one_key_each(tmp_path):
    cfg = resolved("trial=drill_resume", "trial.steps=6", f"trial.checkpoint_dir={tmp_path}")
    t = cfg.trainer
    assert (t.total_training_steps, t.resume_from_path) == (7, f"{tmp_path}/global_step_6")
    assert cfg.data.train_max_samples == 7 * cfg.data.train_batch_size


def test_a_plain_run_saves_nothing_warning_but_a_trial_does_not(cli):
    plain = cli("dry_run=true", "trainer.save_freq=-1")
    assert "WARNING [trainer.save_freq]" in plain.err
    trial = cli("dry_run=true", "trial=short")
    assert trial.code == 0, trial.err
    assert "WARNING [trainer.save_freq]" not in trial.err
    assert "run        4 training steps (trainer.total_training_steps=4)" in trial.out
    assert "| file " in trial.out  # the logs line: the file backend calibrate reads


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> list[str]:
    return write_geo3k_stub(tmp_path_factory.mktemp("data"))


@pytest.mark.parametrize(("device", "option"), [("gpu", "drill_save"), ("npu", "drill_resume")])
def test_the_full_dry_run_accepts_the_drill(cli, data, device, option):
    """verl's own start-up rehearsed on CPU: datasets and dataloaders of the trial's steps, LR schedule, checkpoint
    configs. The resumed checkpoint does not exist before its first job has run: a warning, not a refusal. (In
    process: the command line is the same as in a shell; tests/integration/test_rehearsal_agrees.py runs one
    full dry run as a subprocess.)"""
    run = cli("model=35b", f"device={device}", f"trial={option}", "dry_run=full", *data)
    assert run.code == 0, run.out[-3000:] + run.err[-3000:]
    steps = 4 if option == "drill_save" else 5
    assert f"dataloaders ({steps} steps)" in run.out
    assert f"{steps} optimizer steps" in run.out
    if option == "drill_resume":
        assert "does not exist yet: the resume drill's first job (trial=drill_save" in run.err


def test_a_trial_option_wins_over_the_layout_and_tuning_groups(tmp_path):
    """`plan --trial` writes each job's layout and micro-batch keys into a trial option: the trial group comes after
    `parallel` and `tuning` in the defaults list, so its values are the ones applied (122B NPU's tuning sets 4)."""
    (tmp_path / "trial").mkdir()
    (tmp_path / "trial" / "mine.yaml").write_text(
        "# @package _global_\ndefaults:\n  - short\n  - _self_\nparallel:\n  tp: 4\n"
        "actor_rollout_ref:\n  rollout:\n    log_prob_micro_batch_size_per_gpu: 2\n"
    )
    cfg = compose(["model=122b", "device=npu", "trial=mine"], config_dirs=[tmp_path])
    OmegaConf.resolve(cfg)
    assert cfg.actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu == 2
    assert cfg.actor_rollout_ref.actor.megatron.tensor_model_parallel_size == 4
    assert cfg.trainer.total_training_steps == 4 and cfg.trial.name == "short"
