"""model/pipeline.py against megatron-core on a whole grid, not a random draw: every split of 40 and 48
layers over pp 1-6 and 8, vpp null-5, uneven first/last stages and embedding/loss slots.

For each point the fast verdict (refused or not) must equal megatron-core's (TransformerConfig plus
`get_num_layers_to_build` for every rank and virtual stage, as `validators.real.real_transformer_problems`
builds them), and where it builds, the layers per model chunk (`chunk_layers`, which the memory estimate
and uniform recompute use) must equal megatron-core's count chunk by chunk.
"""

import dataclasses
import itertools
import warnings
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from verl_qwen35.installed import conf_dir
from verl_qwen35.model.layout import Layout
from verl_qwen35.model.pipeline import Split, chunk_layers, parse_layout, split_problems, stage_layers
from verl_qwen35.validators.real import facts_config, real_transformer_problems

ARCH = OmegaConf.load(Path(conf_dir()) / "model" / "35b.yaml").model
SPLITS = [
    Split(),
    Split(embedding=True),
    Split(loss=True),
    Split(embedding=True, loss=True),
    *(Split(first=n) for n in (-1, 0, 1, 2, 4, 6, 8, 10, 12, 20, 40)),
    *(Split(last=n) for n in (0, 2, 8, 10, 20)),
    *(Split(first=f, last=n) for f, n in ((2, 2), (4, 8), (10, 10), (20, 20), (24, 24), (20, 28), (19, 19))),
    Split(first=4, embedding=True),
]
GRID = list(itertools.product((40, 48), (1, 2, 3, 4, 5, 6, 8), (None, 1, 2, 3, 4, 5), SPLITS))


def otc_of(split: Split) -> dict:
    return {
        k: v
        for k, v in {
            "num_layers_in_first_pipeline_stage": split.first,
            "num_layers_in_last_pipeline_stage": split.last,
            "account_for_embedding_in_pipeline_split": split.embedding or None,
            "account_for_loss_in_pipeline_split": split.loss or None,
        }.items()
        if v is not None
    }


def megatron_chunks(layers: int, lo: Layout, otc: dict) -> list[int]:
    from megatron.core.transformer.transformer_block import get_num_layers_to_build
    from megatron.core.transformer.transformer_config import TransformerConfig

    arch = OmegaConf.merge(ARCH, {"num_layers": layers})
    config = TransformerConfig(**{**facts_config(arch, lo, sequence_parallel=False, dtype="bfloat16", mtp=None), **otc})
    vps = range(lo.vpp or 1)
    return [
        get_num_layers_to_build(config, vp_stage=vp if lo.vpp else None, pp_rank=rank)
        for rank in range(lo.pp)
        for vp in vps
    ]


@pytest.mark.parametrize("layers", [40, 48])
def test_the_split_and_its_chunks_agree_with_megatron_core_on_the_whole_grid(layers, capsys):
    compared = refused = 0
    for n, pp, vpp, split in GRID:
        if n != layers:
            continue
        lo = Layout(1, 8, 1, pp, 1, 1, 1, vpp, 1)
        otc = otc_of(split)
        fast = split_problems(layers, pp, vpp, split)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            real = real_transformer_problems(otc, OmegaConf.merge(ARCH, {"num_layers": layers}), lo, "gpu")
        assert bool(fast) == bool(real), (pp, vpp, split, fast, [str(p) for p in real])
        compared += 1
        refused += bool(fast)
        if not fast:
            chunks = chunk_layers(layers, pp, vpp, split)
            # megatron-core lists rank-major (rank 0: its virtual stages, ...); chunk_layers rank-major too
            real_chunks = megatron_chunks(layers, dataclasses.replace(lo), otc)
            assert chunks == real_chunks, (pp, vpp, split)
            assert sum(chunks) == layers
    with capsys.disabled():
        print(f"\npipeline grid ({layers} layers): {compared} splits compared with megatron-core, {refused} refused")
    assert 0 < refused < compared


F = "megatron.override_transformer_config.num_layers_in_first_pipeline_stage"
L = "megatron.override_transformer_config.num_layers_in_last_pipeline_stage"
E = "megatron.override_transformer_config.account_for_embedding_in_pipeline_split"
S = "megatron.override_transformer_config.account_for_loss_in_pipeline_split"
UNEVEN = "the first/last counts must leave layers exactly when middle stages remain"


