"""One targeted case per preflight rule: a refusal that breaks only that rule (its reason asserted,
not only its key), and the accepting case at the boundary; numeric rules on both sides of it.

Cases call the rule functions in-process on plain numbers or on one composed config (copied per
case), so the whole file costs seconds; tests/integration/test_preflight.py and test_override_rules.py check the
same rules through `preflight` on whole configs.
"""

import copy
import dataclasses
import math
import re

import pytest
from omegaconf import OmegaConf, open_dict

from tests.configs import config, resolved
from tests.runs import preflight
from verl_qwen35.checks import bad_value_problems, device_of
from verl_qwen35.checks.batches import batch_problems, interleaving_problem, share_problems, uses_reference
from verl_qwen35.checks.layout import KEYS, layers_per_stage, sequence_parallel_problems
from verl_qwen35.checks.memory import WARN_FRACTION, estimate_of, memory_lines, memory_numbers, memory_problems
from verl_qwen35.checks.problem import Problem, error
from verl_qwen35.checks.submit import submit_problems
from verl_qwen35.checks.transformer import ARCH_FIELDS, ARCH_SWITCHES, mtp_problems, transformer_problems
from verl_qwen35.config import compose
from verl_qwen35.errors import UserError
from verl_qwen35.model.layout import Layout, divisors
from verl_qwen35.model.pipeline import Split, chunk_layers, split_problems, stage_layers
from verl_qwen35.run.devices import RESOURCE


def untyped(cfg):
    """The same config without the schema's types, as `OmegaConf.load` reads a plain verl config or launch.yaml."""
    return OmegaConf.create(OmegaConf.to_container(cfg))


def errors(cfg) -> list[str]:
    return [str(p) for p in preflight(cfg, machine_missing="warning") if p.level == "error"]


# --- batches.py: megatron's interleaved (VPP) schedule ---------------------------------------------------


@pytest.mark.parametrize(
    ("micro_batches", "pp", "group", "why"),
    [
        (4, 2, 4, None),  # group == micro-batches: the boundary passes
        (4, 2, 5, "needs pp=2 <= group <= micro-batches"),  # group one above the micro-batches
        (4, 2, 2, None),  # group == pp: the boundary passes
        (4, 2, 1, "needs pp=2 <= group <= micro-batches"),  # group one below pp
        (4, 2, None, None),  # no group: megatron uses pp
        (1, 2, None, "needs pp=2 <= group <= micro-batches"),  # the default group of pp=2 > 1 micro-batch
        (6, 2, 4, None),  # last group of 2 == pp passes
        (5, 2, 4, "leave a last group of 1 < pp=2"),  # last group of 1 < pp
        (8, 2, 4, None),  # whole groups only
        (7, 4, 4, "leave a last group of 3 < pp=4"),
    ],
)
def test_interleaved_schedule_boundaries(micro_batches, pp, group, why):
    got = interleaving_problem(micro_batches, pp, group)
    assert (got is None) if why is None else (why in got), got


@pytest.mark.parametrize(
    ("sequences", "dp", "micro", "vpp", "split", "vpp_why"),
    [
        (16, 4, 4, None, None, None),  # 16 = 4 ranks x 4: exact fit
        (15, 4, 4, None, "15 sequences do not split into DP=4 ranks x micro-batches of 4", None),
        (17, 4, 4, None, "17 sequences do not split into DP=4 ranks x micro-batches of 4", None),
        (16, 4, 2, 2, None, None),  # 2 micro-batches, pp=2 group of 2
        (8, 4, 2, 2, None, "needs pp=2 <= group <= micro-batches"),  # 1 micro-batch < pp
    ],
)
def test_share_problems_split_then_interleaving(sequences, dp, micro, vpp, split, vpp_why):
    got_split, got_vpp = share_problems(sequences, dp, micro, pp=2, vpp=vpp, group=None)
    assert got_split == split
    assert (got_vpp is None) if vpp_why is None else (vpp_why in got_vpp)


def _layout(cfg) -> Layout:
    return Layout.of(cfg)


def test_train_batch_below_mini_batch_is_refused_and_equal_passes():
    mini = "actor_rollout_ref.actor.ppo_mini_batch_size"
    base = config()
    train = base.data.train_batch_size
    ok = batch_problems(config(**{mini: train}), _layout(base), uses_reference(base))
    assert not [p for p in ok if "smaller than ppo_mini_batch_size" in p.message]
    refused = batch_problems(config(**{mini: train + 1}), _layout(base), uses_reference(base))
    (problem,) = [p for p in refused if "smaller than ppo_mini_batch_size" in p.message]
    assert problem.keys == ("data.train_batch_size", mini)
    assert f"train_batch_size={train} is smaller than ppo_mini_batch_size={train + 1}" in problem.message
    assert f"lower the mini batch to at most {train}" in problem.message


def test_a_mini_batch_that_does_not_divide_the_train_batch_is_refused_with_every_divisor():
    cfg = config(**{"data.train_batch_size": 12, "actor_rollout_ref.actor.ppo_mini_batch_size": 8})
    (problem,) = batch_problems(cfg, _layout(cfg), uses_reference(cfg))
    assert problem.keys == ("actor_rollout_ref.actor.ppo_mini_batch_size", "data.train_batch_size")
    assert problem.message.endswith("use a divisor of 12: [1, 2, 3, 4, 6, 12]")  # 12 itself included
    cfg = config(**{"data.train_batch_size": 16, "actor_rollout_ref.actor.ppo_mini_batch_size": 8})
    assert batch_problems(cfg, _layout(cfg), uses_reference(cfg)) == []


def test_a_micro_batch_that_does_not_split_the_step_names_every_key_that_sets_the_split():
    """train_batch_size*n and ppo_mini_batch_size*n over DP = world/(tp*pp*cp) ranks: any of them may be the fix."""
    actor, layout_keys = "actor_rollout_ref.actor", tuple(KEYS[k] for k in ("tp", "pp", "cp"))
    cfg = config(**{f"{actor}.ppo_micro_batch_size_per_gpu": 3})  # 32*5 = 160 sequences, DP=4: 160 % 12 != 0
    step, mini = batch_problems(cfg, _layout(cfg), uses_reference(cfg))
    assert step.keys[:3] == (
        "data.train_batch_size",
        "actor_rollout_ref.rollout.n",
        f"{actor}.ppo_micro_batch_size_per_gpu",
    )
    assert step.keys[3:] == layout_keys
    assert step.message.startswith("train_batch_size*n=32*5: 160 sequences do not split into DP=4 ranks x micro")
    assert mini.keys[:3] == (
        f"{actor}.ppo_mini_batch_size",
        f"{actor}.ppo_micro_batch_size_per_gpu",
        "actor_rollout_ref.rollout.n",
    )
    assert mini.keys[3:] == layout_keys
    assert "make it a multiple of 12 or change the micro-batch or layout" in mini.message


def test_micro_batch_unset_without_dynamic_batch_size_is_refused():
    key = "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu"
    cfg = config(**{key: None, "actor_rollout_ref.actor.use_dynamic_bsz": False})
    (problem,) = [p for p in batch_problems(cfg, _layout(cfg), uses_reference(cfg)) if p.keys == (key,)]
    assert "is not set and dynamic batch size is off" in problem.message
    dynamic = {
        "actor_rollout_ref.actor.use_dynamic_bsz": True,
        "actor_rollout_ref.rollout.log_prob_use_dynamic_bsz": True,
    }
    cfg = config(**{key: None, **dynamic})
    assert batch_problems(cfg, _layout(cfg), uses_reference(cfg)) == []


@pytest.mark.parametrize("training", [True, False])
def test_the_actors_training_and_log_prob_passes_need_one_dynamic_batch_switch(training):
    """verl's ActorRolloutRefWorker.init_model asserts actor.use_dynamic_bsz == rollout.log_prob_use_dynamic_bsz."""
    cfg = config(
        **{
            "actor_rollout_ref.actor.use_dynamic_bsz": training,
            "actor_rollout_ref.rollout.log_prob_use_dynamic_bsz": not training,
        }
    )
    (problem,) = [p for p in batch_problems(cfg, _layout(cfg), uses_reference(cfg)) if "use_dynamic_bsz" in p.keys[0]]
    assert problem.keys[0] == "actor_rollout_ref.rollout.log_prob_use_dynamic_bsz"
    assert f"set actor_rollout_ref.rollout.log_prob_use_dynamic_bsz={str(training).lower()}" in problem.message


def test_the_refs_log_prob_micro_batch_is_checked_when_only_the_actor_runs_dynamic_batches():
    """The ref has its own engine and switch (engine_workers.py: ref.use_dynamic_bsz = ref.log_prob_use_dynamic_bsz)."""
    key = "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu"
    cfg = config(
        **{
            "actor_rollout_ref.actor.use_dynamic_bsz": True,
            "actor_rollout_ref.rollout.log_prob_use_dynamic_bsz": True,
            "actor_rollout_ref.actor.use_kl_loss": True,
            "actor_rollout_ref.ref.log_prob_use_dynamic_bsz": False,
            key: 7,
        }
    )
    (problem,) = batch_problems(cfg, _layout(cfg), uses_reference(cfg))
    assert problem.keys[0] == key and "do not split into DP=" in problem.message


def test_log_prob_micro_batch_unset_is_refused_per_side():
    cfg = config(**{"actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu": None})
    found = [p for p in batch_problems(cfg, _layout(cfg), uses_reference(cfg)) if "log_prob" in p.keys[0]]
    assert [p.keys[0] for p in found] == ["actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu"]
    assert "is not set and dynamic batch size is off" in found[0].message
    cfg = config(
        **{
            "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu": None,
            "actor_rollout_ref.rollout.log_prob_use_dynamic_bsz": True,
            "actor_rollout_ref.actor.use_dynamic_bsz": True,  # one switch for the actor's two passes
        }
    )
    assert not [p for p in batch_problems(cfg, _layout(cfg), uses_reference(cfg)) if "log_prob" in p.keys[0]]


@pytest.mark.parametrize("side", ["rollout", "ref"])
def test_a_log_prob_micro_batch_the_interleaved_schedule_refuses_is_refused_per_side(side):
    """pp=2, vpp=2, DP=2: 160 sequences in log-prob micro-batches of 16 are 5 per rank, a last group of 1 < pp."""
    cfg = config(**{f"actor_rollout_ref.{side}.log_prob_micro_batch_size_per_gpu": 16})
    lo = dataclasses.replace(Layout.of(cfg), pp=2, vpp=2)  # 8 devices, tp=2: DP=2
    key = f"actor_rollout_ref.{side}.log_prob_micro_batch_size_per_gpu"
    (problem,) = batch_problems(cfg, lo, uses_reference(cfg))  # training's 80 micro-batches a rank are fine
    assert problem.keys == (key, KEYS["vpp"], "megatron.override_transformer_config.microbatch_group_size_per_vp_stage")
    assert problem.message.startswith("log-prob pass: 5 micro-batches leave a last group of 1 < pp=2")
    cfg = config(**{f"actor_rollout_ref.{side}.log_prob_micro_batch_size_per_gpu": 20})  # 4 a rank: 2 groups
    assert batch_problems(cfg, lo, uses_reference(cfg)) == []


# --- values.py: every number is an integer of the right sign (or null where allowed) ------------------

ARR, OTC, MEG = "actor_rollout_ref", "megatron.override_transformer_config", "actor_rollout_ref.actor.megatron"
# (key, null allowed, smallest value), restated from verl's typed config dataclasses and megatron-core.
INTEGER_KEYS = [
    *[(f"parallel.{k}", False, 1) for k in ("tp", "pp", "cp", "ep", "gen_tp", "gen_dp", "gen_ep", "nnodes")],
    ("parallel.devices_per_node", False, 1),
    ("parallel.etp", True, 1),
    ("parallel.vpp", True, 1),
    *[
        (f"{MEG}.{k}", False, 1)
        for k in ("tensor_model_parallel_size", "pipeline_model_parallel_size", "context_parallel_size")
    ],
    (f"{MEG}.expert_model_parallel_size", False, 1),
    (f"{MEG}.virtual_pipeline_model_parallel_size", True, 1),
    (f"{MEG}.expert_tensor_parallel_size", True, 1),
    ("trainer.nnodes", False, 1),
    ("trainer.n_gpus_per_node", False, 1),
    *[
        (f"{ARR}.rollout.{k}", False, 1)
        for k in ("tensor_model_parallel_size", "data_parallel_size", "pipeline_model_parallel_size")
    ],
    (f"{ARR}.rollout.expert_parallel_size", False, 1),
    ("data.train_batch_size", False, 1),
    ("data.max_prompt_length", False, 1),
    ("data.max_response_length", False, 1),
    (f"{ARR}.rollout.n", False, 1),
    (f"{ARR}.actor.ppo_mini_batch_size", False, 1),
    (f"{ARR}.actor.ppo_micro_batch_size_per_gpu", True, 1),
    (f"{ARR}.actor.ppo_micro_batch_size", True, 1),
    (f"{ARR}.actor.ppo_max_token_len_per_gpu", False, 1),
    *[(f"{ARR}.{side}.log_prob_micro_batch_size_per_gpu", True, 1) for side in ("ref", "rollout")],
    *[(f"{ARR}.{side}.log_prob_micro_batch_size", True, 1) for side in ("ref", "rollout")],
    *[(f"{ARR}.{side}.log_prob_max_token_len_per_gpu", False, 1) for side in ("ref", "rollout")],
    (f"{ARR}.rollout.max_model_len", True, 1),
    (f"{ARR}.rollout.engine_kwargs.vllm.max_model_len", True, 1),
    (f"{OTC}.recompute_num_layers", True, 1),
    (f"{OTC}.num_layers_in_first_pipeline_stage", True, 1),
    (f"{OTC}.num_layers_in_last_pipeline_stage", True, 1),
    (f"{OTC}.mtp_num_layers", True, 0),
    (f"{OTC}.microbatch_group_size_per_vp_stage", True, 1),
    (f"{OTC}.moe_router_topk", False, 1),
    (f"{OTC}.cpu_offloading_num_layers", False, 0),
]


