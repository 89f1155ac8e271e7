"""The planner tries smaller micro-batches for a layout that does not fit at the configured ones, and says so in
the override line the dry run accepts; a layout that fits keeps the config's micro-batches."""

import json

import pytest
from omegaconf import OmegaConf

from verl_qwen35 import resolve
from verl_qwen35.config import compose
from verl_qwen35.planner.batches import KEYS
from verl_qwen35.planner.plan import UsageError, overrides_of
from verl_qwen35.planner.search import search
from verl_qwen35.planner.whole_run import predicted_step
from verl_qwen35.run.layout_sweep import applied, batch_keys, sweep_overrides, write_sweep

MICRO = "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu"
LOG_PROB = "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu"


def resolved(*overrides: str):
    """The Run of these overrides, as the planner reads it."""
    return resolve(compose(list(overrides)))


def test_a_layout_that_needs_a_smaller_micro_batch_is_listed_with_it_and_its_line_passes_the_dry_run(cli):
    """122B on its 4 x 8 GPUs at 8 sequences a micro-batch: the best layouts hold 4, and their line says so."""
    user = ["model=122b", "device=gpu", f"{MICRO}=8"]
    run = cli("plan", *user, "--top", "1", "--json")
    assert run.code == 0, run.err
    row = json.loads(run.out)[0]
    assert row["fits"] and 1 <= row["layout"][MICRO] < 8
    assert row["overrides"].count(f"{MICRO}={row['layout'][MICRO]}") == 1 and f"{MICRO}=8" not in row["overrides"]
    dry = cli(*row["overrides"], "dry_run=true")
    assert dry.code == 0, dry.err
    assert "verdict    OK" in dry.out
    assert f"update_actor {row['step_time']['phases']['update_actor']:.1f}," in dry.out  # timed at its micro-batch
    # The same layout at the configured 8 does not fit: the dry run of the user's line refuses it for memory.
    layout_only = [o for o in row["overrides"] if not o.startswith(MICRO)]
    refused = cli(*layout_only, f"{MICRO}=8", "dry_run=true")
    assert refused.code != 0 and "training needs" in refused.err and MICRO in refused.err


def test_the_smaller_micro_batch_is_timed_slower_at_pp1(tmp_path):
    """Without a pipeline, a smaller micro-batch only runs smaller GEMMs: the plan's seconds are the dry run's at
    the changed micro-batch, above the same layout's at the configured one."""
    user = ["model=35b", "device=gpu", f"{MICRO}=8"]
    found = search(resolved(*user), top=0).candidates
    c = next(c for c in found if c.batches and c.layout.pp == 1)
    line = overrides_of(c.layout, c.split, changed=c.batches)
    assert dict(c.batches)[MICRO] < 8 and line[-1] == f"{MICRO}={dict(c.batches)[MICRO]}"
    smaller = predicted_step(resolved(*user, *line))
    configured = predicted_step(resolved(*user, *line[:-1]))
    assert smaller.total == pytest.approx(c.time.total)
    assert smaller.total > configured.total
    assert smaller.phases["update_actor"] > configured.phases["update_actor"]


def test_a_dynamic_token_budget_is_halved_down_to_one_sequence_and_no_further():
    """35B on NPU packs sequences by tokens: a budget of 256k is too much for some layouts, which get a smaller one,
    never below one sequence, prompt + response (verl's rearrange_micro_batches asserts it), nor above the
    configured."""
    budget = "actor_rollout_ref.actor.ppo_max_token_len_per_gpu"
    cfg = resolved("model=35b", "device=npu", f"{budget}=262144")
    found = search(cfg, top=0).candidates
    changed = [(c.layout.cp, dict(c.batches)[budget]) for c in found if budget in dict(c.batches)]
    longest = cfg.config.data.max_prompt_length + cfg.config.data.max_response_length
    # verl multiplies the budget by the context parallelism (prepare_micro_batches) before that assertion.
    assert changed and all(longest <= value * cp and value < 262144 for cp, value in changed)
    assert all(c.fits for c in found)


def test_a_micro_batch_that_fits_is_left_alone(cli):
    """35B on its 8 GPUs fits at 2 sequences a micro-batch: no listed layout changes a micro-batch key."""
    run = cli("plan", "model=35b", "device=gpu", f"{MICRO}=2", "--top", "3", "--json")
    assert run.code == 0, run.err
    for row in json.loads(run.out):
        assert not set(row["layout"]) & set(KEYS)
        assert [o for o in row["overrides"] if o.split("=")[0] in KEYS] == [f"{MICRO}=2"]
    assert all(not c.batches for c in search(resolved("model=35b", "device=gpu", f"{MICRO}=2"), top=0).candidates)


def test_a_sweep_writes_the_smaller_micro_batch_where_hydra_applies_it(tmp_path):
    """Each layout file sets the micro-batch keys any listed layout changes (the config's value where it keeps
    it), the sweep's command line no longer does, and Hydra composes each job with its file's value."""
    user = ["model=35b", "device=gpu", f"{MICRO}=8"]
    cfg = resolved(*user)
    found = search(cfg, top=0).candidates
    rows = [("1", next(c for c in found if c.batches)), ("2", next(c for c in found if not c.batches))]
    names = write_sweep(tmp_path, rows, cfg.config)
    kept = sweep_overrides(user, batch_keys(rows))
    assert f"{MICRO}=8" not in kept
    applied(tmp_path, kept, rows, names, cfg.config)  # Hydra applies the files' values
    for (_, c), name in zip(rows, names, strict=True):
        job = compose([*kept, f"parallel={name}"], config_dirs=[tmp_path])
        assert OmegaConf.select(job, MICRO) == dict(c.batches).get(MICRO, 8)


def test_a_sweep_refuses_a_micro_batch_that_a_later_group_would_override(tmp_path):
    """122B on NPU: its tuning file (after `parallel` in the defaults list) sets the log-prob micro-batch, so a
    layout file's smaller one would be overridden in every job: the sweep names the key instead."""
    ref = "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu"
    user = ["model=122b", "device=npu", f"{LOG_PROB}=32", f"{ref}=32", "actor_rollout_ref.actor.use_kl_loss=true"]
    cfg = resolved(*user)
    c = next(c for c in search(cfg, top=20).candidates if LOG_PROB in dict(c.batches))
    names = write_sweep(tmp_path, [("1", c)], cfg.config)
    with pytest.raises(UsageError, match=LOG_PROB.replace(".", r"\.") + ".*tuning or submit"):
        applied(tmp_path, sweep_overrides(user, batch_keys([("1", c)])), [("1", c)], names, cfg.config)