@pytest.mark.parametrize(
    ("layers", "pp", "vpp", "split", "expected"),
    [
        (
            40,
            1,
            2,
            Split(),
            [
                (
                    ("parallel.vpp", "parallel.pp"),
                    "vpp=2 needs pp > 1 (interleaved schedule); set parallel.vpp=null or raise pp",
                )
            ],
        ),
        (
            40,
            1,
            None,
            Split(first=4),
            [
                (
                    (F, "parallel.pp"),
                    "num_layers_in_first/last_pipeline_stage need pp > 1 (pp=1); remove them or raise pp",
                )
            ],
        ),
        (40, 2, None, Split(first=0), [((F,), "=0: the first pipeline stage needs at least one layer")]),
        (40, 2, None, Split(last=0), [((L,), "=0: the last pipeline stage needs at least one layer")]),
        (40, 2, None, Split(first=1), []),
        (
            40,
            4,
            2,
            Split(first=3, last=5),
            [
                ((F, "parallel.vpp"), "=3 layers on the first stage are not divisible by vpp=2"),
                ((L, "parallel.vpp"), "=5 layers on the last stage are not divisible by vpp=2"),
            ],
        ),
        (40, 4, None, Split(first=2, last=2), []),
        (
            40,
            4,
            None,
            Split(first=3, last=4),
            [
                (
                    (F, L, "parallel.pp"),
                    "40 layers with first=3 last=4 leave 33 layers for 2 middle stages: not even; middle stages may "
                    "be one of [1, 3, 11, 33] if pp is changed",
                )
            ],
        ),
        (
            40,
            2,
            None,
            Split(first=19, last=19),
            [
                (
                    (F, L, "parallel.pp"),
                    f"40 layers with first=19 last=19 leave 2 layers for 0 middle stage(s) (pp=2); {UNEVEN}",
                )
            ],
        ),
        (
            40,
            3,
            None,
            Split(first=20, last=20),
            [
                (
                    (F, L, "parallel.pp"),
                    f"40 layers with first=20 last=20 leave 0 layers for 1 middle stage(s) (pp=3); {UNEVEN}",
                )
            ],
        ),
        (40, 2, None, Split(first=20, last=20), []),
        (
            40,
            4,
            3,
            Split(first=6, last=6),
            [(("parallel.vpp", "parallel.pp"), "vpp=3 does not divide the 14 layers of each middle stage")],
        ),
        (40, 4, 2, Split(first=6, last=6), []),
        (
            40,
            2,
            None,
            Split(first=4, embedding=True),
            [
                (
                    (F, E),
                    "num_layers_in_first/last_pipeline_stage cannot be combined with "
                    "account_for_embedding/loss_in_pipeline_split; keep one of the two ways to split",
                )
            ],
        ),
        (
            40,
            2,
            None,
            Split(last=4, loss=True),
            [
                (
                    (F, E),
                    "num_layers_in_first/last_pipeline_stage cannot be combined with "
                    "account_for_embedding/loss_in_pipeline_split; keep one of the two ways to split",
                )
            ],
        ),
        (
            40,
            4,
            None,
            Split(embedding=True),
            [(("parallel.pp", E), "pp=4 does not divide 40 layers + embedding = 41 slots; pp may be one of [41]")],
        ),
        (
            40,
            4,
            None,
            Split(embedding=True, loss=True),
            [
                (
                    ("parallel.pp", E, S),
                    "pp=4 does not divide 40 layers + embedding + loss = 42 slots; pp may be one of [2, 3, 6, 7, 14, "
                    "21, 42]",
                )
            ],
        ),
        (40, 6, None, Split(embedding=True, loss=True), []),
        (
            39,
            2,
            3,
            Split(loss=True),
            [
                (
                    ("parallel.vpp", "parallel.pp", S),
                    "vpp=3 does not divide the 20 slots per pipeline stage (39 layers + loss = 40 slots / pp=2); vpp "
                    "may be one of [2, 4, 5, 10, 20]",
                )
            ],
        ),
        (41, 2, None, Split(loss=True), []),
        (
            40,
            2,
            3,
            Split(),
            [
                (
                    ("parallel.vpp", "parallel.pp"),
                    "vpp=3 does not divide the 20 slots per pipeline stage (40 layers / pp=2); vpp may be one of [2, "
                    "4, 5, 10, 20]",
                )
            ],
        ),
        (40, 2, 4, Split(), []),
        (1, 1, None, Split(), []),
        (
            7,
            7,
            2,
            Split(),
            [
                (
                    ("parallel.vpp", "parallel.pp"),
                    "vpp=2 does not divide the 1 slots per pipeline stage (7 layers / pp=7); vpp may be one of none "
                    "(use null)",
                )
            ],
        ),
        (7, 2, None, Split(), [(("parallel.pp",), "pp=2 does not divide 7 layers; pp may be one of [7]")]),
        (1, 2, None, Split(), [(("parallel.pp",), "pp=2 does not divide 1 layers; pp may be one of [1]")]),
    ],
)
def test_every_refusal_of_the_split_names_its_keys_and_the_way_out(layers, pp, vpp, split, expected):
    assert split_problems(layers, pp, vpp, split) == expected