def _value_errors(**changes) -> list:
    from verl_qwen35.checks.values import value_problems

    return value_problems(config(**changes))


def _named(problem) -> str:
    return " ".join(problem.keys)


@pytest.mark.parametrize(("key", "nullable", "lowest"), INTEGER_KEYS, ids=[k for k, _, _ in INTEGER_KEYS])
def test_each_integer_key_below_its_lowest_value_is_refused_and_the_lowest_passes(key, nullable, lowest):
    leaf = key.rsplit(".", 1)[1]
    (problem,) = _value_errors(**{key: lowest - 1})
    assert leaf in _named(problem) or key.removeprefix("parallel.") in _named(problem), problem
    assert f"={lowest - 1} must be >= {lowest}" in problem.message
    assert problem.message.endswith(" (or null)") is nullable
    assert _value_errors(**{key: lowest}) == []


# The layout sizes are typed by the schema (config/schema.py Parallel): their types are refused while composing.
TYPED_INTEGER_KEYS = [case for case in INTEGER_KEYS if case[0].startswith("parallel.")]
VERL_INTEGER_KEYS = [case for case in INTEGER_KEYS if not case[0].startswith("parallel.")]


@pytest.mark.parametrize(("key", "nullable", "lowest"), TYPED_INTEGER_KEYS, ids=[k for k, _, _ in TYPED_INTEGER_KEYS])
def test_each_layout_size_refuses_a_fraction_and_null_where_not_allowed_while_composing(key, nullable, lowest):
    with pytest.raises(UserError, match=rf"{re.escape(key)}: .*could not be converted to Integer"):
        compose([f"{key}={lowest + 1.5}"])
    if nullable:
        assert OmegaConf.select(compose([f"{key}=null"]), key) is None
    else:
        with pytest.raises(UserError, match=rf"{re.escape(key)}: field '{re.escape(key)}' is not Optional"):
            compose([f"{key}=null"])


# Every layout size is the same schema type (an int field of config/schema.py Parallel): the other spellings of a
# wrong value are refused by that one type, shown on one key.
@pytest.mark.parametrize("value", ["3.0", "true", "two"])
def test_a_layout_size_refuses_a_whole_float_a_flag_and_a_word_and_takes_a_quoted_number(value):
    with pytest.raises(UserError, match=r"parallel\.tp: .*could not be converted to Integer"):
        compose([f"parallel.tp={value}"])
    assert OmegaConf.select(compose(["parallel.tp='4'"]), "parallel.tp") == 4, "a quoted number is a number"


@pytest.mark.parametrize(("key", "nullable", "lowest"), VERL_INTEGER_KEYS, ids=[k for k, _, _ in VERL_INTEGER_KEYS])
def test_each_integer_key_refuses_a_fraction_and_null_only_where_null_is_not_allowed(key, nullable, lowest):
    (problem,) = _value_errors(**{key: lowest + 1.5})
    assert f"={lowest + 1.5!r} is of type float; it must be a whole number" in problem.message
    (whole,) = _value_errors(**{key: float(lowest + 1)})
    assert f"(write {lowest + 1})" in whole.message
    (flag,) = _value_errors(**{key: True})
    assert "is of type bool" in flag.message
    nulls = _value_errors(**{key: None})
    assert (nulls == []) is nullable
    if not nullable:
        assert nulls[0].message == "is null; it needs an integer"


def test_a_bad_shorthand_is_reported_once_under_its_own_name():
    (problem,) = _value_errors(**{"parallel.tp": 0, f"{MEG}.tensor_model_parallel_size": 0})
    assert problem.keys[0].startswith("parallel.tp")


@pytest.mark.parametrize(
    ("value", "refused"),
    [(0.0, True), (1e-9, False), (0.6, False), (1.0, False), (1.0 + 1e-9, True), (-0.5, True), ("high", True)],
)
def test_gpu_memory_utilization_is_a_fraction_in_0_exclusive_1_inclusive(value, refused):
    found = _value_errors(**{f"{ARR}.rollout.gpu_memory_utilization": value})
    assert bool(found) is refused
    if refused:
        assert found[0].message == f"={value!r} must be a number in (0.0, 1.0]; the presets use 0.6-0.66"


# --- sequences.py: the vLLM length budget, packed sequences, dynamic batches ------------------------------

ROLLOUT_LEN = f"{ARR}.rollout.max_model_len"
ENGINE_LEN = f"{ARR}.rollout.engine_kwargs.vllm.max_model_len"


def _lengths(**changes) -> list:
    from verl_qwen35.checks.sequences import length_problems

    return length_problems(config(**changes))


@pytest.mark.parametrize("key", [ROLLOUT_LEN, ENGINE_LEN])
def test_prompt_plus_response_must_fit_max_model_len_exactly_fitting_passes(key):
    other = ENGINE_LEN if key == ROLLOUT_LEN else ROLLOUT_LEN
    base = {"data.max_prompt_length": 1000, "data.max_response_length": 3000, other: None}
    assert _lengths(**base, **{key: 4000}) == []
    (problem,) = _lengths(**base, **{key: 3999})
    assert problem.keys == (key, "data.max_prompt_length", "data.max_response_length")
    assert "max_prompt_length+max_response_length=1000+3000=4000" in problem.message
    assert f"raise {key} to at least 4000" in problem.message


def test_without_any_max_model_len_the_checkpoints_positions_are_the_budget():
    """verl hands vLLM no max_model_len, so vLLM's context is max_position_embeddings (vllm_async_server.py)."""
    ceiling = resolved("35b_gpu").model.max_position_embeddings
    unset = {ROLLOUT_LEN: None, ENGINE_LEN: None, "data.max_prompt_length": 1000}
    assert _lengths(**unset, **{"data.max_response_length": ceiling - 1000}) == []
    (problem,) = _lengths(**unset, **{"data.max_response_length": ceiling - 999})
    assert problem.keys == ("data.max_prompt_length", "data.max_response_length")
    assert f"max_position_embeddings={ceiling}" in problem.message


def test_a_rollout_max_model_len_below_prompt_plus_response_is_refused_even_with_a_larger_engine_one():
    """verl caps each request's max_tokens by rollout.max_model_len - prompt length (vllm_async_server.py
    generate), whatever the engine's own max_model_len: responses would be cut short silently."""
    lengths = {"data.max_prompt_length": 1000, "data.max_response_length": 3000}
    (refused,) = _lengths(**{ROLLOUT_LEN: 3000, ENGINE_LEN: 100_000}, **lengths)
    assert refused.level == "error" and refused.keys[0] == ROLLOUT_LEN
    assert "caps each request's max_tokens" in refused.message and f"{ENGINE_LEN}=100000" in refused.message
    (refused,) = _lengths(**{ROLLOUT_LEN: 100_000, ENGINE_LEN: 3000}, **lengths)
    assert refused.level == "error" and refused.keys[0] == ENGINE_LEN and "vLLM stops each sequence" in refused.message
    (warned,) = _lengths(**{ROLLOUT_LEN: 5000, ENGINE_LEN: 4000}, **lengths)
    assert warned.level == "warning" and warned.keys == (ENGINE_LEN, ROLLOUT_LEN)
    assert _lengths(**{ROLLOUT_LEN: 4000, ENGINE_LEN: 4000}, **lengths) == []


@pytest.mark.parametrize("key", [ROLLOUT_LEN, ENGINE_LEN])
def test_max_model_len_beyond_the_checkpoints_positions_is_refused_under_its_own_key(key):
    ceiling = resolved("35b_gpu").model.max_position_embeddings
    other = ENGINE_LEN if key == ROLLOUT_LEN else ROLLOUT_LEN
    (problem,) = _lengths(**{other: None, key: ceiling + 1})
    assert problem.keys == (key,) and f"max_position_embeddings={ceiling}" in problem.message


def test_max_model_len_beyond_the_checkpoints_positions_is_refused_and_equal_passes():
    ceiling = resolved("35b_gpu").model.max_position_embeddings
    assert _lengths(**{ROLLOUT_LEN: None, ENGINE_LEN: ceiling}) == []
    (problem,) = _lengths(**{ROLLOUT_LEN: None, ENGINE_LEN: ceiling + 1})
    assert problem.keys == (ENGINE_LEN,)
    assert f"={ceiling + 1} exceeds Qwen3.5-35B-A3B's max_position_embeddings={ceiling}" in problem.message


@pytest.mark.parametrize(("mcore", "refused"), [((0, 16), True), ((0, 17), True), ((0, 18), False), ((1, 0), False)])
def test_packed_sequences_need_megatron_core_0_18(mcore, refused):
    from verl_qwen35.checks.sequences import packing_problems

    found = packing_problems(config(**{"megatron.use_remove_padding": True}), mcore)
    assert bool(found) is refused
    if refused:
        assert found[0].keys[0] == "megatron.use_remove_padding"
        assert f"before megatron-core 0.18 (installed: {mcore[0]}.{mcore[1]}; on GPU)" in found[0].message
    assert packing_problems(config(**{"megatron.use_remove_padding": False}), mcore) == []


@pytest.mark.parametrize("mcore", [(0, 16), None, (0, 18)])
def test_packed_sequences_on_npu_are_mindspeeds_and_accepted_whatever_megatron_core(mcore):
    """verl PR #7372 (the 35B NPU recipe) runs use_remove_padding=True with dynamic batches on MindSpeed."""
    from verl_qwen35.checks.sequences import packing_problems

    packed = {"megatron.use_remove_padding": True, f"{ARR}.model.use_remove_padding": True}
    dynamic = {f"{ARR}.actor.use_dynamic_bsz": True, f"{ARR}.ref.log_prob_use_dynamic_bsz": True}
    assert packing_problems(config("35b_npu", **packed, **dynamic), mcore) == []
    unpacked = {"megatron.use_remove_padding": False, f"{ARR}.rollout.log_prob_use_dynamic_bsz": False}
    unpacked |= {f"{ARR}.ref.log_prob_use_dynamic_bsz": False, f"{ARR}.actor.use_dynamic_bsz": True}
    (problem,) = packing_problems(config("35b_npu", **unpacked), mcore)
    assert "set megatron.use_remove_padding=true or" in problem.message


def test_packing_refusal_without_megatron_core_says_which_version_it_assumed():
    from verl_qwen35.checks.sequences import packing_problems

    (problem,) = packing_problems(config(**{f"{ARR}.model.use_remove_padding": True}), None)
    assert problem.keys == (f"{ARR}.model.use_remove_padding",)
    assert "0.16 assumed (not installed here; the Ascend image's)" in problem.message


@pytest.mark.parametrize(
    "key",
    [f"{ARR}.actor.use_dynamic_bsz", f"{ARR}.rollout.log_prob_use_dynamic_bsz", f"{ARR}.ref.log_prob_use_dynamic_bsz"],
)
def test_dynamic_batch_size_needs_packed_sequences(key):
    from verl_qwen35.checks.sequences import packing_problems

    (problem,) = packing_problems(config(**{key: True, "megatron.use_remove_padding": False}), (0, 18))
    assert problem.keys == (key, "megatron.use_remove_padding")
    assert "dynamic batch size needs packed sequences" in problem.message and f"or {key}=false" in problem.message
    assert packing_problems(config(**{key: True, "megatron.use_remove_padding": True}), (0, 18)) == []


def test_per_token_loss_needs_packed_sequences():
    """verl 0.9.1 transformer_impl.py: calculate_per_token_loss=True requires use_remove_padding=True."""
    from verl_qwen35.checks.sequences import packing_problems

    per_token = "megatron.override_transformer_config.calculate_per_token_loss"
    (problem,) = packing_problems(config(**{per_token: True, "megatron.use_remove_padding": False}), (0, 16))
    assert problem.keys == (per_token, "megatron.use_remove_padding")
    assert problem.message.startswith("=true needs packed sequences (megatron.use_remove_padding=true;")
    assert problem.message.endswith(f"drop {per_token}")
    assert packing_problems(config(**{per_token: False, "megatron.use_remove_padding": False}), (0, 16)) == []


# --- rollout.py: settings ----------------------------------------------------------------------------------


@pytest.mark.parametrize(("estimator", "n", "refused"), [("grpo", 1, True), ("grpo", 2, False), ("gae", 1, False)])
def test_grpo_needs_two_samples_a_prompt(estimator, n, refused):
    from verl_qwen35.checks.rollout import rollout_setting_problems

    found = rollout_setting_problems(config(**{"algorithm.adv_estimator": estimator, f"{ARR}.rollout.n": n}))
    assert bool(found) is refused
    if refused:
        assert found[0].keys == (f"{ARR}.rollout.n",)
        assert "=1: GRPO's baseline is the mean reward of each prompt's group" in found[0].message


@pytest.mark.parametrize(
    ("preset", "path", "refused_with"),
    [
        ("35b_gpu", "Qwen/Qwen3.5-35B-A3B", None),
        ("35b_gpu", "/models/qwen3.5-35b-a3b-instruct", None),
        ("35b_gpu", "/models/my-finetune", None),
        ("35b_gpu", "Qwen/Qwen3.5-122B-A10B", "model=122b"),
        ("122b_npu", "/data/Qwen3.5-35B-A3B", "model=35b"),
        ("35b_gpu", "Qwen/Qwen3.5-397B-A17B", "model=397b"),
    ],
)
def test_weights_of_another_size_than_the_model_preset_are_refused(preset, path, refused_with):
    from verl_qwen35.checks.rollout import weights_problems

    found = weights_problems(config(preset, **{f"{ARR}.model.path": path}))
    assert bool(found) is bool(refused_with)
    if refused_with:
        assert found[0].keys == (f"{ARR}.model.path", "model")
        assert f"use {refused_with}" in found[0].message and f"={path} names Qwen3.5-" in found[0].message


