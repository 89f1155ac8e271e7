"""The layout's groups (model/groups.py) are megatron-core's own: `RankGenerator(...).get_ranks(token)` of
megatron-core 0.16.1, built as `parallel_state.initialize_model_parallel` builds its two generators with the
order verl leaves at its default; the rollout's are vLLM's (its rank grid, rebuilt here with torch as
`vllm/distributed/parallel_state.py initialize_model_parallel` does: vLLM is not installed)."""

import inspect

import pytest
import torch
from megatron.core import parallel_state
from megatron.core.parallel_state import RankGenerator

from tests.configs import resolved
from verl_qwen35.config.choices import presets
from verl_qwen35.model.groups import ORDER, Groups, crossing_summary
from verl_qwen35.model.layout import Layout

PRESETS = [f"{m}_{d}" for m, d in presets()]
# (nnodes, devices_per_node, tp, pp, cp, ep, etp, vpp, gen_tp, gen_dp, gen_pp, gen_ep)
UNUSUAL = {
    "cp2": Layout(2, 8, 2, 2, 2, 4, 2, None, 4, 2, 1, 8),
    "etp_not_tp": Layout(2, 8, 4, 1, 1, 4, 2, None, 8, 1, 1, 1),
    "etp_above_tp": Layout(4, 8, 1, 2, 1, 2, 4, None, 2, 4, 1, 8),
    "pp8_16x16": Layout(16, 16, 2, 8, 1, 16, 1, 2, 16, 16, 1, 256),
    "tp1": Layout(2, 8, 1, 1, 1, 16, 1, None, 1, 8, 1, 8),
    "ep_spans_nodes": Layout(8, 8, 2, 2, 1, 32, 1, None, 8, 4, 1, 32),
    "tp_spans_nodes": Layout(4, 8, 16, 2, 1, 16, 1, None, 16, 1, 1, 1),
    "cp4_tp1": Layout(1, 8, 1, 1, 4, 8, 1, None, 2, 1, 2, 1),
    "one_device": Layout(1, 1, 1, 1, 1, 1, 1, None, 1, 1, 1, 1),
}
LAYOUTS = {**{p: None for p in PRESETS}, **UNUSUAL}
DECODER = ("tp", "cp", "dp", "pp", "tp-cp", "tp-pp", "dp-cp", "tp-dp", "tp-dp-cp", "cp-dp", "tp-cp-dp-pp")
EXPERT = {"ep": "ep", "etp": "tp", "edp": "dp", "tp-ep": "tp-ep", "tp-ep-pp": "tp-ep-pp"}


def layout_of(name: str) -> Layout:
    return UNUSUAL[name] if name in UNUSUAL else Layout.of(resolved(name))


def generators(lo: Layout) -> tuple[RankGenerator, RankGenerator]:
    """initialize_model_parallel's two generators for this layout (megatron-core 0.16.1, parallel_state.py)."""
    order = inspect.signature(parallel_state.initialize_model_parallel).parameters["order"].default
    decoder = RankGenerator(tp=lo.tp, ep=1, dp=lo.dp, pp=lo.pp, cp=lo.cp, order=order)
    expert = RankGenerator(tp=lo.etp, ep=lo.ep, dp=lo.expert_dp, pp=lo.pp, cp=1, order=order)
    return decoder, expert


def test_the_order_is_megatron_cores_default_which_verl_keeps():
    order = inspect.signature(parallel_state.initialize_model_parallel).parameters["order"].default
    assert tuple(order.split("-")) == ORDER


@pytest.mark.parametrize("name", LAYOUTS)
def test_training_groups_are_megatron_cores(name):
    lo = layout_of(name)
    g = Groups(lo)
    decoder, expert = generators(lo)
    for token in DECODER:
        assert g.training(token) == decoder.get_ranks(token), token
    for kind, token in EXPERT.items():
        assert g.training(kind) == expert.get_ranks(token), kind
    # megatron-core's own consistency assertion: the PP groups of both generators are the same
    assert expert.get_ranks("pp") == g.training("pp")


