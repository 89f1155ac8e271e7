"""How megatron-core splits the decoder layers over pipeline (and virtual pipeline) stages.

Pure arithmetic over plain numbers, so the layout planner can call it for thousands of layouts.
Upstream (megatron-core 0.16.1):
- `transformer/transformer_config.py` `TransformerConfig.__post_init__` ("PP layout", "Uneven PP",
  account_for_embedding/loss_in_pipeline_split);
- `transformer/transformer_block.py` `get_num_layers_to_build` (even split, VPP chunks, embedding/loss
  taking a layer slot on the first/last stage);
- `transformer/pipeline_parallel_layer_layout.py` (the `pipeline_model_parallel_layout` string);
- `parallel_state.py` `initialize_model_parallel` (VPP needs PP > 1).
"""

import re
from dataclasses import dataclass

from verl_qwen35.model.layout import divisors

OTC = "megatron.override_transformer_config"
PP, VPP = "parallel.pp", "parallel.vpp"
FIRST, LAST = f"{OTC}.num_layers_in_first_pipeline_stage", f"{OTC}.num_layers_in_last_pipeline_stage"
EMBEDDING, LOSS = f"{OTC}.account_for_embedding_in_pipeline_split", f"{OTC}.account_for_loss_in_pipeline_split"
LAYOUT = f"{OTC}.pipeline_model_parallel_layout"
MTP = f"{OTC}.mtp_num_layers"


@dataclass(frozen=True)
class Split:
    """The pipeline-split settings of `override_transformer_config` (all optional)."""

    first: int | None = None
    last: int | None = None
    embedding: bool = False
    loss: bool = False
    layout: str | None = None

    @classmethod
    def of(cls, otc: dict) -> "Split":
        return cls(
            first=otc.get("num_layers_in_first_pipeline_stage"),
            last=otc.get("num_layers_in_last_pipeline_stage"),
            embedding=bool(otc.get("account_for_embedding_in_pipeline_split")),
            loss=bool(otc.get("account_for_loss_in_pipeline_split")),
            layout=otc.get("pipeline_model_parallel_layout"),
        )


Found = list[tuple[tuple[str, ...], str]]


def split_problems(layers: int, pp: int, vpp: int | None, split: Split = Split(), mtp: int | None = None) -> Found:
    """(keys, message) for every way this split fails in megatron-core; empty when it builds."""
    if vpp is not None and pp == 1:  # parallel_state.py initialize_model_parallel
        return [((VPP, PP), f"vpp={vpp} needs pp > 1 (interleaved schedule); set parallel.vpp=null or raise pp")]
    if split.layout is not None:
        return _layout_problems(split, layers, pp, vpp, mtp)
    uneven = split.first is not None or split.last is not None
    if uneven and (split.embedding or split.loss):
        return [
            (
                (FIRST, EMBEDDING),
                "num_layers_in_first/last_pipeline_stage cannot be combined with "
                "account_for_embedding/loss_in_pipeline_split; keep one of the two ways to split",
            )
        ]
    if uneven:
        return _uneven_problems(layers, pp, vpp, split)
    return _even_problems(layers, pp, vpp, split)