# --- rollout.py: layout of the rollout engines ---------------------------------------------------------------


@pytest.mark.parametrize(("engine", "refused"), [("vllm", True), ("sglang", True), ("hf", False)])
def test_rollout_pipeline_parallelism_is_refused_for_vllm_and_sglang(engine, refused):
    from verl_qwen35.checks.rollout import rollout_problems

    arch = resolved("35b_gpu").model
    two_stages = Layout(1, 8, 2, 1, 1, 8, 1, None, gen_tp=4, gen_dp=1, gen_pp=2, gen_ep=1)
    found = rollout_problems(two_stages, arch, engine)
    assert bool(found) is refused, [str(p) for p in found]
    if refused:
        assert found[0].keys == ("actor_rollout_ref.rollout.pipeline_model_parallel_size",)
        assert f"{engine} rollout has no pipeline parallelism in verl" in found[0].message
        assert "(now 2)" in found[0].message
    one_stage = Layout(1, 8, 2, 1, 1, 8, 1, None, gen_tp=4, gen_dp=2, gen_pp=1, gen_ep=1)
    assert rollout_problems(one_stage, arch, engine) == []


@pytest.mark.parametrize(("gen_ep", "refused"), [(1, False), (8, False), (2, True), (4, True), (16, True)])
def test_rollout_expert_parallel_is_1_or_tp_times_dp(gen_ep, refused):
    from verl_qwen35.checks.rollout import rollout_problems

    layout = Layout(1, 8, 2, 1, 1, 8, 1, None, gen_tp=4, gen_dp=2, gen_pp=1, gen_ep=gen_ep)
    found = rollout_problems(layout, resolved("35b_gpu").model, "vllm")
    assert bool(found) is refused
    if refused:
        assert found[0].keys[0] == "parallel.gen_ep (actor_rollout_ref.rollout.expert_parallel_size)"
        assert [k.split(" ")[0] for k in found[0].keys[1:]] == ["parallel.gen_tp", "parallel.gen_dp"]
        assert f"rollout expert_parallel_size={gen_ep} must equal rollout tp*dp=8 (or be 1)" in found[0].message


@pytest.mark.parametrize(("gen_dp", "refused"), [(2, False), (3, True), (6, False)])
def test_a_rollout_replica_of_more_than_a_node_must_span_whole_nodes(gen_dp, refused):
    """verl/workers/rollout/replica.py: 3 nodes of 8; tp=4 x dp=3 = 12 devices is 1.5 nodes."""
    from verl_qwen35.checks.rollout import rollout_problems

    layout = Layout(3, 8, 2, 1, 1, 8, 1, None, gen_tp=4, gen_dp=gen_dp, gen_pp=1, gen_ep=1)
    found = rollout_problems(layout, resolved("35b_gpu").model, "vllm")
    assert bool(found) is refused, [str(p) for p in found]
    if refused:
        (problem,) = found
        assert [k.split(" ")[0] for k in problem.keys] == [
            "parallel.gen_tp",
            "parallel.gen_dp",
            "parallel.devices_per_node",
        ]
        assert problem.message.startswith(
            "a rollout replica spans tp*dp*pp=12 devices, not a whole number of nodes of 8 (verl places replicas"
        )


GEN_KEYS = {"gen_dp": "data_parallel_size", "gen_pp": "pipeline_model_parallel_size", "gen_ep": "expert_parallel_size"}


@pytest.mark.parametrize("field", sorted(GEN_KEYS))
def test_a_null_or_absent_rollout_size_is_verls_default_1_and_0_stays_0(field):
    """verl/trainer/config/rollout/rollout.yaml: 1 each; 0 is kept for positive_problems to refuse."""
    key = f"actor_rollout_ref.rollout.{GEN_KEYS[field]}"
    assert getattr(Layout.of(config(**{key: None})), field) == 1
    absent = config()
    with open_dict(absent):
        del absent.actor_rollout_ref.rollout[GEN_KEYS[field]]
    assert getattr(Layout.of(absent), field) == 1
    assert getattr(Layout.of(config(**{key: 3})), field) == 3
    assert getattr(Layout.of(config(**{key: 0})), field) == 0


# --- checks/__init__.py: preflight runs every family -------------------------------------------------------


def _preflight(machine_missing: str = "warning", **changes) -> list:
    return preflight(config(**changes), machine_missing=machine_missing)


def test_preflight_refuses_a_layout_that_does_not_fit_memory():
    (memory,) = [p for p in _preflight(**{"hardware.device_memory_gib": 32}) if "hardware.device_memory_gib" in p.keys]
    assert memory.level == "error" and memory.message.startswith("training needs ")
    assert "GiB of 32 GiB" in memory.message and "more model parallelism" in memory.message


def test_preflight_without_a_level_treats_a_missing_file_as_an_error():
    """The default of `machine_missing` is the launch's: a missing data file refuses."""
    cfg = config(**{"data.train_files": "/nonexistent/train.parquet"})
    (missing,) = [p for p in preflight(cfg) if p.keys == ("data.train_files",)]
    assert missing.level == "error"


@pytest.mark.parametrize(
    ("key", "value", "says"),
    [
        (
            "data.train_files",
            "/nonexistent/train.parquet",
            "/nonexistent/train.parquet does not exist; correct the path data.train_files gives",
        ),
        ("actor_rollout_ref.model.path", "/nonexistent/model", "/nonexistent/model is neither a local directory"),
    ],
)
def test_preflight_checks_this_machines_files_at_the_level_asked(key, value, says):
    for level in ("error", "warning"):
        (missing,) = [p for p in _preflight(level, **{key: value}) if p.keys == (key,)]
        assert (missing.level, missing.message.startswith(says)) == (level, True)


def test_override_values_are_checked_after_interpolation():
    """`override_transformer_config.X=${...}` is typed by its resolved value, as megatron-core receives it."""
    cfg = compose(
        ["model=35b", "device=gpu", "megatron.override_transformer_config.recompute_num_layers=${parallel.pp}"]
    )
    assert errors(cfg) == []
    cfg = compose(["model=35b", "device=gpu", "megatron.override_transformer_config.moe_aux_loss_coeff=${model.name}"])
    assert errors(cfg) == [
        "ERROR   [megatron.override_transformer_config.moe_aux_loss_coeff] ='Qwen3.5-35B-A3B' is of type str; "
        "megatron-core expects float or list"
    ]


def test_bad_value_problems_reads_the_override_config_itself_when_not_given_one():
    cfg = config(**{"megatron.override_transformer_config.moe_aux_loss_coeff": "high"})
    (wrong,) = bad_value_problems(cfg)
    assert wrong.keys == ("megatron.override_transformer_config.moe_aux_loss_coeff",)
    assert wrong.message == "='high' is of type str; megatron-core expects float or list"


@pytest.mark.parametrize(("value", "refused"), [(1, False), (0.1, False), (True, True), ("1", True)])
def test_a_float_field_takes_an_int_as_megatron_does_but_not_a_bool(value, refused):
    """attention_dropout is a float field; Python (and the dataclass) takes 1 where 1.0 is meant."""
    from verl_qwen35.checks.megatron_keys import field_spec
    from verl_qwen35.checks.transformer import type_problems

    found = [p.message for p in type_problems({"attention_dropout": value}, field_spec())]
    kind = {True: "bool", "1": "str"}.get(value)
    assert found == ([f"={value!r} is of type {kind}; megatron-core expects float"] if refused else [])


@pytest.mark.parametrize(("preset", "device", "resource"), [("35b_gpu", "gpu", "GPU"), ("35b_npu", "npu", "NPU")])
def test_device_of_names_the_device_as_the_machine_checks_and_ray_know_it(preset, device, resource):
    assert device_of(config(preset)) == device
    assert RESOURCE[device_of(config(preset))] == resource  # verl_qwen35/run/devices.py: the Ray resource asked for


@pytest.mark.parametrize(("sequence_parallel", "tp", "warned"), [(True, 1, True), (True, 2, False), (False, 1, False)])
def test_sequence_parallel_at_tp_1_is_a_warning_that_it_has_no_effect(sequence_parallel, tp, warned):
    actor = "actor_rollout_ref.actor.megatron"
    cfg = config(**{f"{actor}.sequence_parallel": sequence_parallel})
    found = sequence_parallel_problems(cfg, Layout.of(config(**{f"{actor}.tensor_model_parallel_size": tp})))
    expected = [
        ("warning", f"{actor}.sequence_parallel", "sequence_parallel=true has no effect at tp=1 (verl turns it off)")
    ]
    assert [(p.level, p.keys[0], p.message) for p in found] == (expected if warned else [])
    assert not warned or found[0].keys[1].startswith("parallel.tp")


# --- memory.py: the estimate's inputs -------------------------------------------------------------------------


@pytest.mark.parametrize("vpp", [None, 1, 2])
def test_the_memory_estimate_covers_every_virtual_pipeline_size(vpp):
    """vpp=1 (one chunk a stage) is a valid setting: the estimate, and its refusal, must not skip it."""
    sides = ("actor", "ref")
    vpps = {f"actor_rollout_ref.{s}.megatron.virtual_pipeline_model_parallel_size": vpp for s in sides}
    # The rollout on a 20 GiB die (with 4.7 GiB of HCCL buffers) is refused too; the training refusal must be there.
    found = memory_problems(config("35b_npu", **vpps, **{"hardware.device_memory_gib": 20}))
    (memory,) = [p for p in found if p.message.startswith("training needs ")]
    assert memory.level == "error"


DEVICE_CAP, HOST_CAP, UTIL = (
    "hardware.device_memory_gib",
    "hardware.host_memory_gib",
    "actor_rollout_ref.rollout.gpu_memory_utilization",
)
TRAIN_KEYS = ["parallel.ep", "parallel.pp", DEVICE_CAP]


def _memory(**changes) -> list[tuple[str, list[str], str]]:
    return [(p.level, [k.split(" ")[0] for k in p.keys], p.message) for p in memory_problems(config(**changes))]


@pytest.mark.parametrize(
    ("changes", "advice"),
    [
        ({}, ""),  # the preset offloads the optimizer; the step, not the log-prob pass, is the peak
        (
            {"actor_rollout_ref.actor.optim.override_optimizer_config.optimizer_cpu_offload": False},
            "; offload the optimizer (actor_rollout_ref.actor.optim.override_optimizer_config."
            "optimizer_cpu_offload=true, optimizer_offload_fraction=1)",
        ),
    ],
)
def test_the_training_refusal_advises_what_would_lower_its_peak(changes, advice):
    ((level, keys, message),) = _memory(**changes, **{DEVICE_CAP: 20})
    assert level == "error" and keys == TRAIN_KEYS
    assert message.endswith(
        "more model parallelism: parallel.ep (routed experts), parallel.pp (layers), "
        f"parallel.tp, or more nodes{advice}"
    )


def test_a_log_prob_peak_names_its_micro_batch_first():
    """32 sequences a log-prob micro-batch: the old-policy pass's logits are the training peak, which no
    parallelism splits; the problem names that micro-batch, and its advice comes first."""
    changes = {f"actor_rollout_ref.{side}.log_prob_micro_batch_size_per_gpu": 32 for side in ("rollout", "ref")}
    ((level, keys, message),) = _memory(**changes, **{DEVICE_CAP: 20})
    assert level == "error" and keys == ["actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu", DEVICE_CAP]
    advice = message.split("); ", 1)[1]
    assert advice.startswith("the old-policy log-prob pass is the peak (")
    assert "lower actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu" in advice


def test_training_memory_is_refused_above_the_device_warned_above_90_percent():
    """Boundaries from the estimate itself (35b on GPU), so they hold however the estimate is refined."""
    need = estimate_of(config()).train_gib
    ((level, keys, message),) = _memory(**{DEVICE_CAP: need * 0.99})
    assert (level, keys) == ("error", TRAIN_KEYS) and message.startswith(f"training needs {need:.1f} GiB of ")
    assert "more model parallelism" in message
    ((level, keys, message),) = _memory(**{DEVICE_CAP: need / 0.95})
    assert (level, keys) == ("warning", TRAIN_KEYS) and ", little headroom (" in message
    assert message.endswith("parallel.tp, or more nodes")  # what would gain room, as the refusal says
    assert _memory(**{DEVICE_CAP: need / 0.89}) == []


def test_rollout_memory_is_refused_above_the_device_warned_above_90_percent():
    """vLLM takes gpu_memory_utilization of the device beside what the actor keeps and the reserve."""
    e = estimate_of(config())
    cap, fixed = e.device_memory_gib, e.rollout_breakdown["actor_residue"] + e.rollout_breakdown["reserved"]
    ((level, keys, message),) = _memory(**{UTIL: (1.02 * cap - fixed) / cap})
    assert (level, keys) == ("error", [UTIL, "megatron.param_offload"])
    assert message.startswith("rollout needs ") and message.endswith(
        f"; set {UTIL} to at most {(cap - fixed) / cap:.2f}"
    )
    assert _memory(**{UTIL: (0.95 * cap - fixed) / cap}) == [
        (
            "warning",
            [UTIL],
            f"rollout needs {0.95 * cap:.1f} GiB of {cap:g} GiB (95%) per device ({DEVICE_CAP}={cap:g}), "
            "little headroom",
        )
    ]
    assert _memory(**{UTIL: (0.89 * cap - fixed) / cap}) == []


def test_a_vllm_budget_without_room_for_one_sequence_is_refused():
    ((level, keys, message),) = _memory(**{UTIL: 0.1})
    cap = config().hardware.device_memory_gib  # h100 as torch sees it
    assert (level, keys) == ("error", [UTIL, "parallel.gen_tp", "data.max_response_length"])
    assert message.startswith(f"vLLM's budget {0.1 * cap:.1f} GiB ({UTIL}=0.1 x {cap:g}) does not even hold")


