"""The whole configured run before booking: verl's step count, wall time, checkpoint size, saves and disk.

One composition (35B on one 8-GPU node); each case changes a few resolved keys of a copy.
"""

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from omegaconf import OmegaConf

from verl_qwen35.builder.build import build_run
from verl_qwen35.config import compose
from verl_qwen35.model.memory import ModelFacts
from verl_qwen35.planner.whole_run import seconds_per_step, whole_run, whole_run_lines

GIB = 1 << 30
CONTENTS = "actor_rollout_ref.actor.checkpoint.save_contents"
DIST = "actor_rollout_ref.actor.megatron.use_dist_checkpointing"


@pytest.fixture(scope="module")
def base():
    cfg = compose(["model=35b", "device=gpu"])
    OmegaConf.resolve(cfg)
    return cfg


def changed(base, **keys):
    """The Run of `base` with these keys set (the one builder's variant)."""
    return build_run(base, mode="dry", changes={key.replace("__", "."): value for key, value in keys.items()})[0]


@pytest.mark.parametrize(
    ("steps", "save_freq", "keep", "saves", "on_disk"),
    [
        (100, 20, None, 5, 5),  # every save kept (verl's default: max_actor_ckpt_to_keep null)
        (101, 20, 1, 6, 2),  # the last step saves too; keep 1 holds the old one until the new one is written
        (320, 50, 3, 7, 3),  # keep >= 2: deleted down to keep - 1 before each save
        (100, -1, 2, 0, 0),  # save_freq <= 0: no checkpoint
    ],
)
def test_saves_and_disk_follow_verls_save_freq_and_keep_rules(base, steps, save_freq, keep, saves, on_disk):
    cfg = changed(
        base,
        trainer__total_training_steps=steps,
        trainer__save_freq=save_freq,
        trainer__max_actor_ckpt_to_keep=keep,
    )
    run = whole_run(cfg)
    c = run.checkpoint
    assert (run.steps, c.saves, c.kept_at_peak) == (steps, saves, on_disk)
    assert c.disk_gib == pytest.approx(on_disk * c.gib)
    step = seconds_per_step(cfg)
    writes = saves * c.write_seconds
    assert run.wall_hours.point == pytest.approx((steps * step.point + writes) / 3600)
    assert run.device_hours.point == pytest.approx(run.wall_hours.point * 8)


def test_a_save_is_bf16_weights_and_fp32_adam_state_per_save_contents(base):
    """35B-A3B: ~35B parameters (text, vision tower) -> ~65 GiB of bf16 weights and 6x that of optimizer state."""
    default = whole_run(changed(base)).checkpoint
    assert set(default.parts_gib) == {"model_hf", "optimizer"}  # use_dist_checkpointing=false: `model` is HF
    assert 64 < default.parts_gib["model_hf"] < 67 and default.parts_gib["optimizer"] == pytest.approx(
        6 * default.parts_gib["model_hf"]
    )
    both = whole_run(changed(base, **{CONTENTS: ["model", "hf_model"], DIST: True})).checkpoint
    assert set(both.parts_gib) == {"model_dist_ckpt", "model_hf"}
    once = whole_run(changed(base, **{CONTENTS: ["model", "hf_model", "extra"], DIST: False})).checkpoint
    assert set(once.parts_gib) == {"model_hf"}, "HF weights are saved once"
    otc = "actor_rollout_ref.actor.megatron.override_transformer_config"
    mtp = whole_run(changed(base, **{f"{otc}.mtp_num_layers": 1})).checkpoint
    facts = ModelFacts.of(base.model)
    extra = mtp.parts_gib["model_hf"] - default.parts_gib["model_hf"]
    assert extra * GIB / 2 == pytest.approx(facts.attention_layer + facts.moe_layer + facts.mtp_extra)


def test_the_write_time_follows_the_stated_rate_and_a_bad_rate_names_its_key(base):
    slow = whole_run(changed(base)).checkpoint
    fast = whole_run(changed(base, hardware__checkpoint_write_gbps=4.0)).checkpoint
    assert slow.write_gbps_per_node == 2.0 and fast.write_seconds == pytest.approx(slow.write_seconds / 2)
    assert slow.write_seconds == pytest.approx(slow.gib * GIB / 1e9 / 2.0)  # one node
    lines = whole_run_lines(changed(base, hardware__checkpoint_write_gbps=0.0))
    assert lines == ["run        not computed: hardware.checkpoint_write_gbps=0.0: the checkpoint write rate needs a "
                     "number > 0 (GB/s)"]  # fmt: skip


def test_steps_come_from_the_data_when_readable_and_are_not_invented_when_not(base, tmp_path):
    rows = tmp_path / "train.parquet"
    pq.write_table(pa.table({"prompt": ["p"] * 1000}), rows)
    known = whole_run(changed(base, data__train_files=str(rows), trainer__total_epochs=3, trainer__save_freq=5))
    batch = base.data.train_batch_size
    assert known.steps == 1000 // batch * 3
    assert known.steps_from == f"1000 rows // data.train_batch_size={batch} = {1000 // batch} a epoch x " + (
        "trainer.total_epochs=3"
    )
    unknown = changed(base, data__train_files=str(tmp_path / "absent.parquet"))
    run = whole_run(unknown)
    assert (run.steps, run.wall_hours, run.checkpoint.saves, run.checkpoint.disk_gib) == (None, None, None, None)
    assert run.steps_from.startswith(f"unknown: {tmp_path / 'absent.parquet'} is not readable here")
    lines = whole_run_lines(unknown)
    assert lines[0].startswith("run        ? training steps (unknown: ") and "trainer.total_training_steps" in lines[0]
    assert "h wall" not in "".join(lines) and "saves and disk unknown until the step count is" in lines[-1]
    assert run.as_dict()["checkpoint"]["gib_per_save"] == pytest.approx(run.checkpoint.gib, abs=0.01)