@pytest.mark.parametrize(
    ("pp", "vpp", "split", "stages"),
    [
        (1, None, Split(), "40"),
        (2, 2, Split(), "20 (2 chunks of 10)"),
        (3, None, Split(embedding=True, loss=True), "14"),
        (4, None, Split(first=4, last=4), "first 4, middle 16, last 4"),
        (2, None, Split(first=16), "first 16, middle 24, last 24"),
        (2, None, Split(last=16), "first 24, middle 24, last 16"),
        (2, None, Split(layout="Et*20|t*20L"), "custom layout"),
    ],
)
def test_the_plans_stage_line(pp, vpp, split, stages):
    assert stage_layers(40, pp, vpp, split) == stages


LAYOUT = "megatron.override_transformer_config.pipeline_model_parallel_layout"
MTP = "megatron.override_transformer_config.mtp_num_layers"
T20 = ["decoder"] * 20


@pytest.mark.parametrize(
    ("pp", "vpp", "layout", "mtp", "expected"),
    [
        (2, None, "Et*20|t*20L", None, []),
        (2, None, "E,t*20|t*20,L", None, []),  # commas are ignored
        (3, None, "E(t|)*2t*38L", None, []),  # (t|)*2 -> t|t|: three stages, 1 + 1 + 38 decoders
        (2, None, [["embedding", *T20], [*T20, "loss"]], None, []),
        (2, None, [["Embedding ", *T20], [*T20, " LOSS"]], None, []),  # names as LayerType, any case, stripped
        (
            2,
            None,
            [["embedding", *T20], [*T20, "attention"]],
            None,
            [((LAYOUT,), "unknown layer letters ['<attention>']; use E (embedding), t (decoder), m (MTP), L (loss)")],
        ),
        (
            2,
            None,
            "Et*20|t*20x",
            None,
            [((LAYOUT,), "unknown layer letters ['x']; use E (embedding), t (decoder), m (MTP), L (loss)")],
        ),
        (
            2,
            None,
            5,
            None,
            [((LAYOUT,), "give the layout as a string such as 'Et*3|(tt|)*18,t|tL' or a list of stage lists")],
        ),
        (
            2,
            None,
            ["Et*20", "t*20L"],
            None,
            [((LAYOUT,), "give the layout as a string such as 'Et*3|(tt|)*18,t|tL' or a list of stage lists")],
        ),
        (3, None, "Et*20|t*20L", None, [((LAYOUT, "parallel.pp"), "has 2 stages, not a multiple of pp=3")]),
        (
            2,
            None,
            "Et*10|t*10|t*10|t*10L",
            None,
            [((LAYOUT, "parallel.vpp"), "has 4 stages = pp 2 x 2 virtual stage(s) but vpp=None; set parallel.vpp=2")],
        ),
        (2, 2, "Et*10|t*10|t*10|t*10L", None, []),
        (
            2,
            2,
            "Et*20|t*20L",
            None,
            [((LAYOUT, "parallel.vpp"), "has 2 stages = pp 2 x 1 virtual stage(s) but vpp=2; set parallel.vpp=null")],
        ),
        (2, 1, "Et*20|t*20L", None, []),  # vpp=1 is one virtual stage
        (2, None, "t*20|t*20L", None, [((LAYOUT,), "must start with the embedding E, given exactly once")]),
        (2, None, "EEt*20|t*20L", None, [((LAYOUT,), "must start with the embedding E, given exactly once")]),
        (2, None, "Et*20|Et*20L", None, [((LAYOUT,), "must start with the embedding E, given exactly once")]),
        (2, None, "Et*20|t*20", None, [((LAYOUT,), "must end with the loss L, given exactly once")]),
        (2, None, "Et*20|Lt*20L", None, [((LAYOUT,), "must end with the loss L, given exactly once")]),
        (2, None, "Et*20|t*19L", None, [((LAYOUT,), "places 39 decoder layers (t) but the model has 40")]),
        (2, None, "Et*20|t*21L", None, [((LAYOUT,), "places 41 decoder layers (t) but the model has 40")]),
        (2, None, "Et*20|t*20mL", None, [((LAYOUT, MTP), "places 1 MTP layers (m) but mtp_num_layers=None")]),
        (2, None, "Et*20|t*20mL", 1, []),
        (2, None, "Et*20|t*20L", 1, [((LAYOUT, MTP), "places 0 MTP layers (m) but mtp_num_layers=1")]),
        (2, None, "Et*20|mt*20L", 1, [((LAYOUT,), "decoder layers (t) must come before MTP layers (m)")]),
    ],
)
def test_a_pipeline_layout_is_judged_as_megatron_core_reads_it(pp, vpp, layout, mtp, expected):
    """pipeline_parallel_layer_layout.py; the real TransformerConfig gives the same verdict on each."""
    split = Split(layout=layout)
    assert split_problems(40, pp, vpp, split, mtp) == expected
    if isinstance(layout, str):  # the list form takes LayerType members in megatron; ours takes their names
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            lo = Layout(1, 8, 1, pp, 1, 1, 1, vpp, 1)
            real = real_transformer_problems({"pipeline_model_parallel_layout": layout}, ARCH, lo, "gpu", mtp=mtp)
        assert bool(real) == bool(expected), [str(p) for p in real]
        if not expected:
            assert chunk_layers(40, pp, vpp, split) == [stage.count("t") for stage in parse_layout(layout)]