def test_host_memory_per_node_is_refused_above_the_node_warned_above_90_percent():
    need = estimate_of(config()).host_per_node_gib
    ((level, keys, message),) = _memory(**{HOST_CAP: need * 0.99})
    assert (level, keys) == ("error", [HOST_CAP, "megatron.optimizer_offload", "parallel.nnodes"])
    assert message.startswith(f"host memory per node: needs {need:.1f} GiB of ")
    ((level, keys, message),) = _memory(**{HOST_CAP: need / 0.95})
    assert (level, keys) == ("warning", [HOST_CAP]) and message.endswith("little headroom")
    assert _memory(**{HOST_CAP: need / 0.89}) == []


def _capacity_at(fraction: float, need: float) -> float:
    """The capacity whose `fraction` is exactly `need` in floating point (a boundary, not a float near it)."""
    cap = need / fraction
    for _ in range(8):
        if fraction * cap == need:
            return cap
        cap = math.nextafter(cap, math.inf if fraction * cap < need else -math.inf)
    raise AssertionError(f"no capacity with {fraction} x capacity == {need}")


def test_memory_boundaries_an_exact_fit_is_a_warning_exactly_90_percent_is_not():
    e = estimate_of(config())
    train, host = e.train_gib, e.host_per_node_gib
    assert [level for level, _, _ in _memory(**{DEVICE_CAP: train})] == ["warning"]
    assert _memory(**{DEVICE_CAP: _capacity_at(WARN_FRACTION, train)}) == []
    assert [level for level, _, _ in _memory(**{HOST_CAP: host})] == ["warning"]
    assert _memory(**{HOST_CAP: _capacity_at(WARN_FRACTION, host)}) == []
    cap, fixed = e.device_memory_gib, e.rollout_breakdown["actor_residue"] + e.rollout_breakdown["reserved"]
    exact = config(**{UTIL: (cap - fixed) / cap})
    assert estimate_of(exact).rollout_gib == cap  # the case is the boundary itself
    assert [(p.level, p.keys) for p in memory_problems(exact)] == [("warning", (UTIL,))]


def test_the_plans_memory_lines_show_each_phase_or_why_there_is_no_estimate():
    e = estimate_of(config())
    params, train, rollout, host = memory_lines(config())
    cap = e.device_memory_gib
    assert params.startswith("params     ") and "B per training rank" in params
    assert train.startswith(f"memory     train {e.train_gib:.1f} GiB of {cap:g} GiB (") and "log-prob pass" in train
    assert rollout.startswith(f"           rollout {e.rollout_gib:.1f} GiB of {cap:g} GiB (")
    assert f"= {e.sequences_fit} sequences of 3072 tokens, {e.sequences_wanted} wanted at once)" in rollout
    assert host.startswith(f"host       {e.host_per_node_gib:.1f} GiB of ") and host.endswith("fits: yes")
    uneven = config(**{"actor_rollout_ref.actor.megatron.expert_model_parallel_size": 3})
    assert memory_lines(uneven) == ["memory     (no estimate: the parallel.* layout does not split evenly)"]
    (unusable,) = memory_lines(config(**{DEVICE_CAP: 0.0}))  # typed a float by the schema; a value rule refuses 0
    assert unusable == f"memory     (no estimate: ERROR   [{DEVICE_CAP}] {DEVICE_CAP}=0.0: must be a number > 0)"
    numbers = memory_numbers(config())
    assert (numbers["train_gib"], numbers["device_gib"], numbers["fits"]) == (round(e.train_gib, 2), cap, True)
    assert memory_numbers(uneven) is None


# --- pipeline.py: megatron-core's split of the layers over (virtual) pipeline stages ---------------------------


def test_a_pipeline_size_that_does_not_divide_the_layers_names_parallel_pp_and_what_would():
    assert split_problems(40, 3, None) == [
        (("parallel.pp",), "pp=3 does not divide 40 layers; pp may be one of [2, 4, 5, 8, 10, 20, 40]")
    ]


def test_vpp_must_divide_each_middle_stage_of_an_uneven_split():
    """40 layers, first stage 2, pp=3: two middle stages of 19 layers; vpp=2 divides the first, not 19."""
    assert split_problems(40, 3, 2, Split(first=2)) == [
        (("parallel.vpp", "parallel.pp"), "vpp=2 does not divide the 19 layers of each middle stage")
    ]
    assert split_problems(40, 3, 2, Split(first=4)) == []  # 18 per middle stage


@pytest.mark.parametrize(
    ("pp", "vpp", "split", "stages", "chunks"),
    [
        (4, None, Split(), "10", [10, 10, 10, 10]),
        (4, 2, Split(), "10 (2 chunks of 5)", [5] * 8),
        (4, None, Split(embedding=True, loss=True), "10", [9, 10, 10, 9]),  # 42 slots: E and L take one each
        (4, None, Split(first=4), "first 4, middle 12, last 12", [4, 12, 12, 12]),
        (4, 2, Split(first=4), "first 4, middle 12, last 12", [2, 2, 6, 6, 6, 6, 6, 6]),
        (4, None, Split(last=4), "first 12, middle 12, last 4", [12, 12, 12, 4]),
        (4, None, Split(first=2, last=2), "first 2, middle 18, last 2", [2, 18, 18, 2]),
        (2, None, Split(first=20, last=20), "first 20, middle 0, last 20", [20, 20]),
        (2, 2, Split(), "20 (2 chunks of 10)", [10] * 4),  # the smallest pp that interleaves
    ],
)
def test_layers_per_stage_and_per_model_chunk_follow_megatrons_split(pp, vpp, split, stages, chunks):
    """transformer_block.py get_num_layers_to_build: what the plan prints and the estimate counts (40 layers)."""
    assert stage_layers(40, pp, vpp, split) == stages
    assert chunk_layers(40, pp, vpp, split) == chunks


@pytest.mark.parametrize("pp", [2, 3])
def test_a_pipeline_layout_whose_stage_count_is_not_a_multiple_of_pp_is_refused(pp):
    """pipeline_parallel_layer_layout.py: the stages are pp x vpp; 4 stages are a multiple of pp=2 only."""
    layout = "Et|t|t|tL"
    found = split_problems(4, pp, None, Split(layout=layout))
    if pp == 2:
        assert found == [
            (
                ("megatron.override_transformer_config.pipeline_model_parallel_layout", "parallel.vpp"),
                "has 4 stages = pp 2 x 2 virtual stage(s) but vpp=None; set parallel.vpp=2",
            )
        ]
    else:
        assert found == [
            (
                ("megatron.override_transformer_config.pipeline_model_parallel_layout", "parallel.pp"),
                "has 4 stages, not a multiple of pp=3",
            )
        ]
    assert split_problems(4, 2, 2, Split(layout=layout)) == []


def test_the_plans_layers_per_stage_is_megatrons_split_or_says_the_split_is_invalid():
    cfg = config()  # 40 layers
    lo = Layout.of(cfg)
    assert layers_per_stage(dataclasses.replace(lo, pp=2, vpp=2), cfg.model) == "20 (2 chunks of 10)"
    assert layers_per_stage(dataclasses.replace(lo, pp=3), cfg.model, Split(first=12)) == "first 12, middle 14, last 14"
    assert layers_per_stage(dataclasses.replace(lo, pp=3), cfg.model) == "invalid split"  # 40 % 3


@pytest.mark.parametrize(
    ("nnodes", "etp", "ep", "pp", "expert_dp"), [(4, 1, 8, 2, 4), (4, 2, 4, 2, 4), (1, 1, 16, 1, 1)]
)
def test_expert_data_parallel_is_world_over_etp_ep_pp(nnodes, etp, ep, pp, expert_dp):
    """megatron-core parallel_state.initialize_model_parallel: the expert grid is etp x ep x dp x pp."""
    lo = dataclasses.replace(Layout.of(config()), nnodes=nnodes, devices_per_node=16, etp=etp, ep=ep, pp=pp)
    assert lo.expert_dp == expert_dp


def test_a_problem_is_an_immutable_value():
    """Problems are shared by the report, the plan and the sweep's verdicts: nobody may alter one."""
    problem = error("parallel.tp", "x")
    assert problem == Problem("error", ("parallel.tp",), "x") and len({problem, error(("parallel.tp",), "x")}) == 1
    with pytest.raises(dataclasses.FrozenInstanceError):
        problem.level = "warning"


def test_divisors_are_every_divisor_in_order():
    assert (divisors(12), divisors(7), divisors(1)) == ([1, 2, 3, 4, 6, 12], [1, 7], [1])


@pytest.mark.parametrize("backend", ["slurm", "ray_job"])
def test_the_shipped_submit_settings_pass_and_unset_optional_ones_are_fine(backend):
    """conf/submit/*.yaml leave job_name, partition, account, time, container, temp_dir, interface null."""
    assert submit_problems(compose(["model=35b", "device=gpu", f"submit={backend}"])) == []
    (problem,) = submit_problems(compose(["model=35b", "device=gpu", "submit=slurm", "submit.partition=''"]))
    assert problem.keys == ("submit.partition",)
    assert problem.message == "submit.partition='': must be a non-empty string or null"


@pytest.mark.parametrize(
    ("python", "message"),
    [
        ("' '", "submit.python=' ': names no command"),
        (
            "'uv run \"python'",
            "submit.python='uv run \"python': No closing quotation (a command line, e.g. 'uv run python')",
        ),
    ],
)
def test_submit_python_must_be_a_command_line(python, message):
    found = submit_problems(compose(["model=35b", "device=gpu", "submit=ray_job", f"submit.python={python}"]))
    assert [(p.keys, p.message) for p in found] == [(("submit.python",), message)]


# --- transformer.py: overrides that would build another model than the checkpoint ----------------------------


def _otc_problems(otc: dict, preset: str = "35b_gpu") -> list:
    cfg = config(preset)
    return transformer_problems({**cfg.megatron.override_transformer_config, **otc}, cfg.model, Layout.of(cfg))


# Stated here, not imported from transformer.py: a field dropped there must fail its case, not lose it.
CHECKPOINT_FACTS = {
    "num_layers": "num_layers",
    "hidden_size": "hidden_size",
    "num_attention_heads": "num_attention_heads",
    "num_query_groups": "num_key_value_heads",
    "kv_channels": "head_dim",
    "num_moe_experts": "num_experts",
    "moe_ffn_hidden_size": "moe_intermediate_size",
    "moe_shared_expert_intermediate_size": "shared_expert_intermediate_size",
    "linear_num_key_heads": "linear_num_key_heads",
    "linear_num_value_heads": "linear_num_value_heads",
    "linear_key_head_dim": "linear_key_head_dim",
    "linear_value_head_dim": "linear_value_head_dim",
    "linear_attention_freq": "full_attention_interval",
}
CHECKPOINT_SWITCHES = {
    "experimental_attention_variant": "gated_delta_net",
    "multi_latent_attention": False,
    "moe_layer_freq": 1,
    "normalization": "RMSNorm",
    "layernorm_zero_centered_gamma": True,
    "gated_linear_unit": True,
    "add_bias_linear": False,
    "attention_output_gate": True,
}

# Stated here too: override_transformer_config keys that restate a layout number (parallel.<short>).
LAYOUT_OVERRIDES = {
    "tensor_model_parallel_size": "tp",
    "pipeline_model_parallel_size": "pp",
    "virtual_pipeline_model_parallel_size": "vpp",
    "context_parallel_size": "cp",
    "expert_model_parallel_size": "ep",
    "expert_tensor_parallel_size": "etp",
}


def test_the_layout_overrides_here_are_transformer_pys():
    from verl_qwen35.checks.transformer import LAYOUT_FIELDS

    assert LAYOUT_OVERRIDES == LAYOUT_FIELDS


@pytest.mark.parametrize("name", sorted(LAYOUT_OVERRIDES))
def test_a_layout_override_must_equal_the_layout(name):
    """verl's _build_tf_config applies the override after the engine's sizes: another value replaces the layout."""
    short, key = LAYOUT_OVERRIDES[name], f"megatron.override_transformer_config.{name}"
    own = getattr(Layout.of(config()), short)  # 35b on GPU: tp 2, pp 1, vpp null, cp 1, ep 8, etp 1
    assert not [p for p in _otc_problems({name: own}) if key in p.keys], "the layout's own value passes"
    other = 2 if own is None else own + 1
    (wrong,) = [p for p in _otc_problems({name: other}) if key in p.keys]
    assert wrong.keys == (key, f"parallel.{short}")
    assert wrong.message.startswith(f"={other} but parallel.{short}={own}: verl applies this override after the layout")


# megatron-core 0.16.1 transformer_config.py __post_init__ `allowed_modules` of selective recompute, restated.
SELECTIVE_RECOMPUTE = ("core_attn", "moe_act", "layernorm", "mla_up_proj", "mlp", "moe", "shared_experts")


@pytest.mark.parametrize("module", SELECTIVE_RECOMPUTE)
def test_every_selective_recompute_module_of_megatron_is_known_and_others_are_refused(module):
    key = "megatron.override_transformer_config.recompute_modules"
    otc = {**NO_RECOMPUTE, "recompute_granularity": "selective"}

    def unknown(modules: list[str]) -> list[str]:  # the modules' own needs (moe_act, mla_up_proj) aside
        found = _otc_problems({**otc, "recompute_modules": modules})
        return [p.message for p in found if p.keys == (key,) and " not in " in p.message]

    assert unknown([module]) == []
    assert unknown([module, "attention"]) == [f"['attention'] not in {list(SELECTIVE_RECOMPUTE)}"]


def test_the_checkpoint_lists_here_are_transformer_pys():
    assert (CHECKPOINT_FACTS, CHECKPOINT_SWITCHES) == (ARCH_FIELDS, ARCH_SWITCHES)