def _uneven_problems(layers: int, pp: int, vpp: int | None, split: Split) -> Found:
    if pp == 1:  # fast-path statement of a no-op: one stage holds every layer
        return [((FIRST, PP), "num_layers_in_first/last_pipeline_stage need pp > 1 (pp=1); remove them or raise pp")]
    middle, stages, found = layers, pp, []
    for key, count, name in ((FIRST, split.first, "first"), (LAST, split.last, "last")):
        if count is None:
            continue
        if count <= 0:
            return [((key,), f"={count}: the {name} pipeline stage needs at least one layer")]
        if vpp is not None and count % vpp:
            found.append(((key, VPP), f"={count} layers on the {name} stage are not divisible by vpp={vpp}"))
        middle, stages = middle - count, stages - 1
    if found:
        return found
    given = f"first={split.first} last={split.last}"
    if bool(middle) != bool(stages):
        return [
            (
                (FIRST, LAST, PP),
                f"{layers} layers with {given} leave {middle} layers for {stages} middle stage(s) (pp={pp}); "
                "the first/last counts must leave layers exactly when middle stages remain",
            )
        ]
    if stages and middle % stages:
        return [
            (
                (FIRST, LAST, PP),
                f"{layers} layers with {given} leave {middle} layers for {stages} middle stages: not even; "
                f"middle stages may be one of {divisors(middle)} if pp is changed",
            )
        ]
    if stages and vpp is not None and (middle // stages) % vpp:
        return [((VPP, PP), f"vpp={vpp} does not divide the {middle // stages} layers of each middle stage")]
    return []


def _even_problems(layers: int, pp: int, vpp: int | None, split: Split) -> Found:
    slots = layers + split.embedding + split.loss
    extra = ["embedding"] * split.embedding + ["loss"] * split.loss
    counted = f"{layers} layers" + (f" + {' + '.join(extra)} = {slots} slots" if extra else "")
    keys = (PP, *((EMBEDDING,) if split.embedding else ()), *((LOSS,) if split.loss else ()))
    if slots % pp:
        choices = [d for d in divisors(slots) if d > 1]
        return [(keys, f"pp={pp} does not divide {counted}; pp may be one of {choices or [1]}")]
    per_stage = slots // pp
    if vpp is not None and per_stage % vpp:  # split_problems refused vpp at pp=1 before
        return [
            (
                (VPP, *keys),
                f"vpp={vpp} does not divide the {per_stage} slots per pipeline stage ({counted} / pp={pp}); "
                f"vpp may be one of {divisors(per_stage)[1:] or 'none (use null)'}",
            )
        ]
    return []


def parse_layout(text: str) -> list[list[str]]:
    """`pipeline_model_parallel_layout` string -> one list of layer letters per (virtual) stage, as
    megatron-core's `PipelineParallelLayerLayout.parse_str_to_list` reads it."""
    text = text.replace(",", "")
    for pattern in (r"\(([^)]+)\)\*(\d+)", r"(.)\*(\d+)"):
        text = re.sub(pattern, lambda m: m.group(1) * int(m.group(2)), text)
    return [list(stage) for stage in text.split("|")]


def _layout_problems(split: Split, layers: int, pp: int, vpp: int | None, mtp: int | None) -> Found:
    if split.first is not None or split.last is not None or split.embedding or split.loss:
        return [
            (
                (LAYOUT, FIRST, EMBEDDING),
                "pipeline_model_parallel_layout replaces num_layers_in_first/last_pipeline_stage and "
                "account_for_embedding/loss_in_pipeline_split; remove those",
            )
        ]
    if isinstance(split.layout, str):
        stages = parse_layout(split.layout)
    elif isinstance(split.layout, list | tuple) and all(isinstance(s, list | tuple) for s in split.layout):
        # The list form names LayerType members (transformer/enums.py); letters as in the string form.
        names = {"embedding": "E", "loss": "L", "decoder": "t", "mtp": "m"}
        stages = [[names.get(str(x).strip().lower(), f"<{x}>") for x in stage] for stage in split.layout]
    else:
        return [((LAYOUT,), "give the layout as a string such as 'Et*3|(tt|)*18,t|tL' or a list of stage lists")]
    unknown = sorted({c for stage in stages for c in stage if c not in ("E", "L", "t", "m")})
    if unknown:
        return [((LAYOUT,), f"unknown layer letters {unknown}; use E (embedding), t (decoder), m (MTP), L (loss)")]
    if len(stages) % pp:
        return [((LAYOUT, PP), f"has {len(stages)} stages, not a multiple of pp={pp}")]
    detected = len(stages) // pp
    if (vpp or 1) != detected:
        # TransformerConfig adopts the layout's VPP, but verl initialises the process groups with the
        # engine's (parallel.vpp): the two must agree (verl/workers/engine/megatron/transformer_impl.py).
        want = "null" if detected == 1 else detected
        return [
            (
                (LAYOUT, VPP),
                f"has {len(stages)} stages = pp {pp} x {detected} virtual stage(s) but vpp={vpp}; "
                f"set parallel.vpp={want}",
            )
        ]
    # Stage i is virtual stage i // pp of pipeline rank i % pp: the list is already in layer order.
    flat = [c for stage in stages for c in stage]
    counts = {c: flat.count(c) for c in "ELtm"}
    if not flat or flat[0] != "E" or counts["E"] != 1:
        return [((LAYOUT,), "must start with the embedding E, given exactly once")]
    if flat[-1] != "L" or counts["L"] != 1:
        return [((LAYOUT,), "must end with the loss L, given exactly once")]
    if counts["t"] != layers:
        return [((LAYOUT,), f"places {counts['t']} decoder layers (t) but the model has {layers}")]
    if counts["m"] != (mtp or 0):
        return [((LAYOUT, MTP), f"places {counts['m']} MTP layers (m) but mtp_num_layers={mtp}")]
    if "m" in flat and "t" in flat[flat.index("m") :]:
        return [((LAYOUT,), "decoder layers (t) must come before MTP layers (m)")]
    return []


def stage_layers(layers: int, pp: int, vpp: int | None, split: Split = Split()) -> str:
    """The decoder layers each pipeline stage holds, for the plan (assumes the split is valid)."""
    if split.layout is not None:
        return "custom layout"
    if split.first is not None or split.last is not None:
        inner = pp - (split.first is not None) - (split.last is not None)
        middle = (layers - (split.first or 0) - (split.last or 0)) // inner if inner else 0
        first = middle if split.first is None else split.first
        last = middle if split.last is None else split.last
        return f"first {first}, middle {middle}, last {last}"
    per = (layers + split.embedding + split.loss) // pp
    return f"{per}" if vpp is None else f"{per} ({vpp} chunks of {per // vpp})"


def chunk_layers(layers: int, pp: int, vpp: int | None, split: Split = Split()) -> list[int]:
    """Decoder layers of every (pipeline rank, virtual stage) model chunk, as megatron-core's
    `get_num_layers_to_build` counts them (assumes `split_problems` found nothing)."""
    chunks = vpp if vpp is not None and pp > 1 else 1
    if split.layout is not None:
        stages = (
            parse_layout(split.layout)
            if isinstance(split.layout, str)
            else [["t" if str(x).strip().lower() == "decoder" else "x" for x in s] for s in split.layout]
        )
        return [stage.count("t") for stage in stages]
    if split.first is not None or split.last is not None:
        inner = pp - (split.first is not None) - (split.last is not None)
        middle = (layers - (split.first or 0) - (split.last or 0)) // inner if inner else 0
        per_rank = [middle] * pp
        if split.first is not None:
            per_rank[0] = split.first
        if split.last is not None:
            per_rank[-1] = split.last
        return [n // chunks for n in per_rank for _ in range(chunks)]
    per_chunk = (layers + split.embedding + split.loss) // pp // chunks
    counts = [per_chunk] * (pp * chunks)
    if split.embedding:
        counts[0] -= 1
    if split.loss:
        counts[-1] -= 1
    return counts