@pytest.mark.parametrize("name", LAYOUTS)
def test_each_device_label_is_its_index_in_megatron_cores_groups(name):
    """What a picture prints on a device (TP, CP, PP, DP, EP, ETP, EDP rank) is the rank's position in the
    group megatron-core puts it in (get_tensor_model_parallel_rank etc. are group.rank())."""
    lo = layout_of(name)
    places = Groups(lo).places
    decoder, expert = generators(lo)
    found = {}
    for attr, gen, token in (
        ("tp", decoder, "tp"),
        ("cp", decoder, "cp"),
        ("pp", decoder, "pp"),
        ("dp", decoder, "dp"),
        ("ep", expert, "ep"),
        ("etp", expert, "tp"),
        ("edp", expert, "dp"),
    ):
        for group in gen.get_ranks(token):
            for index, rank in enumerate(group):
                found[(rank, attr)] = index
    assert {(p.rank, a): getattr(p, a) for p in places for a in ("tp", "cp", "pp", "dp", "ep", "etp", "edp")} == found
    assert [(p.node, p.device) for p in places] == [divmod(r, lo.devices_per_node) for r in range(lo.world)]


def vllm_groups(lo: Layout) -> dict[str, list[list[int]]]:
    """vLLM's groups inside one replica (vllm/distributed/parallel_state.py initialize_model_parallel, PCP 1):
    all_ranks = arange(world).reshape(-1, dp, pp, tp); TP view(-1, tp); PP transpose(2, 3); DP transpose(1, 3);
    EP transpose(1, 2).reshape(-1, dp * tp). Replicas follow one another (verl replica.py init_hybrid)."""
    width = lo.gen_tp * lo.gen_dp * lo.gen_pp
    out: dict[str, list[list[int]]] = {"tp": [], "pp": [], "dp": [], "ep": []}
    for replica in range(lo.world // width):
        ranks = torch.arange(width).reshape(-1, lo.gen_dp, lo.gen_pp, lo.gen_tp) + replica * width
        out["tp"] += [x.tolist() for x in ranks.view(-1, lo.gen_tp).unbind(0)]
        out["pp"] += [x.tolist() for x in ranks.transpose(2, 3).reshape(-1, lo.gen_pp).unbind(0)]
        out["dp"] += [x.tolist() for x in ranks.transpose(1, 3).reshape(-1, lo.gen_dp).unbind(0)]
        out["ep"] += [x.tolist() for x in ranks.transpose(1, 2).reshape(-1, lo.gen_dp * lo.gen_tp).unbind(0)]
    return out


@pytest.mark.parametrize("name", LAYOUTS)
def test_rollout_groups_are_vllms(name):
    lo = layout_of(name)
    g = Groups(lo)
    reference = vllm_groups(lo)
    for kind in ("tp", "pp", "dp"):
        assert sorted(g.rollout(kind)) == sorted(reference[kind]), kind
    # verl turns expert parallelism on only for expert_parallel_size > 1 (vllm_async_server.py)
    assert sorted(g.rollout("ep")) == (sorted(reference["ep"]) if lo.gen_ep > 1 else [])
    width = lo.gen_tp * lo.gen_dp * lo.gen_pp
    assert g.rollout("replica") == [list(range(k, k + width)) for k in range(0, lo.world, width)]
    for p in g.rollout_places:  # the printed indices are positions in those groups
        assert g.rollout("tp")[[p.rank in t for t in g.rollout("tp")].index(True)].index(p.rank) == p.tp
        if p.ep is not None:
            group = next(e for e in reference["ep"] if p.rank in e)
            assert group.index(p.rank) == p.ep


@pytest.mark.parametrize("name", LAYOUTS)
def test_crossing_counts_the_groups_with_members_on_two_nodes(name):
    lo = layout_of(name)
    decoder, expert = generators(lo)
    summary = crossing_summary(Groups(lo))["training"]
    for shown, (gen, token) in {"TP": (decoder, "tp"), "EP": (expert, "ep"), "PP": (decoder, "pp")}.items():
        groups = gen.get_ranks(token)
        if len(groups[0]) == 1:
            assert shown not in summary
            continue
        crossing = sum(len({r // lo.devices_per_node for r in grp}) > 1 for grp in groups)
        assert summary[shown] == (len(groups[0]), len(groups), crossing)


def test_a_layout_megatron_core_cannot_build_is_refused():
    with pytest.raises(ValueError, match="not divisible"):
        Groups(Layout(1, 8, 3, 1, 1, 1, 1, None, 8, 1, 1, 1))
    with pytest.raises(ValueError, match="experts"):
        Groups(Layout(1, 8, 2, 1, 1, 16, 1, None, 8, 1, 1, 1))