@pytest.mark.parametrize("name", sorted(CHECKPOINT_FACTS))
def test_an_architecture_override_must_equal_the_checkpoints_fact(name):
    fact = CHECKPOINT_FACTS[name]
    model = config().model
    assert model.get(fact) is not None, f"model preset lacks {fact}"
    key = f"megatron.override_transformer_config.{name}"
    assert not [p for p in _otc_problems({name: model[fact]}) if key in p.keys], "the checkpoint's own value passes"
    (wrong,) = [p for p in _otc_problems({name: model[fact] + 1}) if key in p.keys]
    assert wrong.message == (
        f"={model[fact] + 1} but {model.name} has {fact}={model[fact]}: "
        "the checkpoint would not load; drop the override"
    )


@pytest.mark.parametrize("name", sorted(CHECKPOINT_SWITCHES))
def test_an_architecture_switch_has_only_the_checkpoints_value(name):
    only, key = CHECKPOINT_SWITCHES[name], f"megatron.override_transformer_config.{name}"
    other = (not only) if isinstance(only, bool) else (only + 1 if isinstance(only, int) else f"{only}_other")
    assert not [p for p in _otc_problems({name: only}) if key in p.keys]
    (wrong,) = [p for p in _otc_problems({name: other}) if key in p.keys]
    assert wrong.message == f"={other!r}: Qwen3.5-35B-A3B is built with {name}={only!r}; drop the override"


@pytest.mark.parametrize(
    ("overrides", "refused"),
    [
        ({"overlap_p2p_comm_warmup_flush": True, "overlap_p2p_comm": True, "batch_p2p_comm": False}, False),
        ({"overlap_p2p_comm_warmup_flush": True, "overlap_p2p_comm": False, "batch_p2p_comm": False}, True),
        ({"overlap_p2p_comm_warmup_flush": True, "overlap_p2p_comm": True, "batch_p2p_comm": True}, True),
        ({"overlap_p2p_comm_warmup_flush": True, "batch_p2p_comm": False}, True),  # no vpp: overlap_p2p_comm off
    ],
)
def test_p2p_warmup_flush_overlap_needs_overlap_p2p_comm_without_batch_p2p_comm(overrides, refused):
    """megatron-core model_parallel_config.py ModelParallelConfig.__post_init__ (asked here too)."""
    from megatron.core.model_parallel_config import ModelParallelConfig

    key = "megatron.override_transformer_config.overlap_p2p_comm_warmup_flush"
    found = [p.message for p in _otc_problems(overrides) if key in p.keys]
    assert found == (["=true needs overlap_p2p_comm=true and batch_p2p_comm=false"] if refused else [])
    if refused:
        with pytest.raises(ValueError, match="warmup and flush is only compatible with overlap_p2p_comm"):
            ModelParallelConfig(**{"overlap_p2p_comm": False, **overrides})
    else:
        ModelParallelConfig(**overrides)


def test_fused_single_qkv_rope_is_refused_for_qwen35s_gated_attention_by_default():
    """Qwen3.5 has the attention output gate whether or not the override names it (ARCH_SWITCHES)."""
    key = "megatron.override_transformer_config.fused_single_qkv_rope"
    (refused,) = [p for p in _otc_problems({"fused_single_qkv_rope": True}) if key in p.keys]
    assert refused.message == "=true does not support gated attention (Qwen3.5's attention output gate)"
    assert not [p for p in _otc_problems({"fused_single_qkv_rope": False}) if key in p.keys]


def test_topk_limited_devices_is_refused_beside_group_routing():
    """megatron-core transformer_config.py: moe_router_topk_limited_devices is the old name of group routing."""
    otc = {"moe_router_group_topk": 2, "moe_router_num_groups": 8, "moe_router_topk_limited_devices": 2}
    key = "megatron.override_transformer_config.moe_router_topk_limited_devices"
    (refused,) = [p for p in _otc_problems(otc) if key in p.keys]
    assert refused.message == "is replaced by moe_router_group_topk; drop it"
    assert not [p for p in _otc_problems({**otc, "moe_router_topk_limited_devices": None}) if key in p.keys]


NO_RECOMPUTE = {"recompute_granularity": None, "recompute_method": None, "recompute_num_layers": None}


@pytest.mark.parametrize(
    ("recompute", "refused"),
    [({}, False), ({"recompute_granularity": "full"}, True), ({"recompute_method": "uniform"}, True)],
)
def test_ep_overlap_refuses_full_recompute_and_any_recompute_method(recompute, refused):
    """megatron-core transformer_config.py: overlap_moe_expert_parallel_comm asserts recompute_granularity
    != 'full' and recompute_method is None (35b on GPU: pp=1, ep=8, alltoall, so nothing else is missing)."""
    key = "megatron.override_transformer_config.overlap_moe_expert_parallel_comm"
    otc = {**NO_RECOMPUTE, **recompute, "overlap_moe_expert_parallel_comm": True}
    found = [p.message for p in _otc_problems(otc) if key in p.keys]
    assert found == (["=true needs no full recompute and recompute_method=null"] if refused else [])


def test_fp8_param_without_fp8_names_both_keys():
    otc = "megatron.override_transformer_config"
    (refused,) = [p for p in _otc_problems({"fp8_param": True}) if f"{otc}.fp8_param" in p.keys]
    assert refused.keys == (f"{otc}.fp8_param", f"{otc}.fp8")
    assert refused.message == "fp8_param=true needs fp8 (e4m3 or hybrid)"
    assert _otc_problems({"fp8_param": True, "fp8": "e4m3"}) == []


def test_fp4_param_without_fp4_names_both_keys():
    otc = "megatron.override_transformer_config"
    (refused,) = [p for p in _otc_problems({"fp4_param": True}) if f"{otc}.fp4_param" in p.keys]
    assert refused.keys == (f"{otc}.fp4_param", f"{otc}.fp4")
    assert refused.message == "fp4_param=true needs fp4=e2m1"
    assert not [p for p in _otc_problems({"fp4_param": True, "fp4": "e2m1"}) if f"{otc}.fp4_param" in p.keys]


def test_fine_grained_activation_offloading_excludes_cpu_offloading_and_names_both():
    otc = "megatron.override_transformer_config"
    both = {**NO_RECOMPUTE, "fine_grained_activation_offloading": True, "cpu_offloading": True}
    (refused,) = [p for p in _otc_problems(both) if f"{otc}.fine_grained_activation_offloading" in p.keys]
    assert refused.keys == (f"{otc}.fine_grained_activation_offloading", f"{otc}.cpu_offloading")
    assert refused.message == "cannot be combined with cpu_offloading"
    alone = {**both, "cpu_offloading": False}
    assert not [p for p in _otc_problems(alone) if f"{otc}.fine_grained_activation_offloading" in p.keys]


DROP_AND_PAD = {"moe_expert_capacity_factor": 1.0, "moe_pad_expert_input_to_capacity": True}


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        ({"cuda_graph_impl": "local", "cuda_graph_scope": ["attn"]}, []),
        ({"cuda_graph_impl": "local", "cuda_graph_scope": ["moe"], **DROP_AND_PAD}, []),
        (
            {"cuda_graph_impl": "local", "cuda_graph_scope": ["moe", "moe_router"], **DROP_AND_PAD},
            [(("cuda_graph_scope",), "cannot contain both moe and moe_router")],
        ),
        (
            {"cuda_graph_impl": "transformer_engine", "cuda_graph_scope": ["moe_preprocess"]},
            [(("cuda_graph_scope",), "moe_preprocess needs moe_router")],
        ),
        ({"cuda_graph_impl": "transformer_engine", "cuda_graph_scope": ["moe_router", "moe_preprocess"]}, []),
        ({"cuda_graph_impl": "local", "cuda_graph_scope": ["moe_preprocess"]}, []),  # local adds moe_router
        (
            {"cuda_graph_impl": "local", "cuda_graph_scope": ["mlp"]},
            [(("cuda_graph_scope",), "mlp graphs are for dense layers; every Qwen3.5 layer is MoE")],
        ),
        (
            {"cuda_graph_impl": "local", "cuda_graph_scope": ["attn"], "cpu_offloading": True},
            [(("cuda_graph_impl", "cpu_offloading"), "CUDA graphs do not work with cpu_offloading")],
        ),
        (
            {"cuda_graph_impl": "transformer_engine", "cuda_graph_scope": ["full_iteration"]},
            [(("cuda_graph_scope", "cuda_graph_impl"), "full_iteration needs cuda_graph_impl=local")],
        ),
        (
            {"enable_cuda_graph": True, "cuda_graph_impl": "local"},
            [
                (
                    ("enable_cuda_graph", "cuda_graph_impl"),
                    "enable_cuda_graph/external_cuda_graph are the old spelling of cuda_graph_impl",
                )
            ],
        ),
    ],
)
def test_cuda_graph_scope_rules_name_their_keys(overrides, expected):
    """megatron-core 0.16.1 transformer_config.py, the cuda graph section (scopes, impl, offloading)."""
    found = [
        (tuple(k.removeprefix("megatron.override_transformer_config.") for k in p.keys), p.message)
        for p in _otc_problems({**NO_RECOMPUTE, **overrides})
        if any("cuda_graph" in k for k in p.keys)
    ]
    assert found == expected


@pytest.mark.parametrize(
    ("freq", "refused"),
    [(None, None), (0, None), ([], None), (4, None), (3, "=3 must divide num_layers=40"), ([0] * 40, None)]
    + [([0] * 3, "as a list needs one entry per layer (40)")],
)
def test_no_rope_freq_is_off_when_falsy_and_else_fits_the_layers(freq, refused):
    """megatron-core transformer_config.py: `if self.no_rope_freq:` (0, [] and null are off), an int divides
    num_layers, a list has one entry per layer."""
    key = "megatron.override_transformer_config.no_rope_freq"
    found = [p.message for p in _otc_problems({"no_rope_freq": freq}) if key in p.keys]
    assert found == ([refused] if refused else [])


def test_a_list_of_load_balancing_types_needs_a_coefficient_list_as_long():
    otc = "megatron.override_transformer_config"
    types = {"moe_router_load_balancing_type": ["aux_loss", "seq_aux_loss"]}
    (refused,) = [
        p for p in _otc_problems({**types, "moe_aux_loss_coeff": 0.01}) if f"{otc}.moe_aux_loss_coeff" in p.keys
    ]
    assert refused.keys == (f"{otc}.moe_aux_loss_coeff", f"{otc}.moe_router_load_balancing_type")
    assert refused.message == "must be a list as long as the types list"
    assert not [
        p
        for p in _otc_problems({**types, "moe_aux_loss_coeff": [0.01, 0.001]})
        if f"{otc}.moe_aux_loss_coeff" in p.keys
    ]


@pytest.mark.parametrize(("dispatcher", "refused"), [("alltoall", False), ("flex", False), ("allgather", True)])
def test_ep_overlap_needs_the_alltoall_or_flex_dispatcher(dispatcher, refused):
    key = "megatron.override_transformer_config.overlap_moe_expert_parallel_comm"
    otc = {**NO_RECOMPUTE, "overlap_moe_expert_parallel_comm": True, "moe_token_dispatcher_type": dispatcher}
    found = [p.message for p in _otc_problems(otc) if key in p.keys]
    assert found == (["=true needs moe_token_dispatcher_type alltoall or flex"] if refused else [])


@pytest.mark.parametrize(("topk", "refused"), [(0, True), (1, False), (256, False), (257, True)])
def test_router_topk_is_between_1_and_the_experts_both_ends_included(topk, refused):
    """35B has 256 experts: routing to all of them is allowed, one more is not."""
    key = "megatron.override_transformer_config.moe_router_topk"
    found = [
        p.message for p in _otc_problems({"moe_router_topk": topk, "moe_router_pre_softmax": True}) if key in p.keys
    ]
    assert found == ([f"={topk} must be between 1 and num_experts=256"] if refused else [])


def test_padding_to_capacity_needs_a_capacity_factor_and_names_both_keys():
    otc = "megatron.override_transformer_config"
    (refused,) = [
        p
        for p in _otc_problems({"moe_pad_expert_input_to_capacity": True})
        if p.message == "needs moe_expert_capacity_factor"
    ]
    assert refused.keys == (f"{otc}.moe_pad_expert_input_to_capacity", f"{otc}.moe_expert_capacity_factor")


@pytest.mark.parametrize(("etp", "refused"), [(1, False), (2, True)])
def test_a_bias_in_moe_layers_needs_expert_tensor_parallel_1(etp, refused):
    """megatron-core transformer_config.py (add_bias_linear with expert_tensor_parallel_size > 1); Qwen3.5
    has no bias either way (ARCH_SWITCHES), which is a refusal of its own under the same key."""
    cfg = config()
    otc = {**cfg.megatron.override_transformer_config, "add_bias_linear": True}
    found = transformer_problems(otc, cfg.model, dataclasses.replace(Layout.of(cfg), etp=etp))
    moe = [p for p in found if p.message.startswith("bias in MoE layers")]
    assert [(p.keys, p.message) for p in moe] == (
        [(("megatron.override_transformer_config.add_bias_linear",), "bias in MoE layers needs etp=1 (parallel.etp=2)")]
        if refused
        else []
    )


@pytest.mark.parametrize("layers", [1, 2])
def test_cpu_offloading_counts_megatrons_default_of_0_offloaded_layers(layers):
    """TransformerConfig.cpu_offloading_num_layers defaults to 0, which is in [0, num_layers) for any model."""
    cfg = config()
    otc = {**cfg.megatron.override_transformer_config, **NO_RECOMPUTE, "cpu_offloading": True}
    arch = OmegaConf.merge(cfg.model, {"num_layers": layers})
    found = transformer_problems(otc, arch, Layout.of(cfg))
    assert not [p for p in found if "megatron.override_transformer_config.cpu_offloading_num_layers" in p.keys]
    (edge,) = [
        p
        for p in transformer_problems({**otc, "cpu_offloading_num_layers": layers}, arch, Layout.of(cfg))
        if "megatron.override_transformer_config.cpu_offloading_num_layers" in p.keys
    ]
    assert edge.message == f"={layers} must be in [0, {layers})"