def test_a_layout_excludes_the_other_ways_to_split():
    found = split_problems(40, 2, None, Split(first=20, layout="Et*20|t*20L"))
    assert found == [
        (
            (LAYOUT, "megatron.override_transformer_config.num_layers_in_first_pipeline_stage", E),
            "pipeline_model_parallel_layout replaces num_layers_in_first/last_pipeline_stage and "
            "account_for_embedding/loss_in_pipeline_split; remove those",
        )
    ]
    for other in (Split(last=20), Split(embedding=True), Split(loss=True)):
        assert split_problems(40, 2, None, dataclasses.replace(other, layout="Et*20|t*20L")) == found


def test_parse_layout_expands_groups_and_repeats_like_megatron():
    assert parse_layout("E(t|)*2t*3L") == [["E", "t"], ["t"], ["t", "t", "t", "L"]]
    assert parse_layout("E,t|t,L") == [["E", "t"], ["t", "L"]]
    assert parse_layout("Et*2|(tt|)*2mL") == [["E", "t", "t"], ["t", "t"], ["t", "t"], ["m", "L"]]


def test_the_list_form_of_a_layout_names_mtp_and_counts_decoders_per_stage():
    """The list form names LayerType members; `mtp` places an MTP layer as `m` does in the string form."""
    with_mtp = [["embedding", *T20], [*T20, "mtp", "loss"]]
    assert split_problems(40, 2, None, Split(layout=with_mtp), 1) == []
    assert chunk_layers(40, 2, None, Split(layout=with_mtp)) == [20, 20]
    assert chunk_layers(40, 2, None, Split(layout=[["Embedding", *T20[:8]], [*(["decoder"] * 32), "loss"]])) == [8, 32]