def test_the_old_cuda_graph_switches_exclude_each_other_and_both_are_named():
    """megatron-core transformer_config.py: enable_cuda_graph and external_cuda_graph cannot both be true."""
    otc = "megatron.override_transformer_config"
    both = {"enable_cuda_graph": True, "external_cuda_graph": True}
    (refused,) = [p for p in _otc_problems(both) if f"{otc}.enable_cuda_graph" in p.keys]
    assert refused.keys == (f"{otc}.enable_cuda_graph", f"{otc}.external_cuda_graph")
    assert refused.message == "enable_cuda_graph and external_cuda_graph exclude each other"


@pytest.mark.parametrize("name", ["delay_wgrad_compute", "ep_overlap_early_attn_memory_release"])
def test_ep_overlap_companions_need_the_overlap_and_name_both_keys(name):
    otc = "megatron.override_transformer_config"
    (refused,) = [p for p in _otc_problems({name: True}) if f"{otc}.{name}" in p.keys]
    assert refused.keys == (f"{otc}.{name}", f"{otc}.overlap_moe_expert_parallel_comm")
    assert refused.message == "=true needs overlap_moe_expert_parallel_comm=true"


@pytest.mark.parametrize(
    ("asked", "enabled", "model_mtp", "expected"),
    [
        (None, True, 0, [(("actor_rollout_ref.model.mtp.enable",), "=true but M has no MTP layers (verl raises)")]),
        (
            1,
            False,
            1,
            [
                (
                    ("megatron.override_transformer_config.mtp_num_layers", "actor_rollout_ref.model.mtp.enable"),
                    "=1 is dropped: verl sets mtp_num_layers=None unless actor_rollout_ref.model.mtp.enable=true",
                )
            ],
        ),
        (2, True, 1, [(("megatron.override_transformer_config.mtp_num_layers",), "=2 but M ships 1 MTP layer(s)")]),
        (1, True, 1, []),  # as many as the checkpoint ships: passes
        (None, False, 1, []),
    ],
)
def test_mtp_layers_are_refused_where_verl_drops_or_cannot_build_them(asked, enabled, model_mtp, expected):
    """verl/utils/megatron_utils.py check_mtp_config: MTP only with model.mtp.enable, from the checkpoint's layers."""
    otc = {} if asked is None else {"mtp_num_layers": asked}
    found = mtp_problems(otc, enabled, model_mtp, "M")
    assert [p.keys for p in found] == [keys for keys, _ in expected]
    assert all(p.message.startswith(start) for p, (_, start) in zip(found, expected, strict=True))


@pytest.mark.parametrize("mode", ["token-mean", "seq-mean-token-sum", "seq-mean-token-mean", "seq-mean-token-sum-norm"])
def test_every_loss_aggregation_mode_of_verl_is_accepted(mode):
    """verl/workers/config/actor.py ActorConfig.__post_init__ valid_loss_agg_modes (0.8.0 and 0.9.1)."""
    from verl_qwen35.checks.verl_names import name_problems

    assert name_problems(config(**{"actor_rollout_ref.actor.loss_agg_mode": mode})) == []
    (refused,) = name_problems(config(**{"actor_rollout_ref.actor.loss_agg_mode": f"{mode}-x"}))
    assert refused.keys == ("actor_rollout_ref.actor.loss_agg_mode",)


@pytest.mark.each_verl
def test_token_sum_is_accepted_from_verl_0_9_on():
    """verl 0.9.1 added 'token-sum' to ActorConfig's valid_loss_agg_modes; 0.8.0 refuses it."""
    from importlib.metadata import version

    from verl_qwen35.checks.verl_names import name_problems
    from verl_qwen35.checks.verl_types import installed_verl_minor

    installed_verl_minor.cache_clear()  # the installed verl's version is what this case is about: read it here
    found = name_problems(config(**{"actor_rollout_ref.actor.loss_agg_mode": "token-sum"}))
    newer = tuple(int(x) for x in version("verl").split(".")[:2]) >= (0, 9)
    assert [p.keys for p in found] == ([] if newer else [("actor_rollout_ref.actor.loss_agg_mode",)])


@pytest.mark.each_verl
@pytest.mark.parametrize(("installed", "minor", "refused"), [("0.8.0", (0, 8), True), ("0.10.2", (0, 10), False)])
def test_token_sum_follows_the_verl_version_importlib_metadata_finds(tmp_path, monkeypatch, installed, minor, refused):
    """A verl distribution's metadata first on sys.path is the one importlib.metadata.version reads."""
    from verl_qwen35.checks.verl_names import name_problems
    from verl_qwen35.checks.verl_types import installed_verl_minor

    (tmp_path / f"verl-{installed}.dist-info").mkdir()
    (tmp_path / f"verl-{installed}.dist-info" / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: verl\nVersion: {installed}\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    installed_verl_minor.cache_clear()
    try:
        assert installed_verl_minor() == minor
        found = name_problems(config(**{"actor_rollout_ref.actor.loss_agg_mode": "token-sum"}))
        assert [p.keys for p in found] == ([("actor_rollout_ref.actor.loss_agg_mode",)] if refused else [])
    finally:
        installed_verl_minor.cache_clear()  # read again with the real sys.path by the next caller


@pytest.mark.parametrize(("limit", "refused"), [(0, True), (-1, True), (True, True), (None, True), (1, False)])
def test_dynamic_context_parallel_needs_a_positive_max_seqlen_per_rank(limit, refused):
    """verl 0.9.1 verl/workers/config/engine.py McoreEngineConfig.__post_init__: an int > 0, not a bool."""
    from verl_qwen35.checks.verl_settings import verl_setting_problems

    megatron = "actor_rollout_ref.actor.megatron"
    cfg = config(**{f"{megatron}.dynamic_context_parallel": True, f"{megatron}.max_seqlen_per_dp_cp_rank": limit})
    found = [(p.keys, p.message) for p in verl_setting_problems(cfg)]
    message = f"={limit!r}: dynamic_context_parallel needs a positive integer here"
    assert found == ([(("megatron.max_seqlen_per_dp_cp_rank",), message)] if refused else [])


@pytest.mark.parametrize("side", ["actor", "ref"])
@pytest.mark.parametrize("mode", ["disabled", "R2", "R3"])
def test_router_replay_modes_of_verl_are_accepted_on_each_side(side, mode):
    """verl/workers/config/engine.py EngineRouterReplayConfig: disabled, R2 or R3."""
    from verl_qwen35.checks.verl_settings import verl_setting_problems

    key = f"actor_rollout_ref.{side}.megatron.router_replay.mode"
    assert not [p for p in verl_setting_problems(config(**{key: mode})) if key in p.keys]
    (refused,) = [p for p in verl_setting_problems(config(**{key: f"{mode}x"})) if key in p.keys]
    assert refused.message == f"='{mode}x' is not one of ['disabled', 'R2', 'R3']"


def test_greedy_validation_needs_no_temperature_and_sampling_does():
    """verl/utils/config.py validate_config: val_kwargs.do_sample (absent: False) with temperature 0 is refused."""
    from verl_qwen35.checks.verl_settings import verl_setting_problems

    rollout = "actor_rollout_ref.rollout"
    greedy = config(**{f"{rollout}.temperature": 0})
    with open_dict(greedy):
        del greedy.actor_rollout_ref.rollout.val_kwargs["do_sample"]
    assert verl_setting_problems(greedy) == []
    (refused,) = verl_setting_problems(config(**{f"{rollout}.temperature": 0, f"{rollout}.val_kwargs.do_sample": True}))
    assert refused.keys == (f"{rollout}.temperature", f"{rollout}.val_kwargs.do_sample")
    assert refused.message == "=0: sampling during validation needs temperature > 0"


@pytest.mark.parametrize("facts", ["absent", "null", "zero"])
def test_mtp_enabled_on_a_model_without_mtp_layers_is_refused_however_the_count_is_missing(facts):
    """preflight reads model.mtp_num_layers (absent, null and 0 all mean none) before MTP is judged."""
    cfg = config(**{"actor_rollout_ref.model.mtp.enable": True})
    if facts == "absent":  # a config read from a file, without the schema's default (null)
        cfg = untyped(cfg)
        with open_dict(cfg):
            del cfg.model["mtp_num_layers"]
    else:
        cfg.model.mtp_num_layers = None if facts == "null" else 0
    mtp = [p for p in preflight(cfg, machine_missing="warning") if "actor_rollout_ref.model.mtp.enable" in p.keys]
    assert [(p.level, p.keys, p.message) for p in mtp] == [
        (
            "error",
            ("actor_rollout_ref.model.mtp.enable",),
            "=true but Qwen3.5-35B-A3B has no MTP layers (verl raises); set it false",
        )
    ]


SHORTER = "shorter sequences (data.max_prompt_length / data.max_response_length) or a smaller"


@pytest.mark.parametrize("share", [0.2, 0.2001])
def test_the_training_refusal_advises_shorter_sequences_only_above_a_fifth_of_the_peak(share, monkeypatch):
    """Activations + logits above 20% of the training peak: shorter sequences would help (not at exactly 20%)."""
    from verl_qwen35.checks import memory

    e = estimate_of(config(**{DEVICE_CAP: 20}))
    parts = {**e.train_breakdown, "activations": share * e.train_gib, "logits": 0.0}
    monkeypatch.setattr(memory, "estimate_of", lambda cfg: dataclasses.replace(e, train_breakdown=parts))
    ((level, _, message),) = _memory(**{DEVICE_CAP: 20})
    assert level == "error"
    assert (SHORTER in message) is (share > 0.2)


def test_long_responses_make_the_training_refusal_advise_shorter_sequences():
    """35B, 16k responses: activations and logits are ~40% of the training peak (the estimate itself)."""
    long = {"data.max_response_length": 16384, ROLLOUT_LEN: None, DEVICE_CAP: 20}
    ((_, _, message),) = [m for m in _memory(**long) if m[0] == "error" and m[1] == TRAIN_KEYS]
    assert SHORTER in message
    ((_, _, short),) = _memory(**{DEVICE_CAP: 20})
    assert SHORTER not in short


@pytest.mark.parametrize("room", ["none", "exact", "some"])
def test_a_vllm_budget_that_holds_its_weights_but_no_sequence_says_so(room, monkeypatch):
    """The message says "does not even hold" up to and including a budget equal to weights + workspace."""
    from verl_qwen35.checks import memory

    e = estimate_of(config())
    r = e.rollout_breakdown
    needed = r["vllm_weights"] + r["vllm_workspace"]
    budget = {"none": needed / 2, "exact": needed, "some": needed + 1.0}[room]
    crafted = dataclasses.replace(e, rollout_breakdown={**r, "vllm_budget": budget}, sequences_fit=0)
    monkeypatch.setattr(memory, "estimate_of", lambda cfg: crafted)
    (refusal,) = [m for m in _memory() if m[1] == [UTIL, "parallel.gen_tp", "data.max_response_length"]]
    held = "holds" if room == "some" else "does not even hold"
    cap = e.device_memory_gib
    assert refusal[2].startswith(f"vLLM's budget {budget:.1f} GiB ({UTIL}=0.6 x {cap:g}) {held} its weights")


def test_a_config_without_hardware_or_model_facts_has_no_memory_inputs_to_judge():
    """A plain verl config (or an older launch.yaml) has no capacities: no estimate, no refusal."""
    from verl_qwen35.checks.memory import input_problems

    for section in ("hardware", "model"):
        cfg = untyped(config(**{DEVICE_CAP: -1.0}))  # an unusable capacity, refused while it is read
        assert input_problems(cfg) != []
        with open_dict(cfg):
            if section == "hardware":
                del cfg["hardware"]
            else:
                del cfg.model["num_layers"]
        assert input_problems(cfg) == [] and memory_problems(cfg) == []


LAYOUT_SIZES = ("nnodes", "devices_per_node", "tp", "pp", "cp", "ep", "etp", "gen_tp", "gen_dp", "gen_pp", "gen_ep")


@pytest.mark.parametrize("name", LAYOUT_SIZES)
@pytest.mark.parametrize("value", [0, -1, True, 1.0])
def test_every_layout_size_must_be_a_positive_integer(name, value):
    """layout_problems is also the planner's: it judges sizes it was handed, not only the preflight's."""
    from verl_qwen35.checks.layout import layout_problems, positive_problems

    base = Layout.of(config())
    bad = dataclasses.replace(base, **{name: value})
    expected = [(("error", (KEYS[name],), f"{name}={value} must be a positive integer"))]
    assert [(p.level, p.keys, p.message) for p in positive_problems(bad)] == expected
    assert [(p.level, p.keys, p.message) for p in layout_problems(bad, config().model, "gpu")] == expected
    assert positive_problems(base) == []


def test_megatron_keys_reach_a_side_that_does_not_link_them_yet():
    """link_patch: a key the actor already links (`${megatron.k}`) but the ref holds as the same plain
    value is linked on the ref too; one whose two sides disagree is left for parity to report."""
    from verl_qwen35.config.patch import link_patch
    from verl_qwen35.config.schema import ACTOR, REF

    cfg = compose(["model=35b", "device=gpu", "+megatron.seed=7", "+megatron.dist_ckpt_x=1"])
    with open_dict(cfg):
        for side, seed, other in ((ACTOR, "${megatron.seed}", 1), (REF, 7, 2)):
            node = OmegaConf.select(cfg, side)
            node.seed, node.dist_ckpt_x = seed, other
    assert link_patch(cfg) == ["seed"]
    for side in (ACTOR, REF):
        raw = OmegaConf.to_container(OmegaConf.select(cfg, side), resolve=False)
        assert raw["seed"] == "${megatron.seed}"
    assert OmegaConf.select(cfg, f"{REF}.dist_ckpt_x") == 2  # disagreeing sides untouched
    assert link_patch(cfg) == []  # both linked now: nothing more to do


DASHBOARD = "e.g. submit.address=http://head:8265 (the head's dashboard, `ray start --head`)"


@pytest.mark.parametrize(
    ("address", "reason"),
    [
        ("http://head:8265", None),
        ("https://head", None),
        ("http://head:65535", None),
        ("http://head:1", None),
        (5, "not an http:// or https:// URL with a host and port"),  # the schema types it a string: '5'
        ("", "must be the Ray dashboard's URL"),
        ("http://he ad:8265", "must be the Ray dashboard's URL"),
        ("http://head:8265\t", "must be the Ray dashboard's URL"),
        ("http://head\x01:8265", "must be the Ray dashboard's URL"),
        ("http://head:0", "not an http:// or https:// URL with a host and port"),
        ("http://head:65536", "not an http:// or https:// URL with a host and port"),
        ("ftp://head:8265", "not an http:// or https:// URL with a host and port"),
        ("http://:8265", "not an http:// or https:// URL with a host and port"),
    ],
)
def test_the_ray_job_address_is_a_dashboard_url_with_its_exact_reason(address, reason):
    cfg = compose(["model=35b", "device=gpu", "submit=ray_job"])
    cfg.submit.address = address
    found = [(p.keys, p.message) for p in submit_problems(cfg)]
    if reason is None:
        assert found == []
    else:
        sep = ", " if reason.startswith("must") else "; "
        assert found == [(("submit.address",), f"submit.address={str(address)!r}: {reason}{sep}{DASHBOARD}")]


@pytest.mark.each_verl
@pytest.mark.parametrize("found", ["not installed", "unparsable"])
def test_without_a_readable_verl_version_the_rules_of_verl_0_9_apply(found, tmp_path, monkeypatch):
    """A config-only install may lack verl's metadata (PackageNotFoundError) or carry a local version
    string that is not numbers (ValueError): the checks then follow verl 0.9, this package's default."""
    from importlib.metadata import PackageNotFoundError

    from verl_qwen35.checks import verl_types
    from verl_qwen35.checks.verl_names import name_problems

    if found == "not installed":

        def version(name: str) -> str:
            raise PackageNotFoundError(name)

        monkeypatch.setattr(verl_types, "version", version)
    else:
        (tmp_path / "verl-dev.dist-info").mkdir()
        (tmp_path / "verl-dev.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: verl\nVersion: dev\n")
        monkeypatch.syspath_prepend(str(tmp_path))
    verl_types.installed_verl_minor.cache_clear()
    try:
        assert verl_types.installed_verl_minor() == (0, 9)
        cfg = config(**{"actor_rollout_ref.actor.loss_agg_mode": "token-sum"})
        assert name_problems(cfg) == []
    finally:
        verl_types.installed_verl_minor.cache_clear()


def test_sync_rollout_mode_is_refused_under_its_own_key():
    from verl_qwen35.checks.verl_settings import verl_setting_problems

    found = verl_setting_problems(config(**{"actor_rollout_ref.rollout.mode": "sync"}))
    assert [(p.keys, p.message) for p in found] == [
        (("actor_rollout_ref.rollout.mode",), "=sync was removed from verl; use async")
    ]
    assert verl_setting_problems(config(**{"actor_rollout_ref.rollout.mode": "async"})) == []


@pytest.mark.parametrize(
    ("mode", "bypass", "refused"),
    [("R2", True, True), ("R2", False, False), ("R3", True, False), ("disabled", True, False), ("R2", None, False)],
)
def test_r2_router_replay_is_refused_with_the_rollout_correction_bypass(mode, bypass, refused):
    """verl 0.9.1 verl/utils/config.py _validate_router_replay_config: R2 records routes in the old-log-prob
    pass that bypass_mode skips. Where the installed verl has the check, it gives the same verdict."""
    from types import SimpleNamespace

    import verl.utils.config as verl_config

    from verl_qwen35.checks.verl_settings import verl_setting_problems

    replay, bypass_key = (
        "actor_rollout_ref.actor.megatron.router_replay.mode",
        "algorithm.rollout_correction.bypass_mode",
    )
    changes = {replay: mode, "actor_rollout_ref.ref.megatron.router_replay.mode": mode}
    if bypass is not None:
        changes[bypass_key] = bypass
    found = [(p.keys, p.message) for p in verl_setting_problems(config(**changes))]
    expected = (
        (replay, bypass_key),
        "=R2 records routes while recomputing old log-probs, which bypass_mode skips; set bypass_mode=false",
    )
    assert found == ([expected] if refused else [])
    verl_check = getattr(verl_config, "_validate_router_replay_config", None)  # verl 0.8.0 has none
    if verl_check is not None:
        actor = SimpleNamespace(engine=SimpleNamespace(router_replay=SimpleNamespace(mode=mode)))
        correction = None if bypass is None else {"bypass_mode": bypass}
        if refused:
            with pytest.raises(ValueError, match="R2"):
                verl_check(actor, correction)
        else:
            verl_check(actor, correction)


GROUP_KEY = "megatron.override_transformer_config.microbatch_group_size_per_vp_stage"


def test_a_training_micro_batch_the_interleaved_schedule_refuses_names_the_batch_key_vpp_and_the_group():
    """pp=2, vpp=2, DP=2: 160 sequences in micro-batches of 16 are 5 a rank, a last group of 1 < pp (step and
    mini-batch alike); the log-prob passes (20 a micro-batch: 4 a rank) are fine."""
    actor = "actor_rollout_ref.actor"
    logs = {f"actor_rollout_ref.{s}.log_prob_micro_batch_size_per_gpu": 20 for s in ("rollout", "ref")}
    cfg = config(**{f"{actor}.ppo_micro_batch_size_per_gpu": 16}, **logs)
    lo = dataclasses.replace(Layout.of(cfg), pp=2, vpp=2)
    why = "5 micro-batches leave a last group of 1 < pp=2 (microbatch_group_size_per_vp_stage=2); use a multiple of 2"
    assert [(p.keys, p.message) for p in batch_problems(cfg, lo, uses_reference(cfg))] == [
        (
            ("data.train_batch_size", KEYS["vpp"], GROUP_KEY),
            f"train_batch_size*n=32*5 for training: {why} micro-batches",
        ),
        (
            (f"{actor}.ppo_mini_batch_size", KEYS["vpp"], GROUP_KEY),
            f"ppo_mini_batch_size*n=32*5 for training: {why} micro-batches",
        ),
    ]


@pytest.mark.parametrize(("train", "per_rank"), [(32, "40"), (33, "a fraction of")])
def test_a_log_prob_micro_batch_that_does_not_split_the_step_names_its_key_and_the_batch(train, per_rank):
    """35B on 8 GPUs: DP=4; log-prob micro-batches of 3 split neither 160 nor 165 sequences."""
    rollout = "actor_rollout_ref.rollout"
    cfg = config(
        **{
            f"{rollout}.log_prob_micro_batch_size_per_gpu": 3,
            "data.train_batch_size": train,
            "actor_rollout_ref.actor.ppo_mini_batch_size": train,
        }
    )
    found = [(p.keys, p.message) for p in batch_problems(cfg, Layout.of(cfg), False) if "log_prob" in p.keys[0]]
    key = f"{rollout}.log_prob_micro_batch_size_per_gpu"
    assert found == [
        (
            (key, "data.train_batch_size", f"{rollout}.n"),
            f"log-prob pass over train_batch_size*n={train * 5}: {train * 5} sequences do not split into DP=4 ranks "
            f"x micro-batches of 3; each DP rank computes {per_rank} sequences, so {key} must divide that",
        )
    ]


@pytest.mark.parametrize("side", ["rollout", "ref"])
def test_the_deprecated_global_log_prob_micro_batch_counts_as_set(side):
    """verl still reads log_prob_micro_batch_size (deprecated); with it set, the per-GPU one may be null."""
    node = f"actor_rollout_ref.{side}"
    cfg = config(**{f"{node}.log_prob_micro_batch_size_per_gpu": None, f"{node}.log_prob_micro_batch_size": 8})
    assert not [p for p in batch_problems(cfg, Layout.of(cfg), True) if p.keys[0].startswith(node + ".log_prob")]


@pytest.mark.parametrize(("mcore", "refused"), [((0, 16), True), ((0, 17), True), ((0, 18), False), ((1, 0), False)])
def test_context_parallel_on_gpu_follows_the_megatron_core_that_has_it_for_gated_deltanet(mcore, refused):
    """megatron-core asserts cp == 1 for Gated DeltaNet before 0.18 (transformer_config.py)."""
    from verl_qwen35.checks.layout import layout_problems

    cfg = config()
    lo = dataclasses.replace(Layout.of(cfg), cp=2, devices_per_node=16)
    found = [p for p in layout_problems(lo, cfg.model, "gpu", mcore=mcore) if KEYS["cp"] in p.keys]
    version = f"{mcore[0]}.{mcore[1]}"
    assert [(p.level, p.message) for p in found] == (
        [
            (
                "error",
                f"cp=2: megatron-core {version} requires cp=1 for Gated DeltaNet layers (supported from 0.18); "
                "set parallel.cp=1",
            )
        ]
        if refused
        else []
    )


def _crafted(monkeypatch, **fields):
    """The real 35B estimate with some of its figures replaced, as memory_problems receives it."""
    from verl_qwen35.checks import memory

    e = estimate_of(config())
    crafted = dataclasses.replace(e, **fields)
    monkeypatch.setattr(memory, "estimate_of", lambda cfg: crafted)
    return crafted


@pytest.mark.parametrize(
    ("part", "advice"), [("optimizer", "offload the optimizer"), ("reference", "megatron.param_offload=true")]
)
@pytest.mark.parametrize("gib", [0.0, 0.5])
def test_the_training_advice_names_a_part_that_holds_any_memory_at_all(part, advice, gib, monkeypatch):
    e = estimate_of(config())
    parts = {**e.train_breakdown, "optimizer": 0.0, "reference": 0.0, part: gib}
    _crafted(monkeypatch, train_breakdown=parts, train_gib=e.device_memory_gib + 1)
    (refusal,) = [m for m in _memory() if m[1] == TRAIN_KEYS]
    assert (advice in refusal[2]) is (gib > 0)


def test_rollout_memory_at_exactly_90_percent_is_not_warned(monkeypatch):
    cap = estimate_of(config()).device_memory_gib
    _crafted(monkeypatch, rollout_gib=WARN_FRACTION * cap)
    assert not [m for m in _memory() if m[1] == [UTIL]]
    _crafted(monkeypatch, rollout_gib=math.nextafter(WARN_FRACTION * cap, math.inf))
    assert [m[0] for m in _memory() if m[1] == [UTIL]] == ["warning"]


@pytest.mark.parametrize(("fit", "refused"), [(0, True), (0.99, True), (1, False), (1.5, False)])
def test_vllm_must_hold_at_least_one_full_length_sequence(fit, refused, monkeypatch):
    _crafted(monkeypatch, sequences_fit=fit)
    keys = [UTIL, "parallel.gen_tp", "data.max_response_length"]
    assert bool([m for m in _memory() if m[1] == keys]) is refused


@pytest.mark.parametrize("vpp", [0, -1, 2.5, "2"])
def test_no_memory_estimate_for_a_virtual_pipeline_size_that_is_not_a_positive_integer(vpp):
    key = "actor_rollout_ref.actor.megatron.virtual_pipeline_model_parallel_size"
    assert estimate_of(config("122b_npu", **{key: vpp})) is None
    assert estimate_of(config("122b_npu", **{key: 2})) is not None


def _fake_distribution(tmp_path, monkeypatch, name: str, version: str) -> None:
    info = tmp_path / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    monkeypatch.syspath_prepend(str(tmp_path))


@pytest.mark.parametrize(
    ("found", "mcore", "said"),
    [
        ("0.16.1", (0, 16), "0.16 (installed)"),
        ("1.2.0rc1", (1, 2), "1.2 (installed)"),
        ("dev", None, "0.16 (assumed: megatron-core is not installed here)"),
        (None, None, "0.16 (assumed: megatron-core is not installed here)"),
    ],
)
def test_the_megatron_core_version_the_rules_follow(found, mcore, said, tmp_path, monkeypatch):
    """importlib.metadata's answer; none (not installed) or an unreadable one: the Ascend image's 0.16."""
    from importlib.metadata import PackageNotFoundError

    from verl_qwen35 import installed
    from verl_qwen35.checks import megatron_keys

    if found is None:

        def version(name: str) -> str:
            raise PackageNotFoundError(name)

        monkeypatch.setattr(installed, "version", version)
    else:
        _fake_distribution(tmp_path, monkeypatch, "megatron-core", found)
    installed.installed_mcore.cache_clear()
    try:
        assert installed.installed_mcore() == mcore
        assert megatron_keys.mcore_in_use() == (mcore or (0, 16), said)
    finally:
        installed.installed_mcore.cache_clear()


def test_ddp_overrides_are_named_where_the_user_sets_them():
    """Our patch (megatron.override_ddp_config) when it carries them, else the actor's own key (a plain verl config)."""
    from verl_qwen35.checks.megatron_keys import ddp_key, override_ddp_problems
    from verl_qwen35.config.patch import link_patch

    ours = compose(["model=35b", "device=gpu", "+megatron.override_ddp_config={bucket_sise: 1}"])
    link_patch(ours)  # as the builder of a Run does: `megatron.<any key>` reaches actor and ref
    assert ddp_key(ours) == "megatron.override_ddp_config"
    assert [p.keys for p in override_ddp_problems(ours)] == [("megatron.override_ddp_config.bucket_sise",)]
    plain = copy.deepcopy(ours)
    with open_dict(plain):
        del plain["megatron"]
    assert ddp_key(plain) == "actor_rollout_ref.actor.megatron.override_ddp_config"
    without = compose(["model=35b", "device=gpu"])
    if "override_ddp_config" in without.megatron:
        with open_dict(without):
            del without.megatron["override_ddp_config"]
    assert ddp_key(without) == "actor_rollout_ref.actor.megatron.override_ddp_config"


@pytest.mark.parametrize("ddp", [None, {}])
def test_no_ddp_overrides_means_nothing_to_check(ddp):
    from verl_qwen35.checks.megatron_keys import override_ddp_problems

    cfg = config()
    OmegaConf.update(cfg, "actor_rollout_ref.actor.megatron.override_ddp_config", ddp, merge=False, force_add=True)
    assert override_ddp_problems(cfg) == []


def test_ddp_overrides_are_typed_by_their_resolved_value():
    from verl_qwen35.checks.megatron_keys import override_ddp_problems

    cfg = compose(
        ["model=35b", "device=gpu", "+megatron.override_ddp_config={bucket_size: '${data.train_batch_size}'}"]
    )
    assert override_ddp_problems(cfg) == []


def test_the_ref_side_linked_and_the_actor_plain_is_linked_too():
    """The mirror of the actor-linked case: whichever side lacks the link gets it."""
    from verl_qwen35.config.patch import link_patch
    from verl_qwen35.config.schema import ACTOR, REF

    cfg = compose(["model=35b", "device=gpu", "+megatron.seed=7"])
    with open_dict(cfg):
        OmegaConf.select(cfg, ACTOR).seed = 7
        OmegaConf.select(cfg, REF).seed = "${megatron.seed}"
    assert link_patch(cfg) == ["seed"]
    assert OmegaConf.to_container(OmegaConf.select(cfg, ACTOR), resolve=False)["seed"] == "${megatron.seed}"


def _without(cfg, *paths: str):
    cfg = copy.deepcopy(cfg)
    with open_dict(cfg):
        for path in paths:
            parent, _, leaf = path.rpartition(".")
            node = OmegaConf.select(cfg, parent) if parent else cfg
            del node[leaf]
    return cfg


def test_a_plain_verl_config_has_no_megatron_patch_to_link_or_check():
    """No `megatron` section (a plain verl config): nothing to link, no patch keys to check."""
    from verl_qwen35.checks.parity import unknown_patch_errors
    from verl_qwen35.config.patch import link_patch

    plain = _without(compose(["model=35b", "device=gpu", "+megatron.sead=1"]), "megatron")
    assert link_patch(plain) == []
    assert unknown_patch_errors(plain) == []


def test_patch_keys_are_checked_against_verls_field_list_only_where_verl_composed_one():
    """critic.megatron is verl's McoreEngineConfig field list; without it there is nothing to check against."""
    from verl_qwen35.checks.parity import unknown_patch_errors

    cfg = compose(["model=35b", "device=gpu", "+megatron.sead=1"])
    assert [(p.keys, p.message) for p in unknown_patch_errors(cfg)] == [
        (
            ("megatron.sead",),
            "is not a field of verl's McoreEngineConfig (verl refuses it); did you mean megatron.seed?",
        )
    ]
    assert unknown_patch_errors(_without(cfg, "critic.megatron")) == []


def test_a_layout_number_set_on_the_verl_key_names_both_keys():
    from verl_qwen35.checks.parity import layout_source_errors

    cfg = config(**{"trainer.nnodes": 2})
    assert [(p.keys, p.message) for p in layout_source_errors(cfg)] == [
        (
            ("trainer.nnodes", "parallel.nnodes"),
            "trainer.nnodes=2 but parallel.nnodes=1: set parallel.nnodes instead, so every key that follows it agrees",
        )
    ]


def test_the_plan_says_why_a_config_without_capacities_has_no_memory_estimate():
    assert memory_lines(_without(config(), "hardware")) == [
        "memory     (no estimate: this config has no hardware.* capacities or model.num_layers)"
    ]


def test_a_pipeline_split_is_immutable():
    with pytest.raises(dataclasses.FrozenInstanceError):
        Split().first = 1  # type: ignore[misc]


INTEGER_BETWEEN = "must be an integer between 1 and 65535"


JOB_NAME_REASON = (
    "a Slurm job name here is one word of letters, digits and _ . + - (null: from trainer.experiment_name)"
)
SBATCH_REASON = (
    "one sbatch option per entry, e.g. '--qos=high' (no whitespace, quotes or '#': Slurm splits and cuts `#SBATCH` "
    "lines there)"
)


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        ("submit.job_name", "a\x01b", [("submit.job_name", JOB_NAME_REASON)]),
        (
            "submit.job_name",
            "a b",
            [("submit.job_name", JOB_NAME_REASON)],
        ),
        (
            "submit.setup",
            ["echo a\x07"],
            [("submit.setup[0]", "must not hold a line break or another control character")],
        ),
        ("submit.setup", ["echo $HOME; module load x"], []),  # shell lines, by design
        ("submit.python", "", [("submit.python", "must be a non-empty string")]),
        ("submit.python", "uv run python", []),
        ("submit.time", "4h", [("submit.time", "use Slurm's --time format, e.g. 90, 4:00:00 or 2-00:00:00")]),
        ("submit.time", 0, []),  # the schema types it text, '0': sbatch(1) reads a limit of zero as none
        ("submit.time", 1, []),
        ("submit.time", "4:00:00", []),
        ("submit.time", "2-00:00:00", []),
        ("submit.time", "UNLIMITED", []),
        ("submit.time", True, [("submit.time", "use Slurm's --time format, e.g. 90, 4:00:00 or 2-00:00:00")]),
        ("submit.cpus_per_node", 0, [("submit.cpus_per_node", "must be an integer >= 1")]),
        ("submit.cpus_per_node", 1, []),
        ("submit.sbatch", ["qos=high"], [("submit.sbatch", SBATCH_REASON)]),
        ("submit.sbatch", ["--comment=a#b"], [("submit.sbatch", SBATCH_REASON)]),  # Slurm cuts the line at '#'
        ("submit.sbatch", ["--comment='a'"], [("submit.sbatch", SBATCH_REASON)]),  # and strips quotes
        ("submit.sbatch", ["--constraint=a100&ib"], []),  # Slurm's constraint syntax: not a shell word
        ("submit.mounts", ["/data"], [("submit.mounts", "one host:container pair per entry, no comma")]),
        ("submit.mounts", ["/data:/data"], []),
        *[
            (f"submit.ray.{name}", port, [] if ok else [(f"submit.ray.{name}", INTEGER_BETWEEN)])
            for name in ("port", "dashboard_port", "client_server_port")
            for port, ok in ((0, False), (1, True), (65535, True), (65536, False))
        ],
        (
            "submit.ray.client_server_port",
            6379,
            [
                (
                    ("submit.ray.port", "submit.ray.client_server_port"),
                    "are the same port; Ray needs a different one for each",
                )
            ],
        ),
        ("submit.ray.wait_timeout", 0, [("submit.ray.wait_timeout", "must be an integer >= 1")]),
        ("submit.ray.wait_timeout", 1, []),
        ("submit.ray.interface", "ib 0", [("submit.ray.interface", "a network interface, e.g. ib0")]),
        ("submit.ray.interface", "ib0", []),
    ],
)
def test_each_slurm_submit_value_is_judged_with_its_exact_reason(key, value, expected):
    cfg = compose(["model=35b", "device=gpu", "submit=slurm"])
    OmegaConf.update(cfg, key, value, merge=False)
    found = [(p.keys, p.message) for p in submit_problems(cfg)]
    want = []
    for keys, reason in expected:
        keys = (keys,) if isinstance(keys, str) else keys
        if reason.startswith("are the same port"):
            want.append((keys, f"{' and '.join(keys)} {reason}"))
        elif key.startswith(("submit.sbatch", "submit.mounts")) and not reason.startswith("must"):
            entry = value[0]
            what = "sbatch" if key == "submit.sbatch" else "mounts"
            want.append((keys, f"submit.{what} entry {entry!r}: {reason}"))
        else:
            shown = value[0] if keys[0].endswith("[0]") else OmegaConf.select(cfg, key)  # as the schema typed it
            want.append((keys, f"{keys[0]}={shown!r}: {reason}"))
    assert found == want


@pytest.mark.parametrize(
    ("override", "key"),
    [
        ("submit.setup=echo", "submit.setup"),  # a list of shell lines
        ("submit.sbatch='--qos=high'", "submit.sbatch"),  # a list of options
        ("submit.exclusive=maybe", "submit.exclusive"),
        ("submit.ray=null", "submit.ray"),
        ("submit.ray.port=http", "submit.ray.port"),
        ("submit.ray.wait_timeout=1.5", "submit.ray.wait_timeout"),
    ],
)
def test_a_slurm_submit_value_of_the_wrong_type_is_refused_while_composing(override, key):
    with pytest.raises(UserError, match=rf"^Error merging override {re.escape(override)} {re.escape(key)}: "):
        compose(["model=35b", "device=gpu", "submit=slurm", override])


def test_a_rollout_replica_that_does_not_divide_the_world_names_its_three_sizes():
    from verl_qwen35.checks.rollout import rollout_problems

    cfg = config()  # 8 GPUs
    lo = dataclasses.replace(Layout.of(cfg), gen_tp=2, gen_dp=3)
    found = [(p.keys, p.message) for p in rollout_problems(lo, cfg.model, "vllm") if "rollout tp*dp*pp" in p.message]
    assert found == [
        (
            (KEYS["gen_tp"], KEYS["gen_dp"], KEYS["gen_pp"]),
            "world 8 is not divisible by rollout tp*dp*pp=2*3*1=6; rollout tp may be one of [1, 2, 4, 8]",
        )
    ]


@pytest.mark.parametrize(("found", "refused"), [("0.16.1", True), ("0.18.0", False)])
def test_the_preflights_packing_rule_reads_the_installed_megatron_core(found, refused, tmp_path, monkeypatch):
    """Packed sequences with Gated DeltaNet: refused before megatron-core 0.18, as installed (package metadata)."""
    from verl_qwen35 import installed

    _fake_distribution(tmp_path, monkeypatch, "megatron-core", found)
    installed.installed_mcore.cache_clear()
    try:
        packed = [p for p in preflight(config(**{"megatron.use_remove_padding": True}), machine_missing="warning")]
        packed = [p for p in packed if "packed sequences" in p.message]
    finally:
        installed.installed_mcore.cache_clear()
    if refused:
        (problem,) = packed
        assert problem.keys[0] == "megatron.use_remove_padding" and "(installed: 0.16; on GPU)" in problem.message
    else:
        assert packed == []


def test_submit_values_are_judged_only_where_there_is_a_submit_section_and_a_known_backend():
    plain = _without(config(), "submit") if "submit" in config() else config()
    assert submit_problems(plain) == []
    cfg = compose(["model=35b", "device=gpu", "submit=slurm"])
    cfg.submit.backend = "pbs"
    assert [(p.keys, p.message) for p in submit_problems(cfg)] == [
        (("submit.backend",), "submit.backend='pbs': use submit=kuberay, submit=ray_job, submit=slurm or submit=none")
    ]


def test_a_config_without_router_replay_counts_as_disabled():
    """verl's default router_replay.mode is disabled; a config (e.g. verl 0.8's) without the node passes."""
    from verl_qwen35.checks.verl_settings import verl_setting_problems

    cfg = config()
    for side in ("actor", "ref"):
        megatron = OmegaConf.select(cfg, f"actor_rollout_ref.{side}.megatron")
        if "router_replay" in megatron:
            with open_dict(megatron):
                del megatron["router_replay"]
    assert verl_setting_problems(cfg) == []


def test_r2_is_judged_on_the_actors_router_replay_and_without_a_rollout_correction_section():
    """verl checks the actor's engine router_replay; no rollout_correction section means no bypass."""
    from verl_qwen35.checks.verl_settings import verl_setting_problems

    replay, bypass = "actor_rollout_ref.actor.megatron.router_replay.mode", "algorithm.rollout_correction.bypass_mode"
    actor_only = config(**{replay: "R2", "actor_rollout_ref.ref.megatron.router_replay.mode": "disabled", bypass: True})
    assert [p.keys for p in verl_setting_problems(actor_only)] == [(replay, bypass)]
    no_section = config(**{replay: "R2"})
    if "rollout_correction" in no_section.algorithm:
        with open_dict(no_section):
            del no_section.algorithm["rollout_correction"]
    assert verl_setting_problems(no_section) == []


@pytest.mark.parametrize(("temperature", "refused"), [(0, True), (-0.1, True), (0.5, False), (1.0, False)])
def test_sampling_during_validation_needs_a_positive_temperature(temperature, refused):
    from verl_qwen35.checks.verl_settings import verl_setting_problems

    rollout = "actor_rollout_ref.rollout"
    cfg = config(**{f"{rollout}.val_kwargs.do_sample": True, f"{rollout}.temperature": temperature})
    found = [(p.keys, p.message) for p in verl_setting_problems(cfg)]
    assert found == (
        [
            (
                (f"{rollout}.temperature", f"{rollout}.val_kwargs.do_sample"),
                f"={temperature}: sampling during validation needs temperature > 0",
            )
        ]
        if refused
        else []
    )


@pytest.mark.parametrize(
    ("node", "name"),
    [
        ("actor_rollout_ref.actor", "ppo_micro_batch_size"),
        ("actor_rollout_ref.rollout", "log_prob_micro_batch_size"),
        ("actor_rollout_ref.ref", "log_prob_micro_batch_size"),
    ],
)
def test_the_deprecated_global_micro_batch_and_the_per_gpu_one_exclude_each_other(node, name):
    """verl/utils/config.py check_mutually_exclusive, per side (actor, rollout, ref)."""
    from verl_qwen35.checks.verl_settings import verl_setting_problems

    cfg = config(**{f"{node}.{name}": 8, f"{node}.{name}_per_gpu": 1})
    assert [(p.keys, p.message) for p in verl_setting_problems(cfg)] == [
        (
            (f"{node}.{name}", f"{node}.{name}_per_gpu"),
            f"both are set; remove {node}.{name} (deprecated, only *_per_gpu is supported)",
        )
    ]
