"""A picture of a layout (`plan --picture FILE`, `plan.picture=FILE` in a dry run): which devices each group joins.

Nodes are rows, devices columns; one panel for training (megatron-core's groups) and one for the rollout (vLLM's
replicas), both from `verl_qwen35.model.groups`. A group that spans several nodes talks over the slower network,
which is what decides a layout's speed, so those are drawn red and dashed and counted below each panel.

matplotlib is imported only here, only when a picture is asked for (the `plots` extra); no pyplot, so no global
backend is switched: a `Figure` saves itself through the Agg (PNG) or SVG canvas its file's suffix names.
"""

import io
import os
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from verl_qwen35.checks import device_of
from verl_qwen35.disk import write_file
from verl_qwen35.errors import UserError
from verl_qwen35.model.groups import Groups, crossing_summary
from verl_qwen35.model.layout import Layout

SUFFIXES = {".png": "png", ".svg": "svg"}
INSTALL = "pip install 'verl-qwen35[plots]'"
DPI = 100
GAP = 0.15  # inches between a grid and its legend
MIN_GRID_W = 9.0  # inches a panel gives its grid at least (room for the title and the legend)
# Beyond these a device is under 0.2 in: the picture would be unreadable (and tens of thousands of pixels).
MAX_NODES, MAX_DEVICES_PER_NODE = 128, 64

# Fill colours (PP stage / vLLM replica): matplotlib's tab10, mixed half with white so black text stays legible.
TAB10 = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf")
CROSS = "#d62728"  # a group with members on more than one node
SPAN = "#1f4e9e"  # the EP span / the vLLM replica
TP_LINE = "#333333"


def _light(colour: str, white: float = 0.55) -> tuple[float, float, float]:
    rgb = [int(colour[i : i + 2], 16) / 255 for i in (1, 3, 5)]
    return tuple(c + (1 - c) * white for c in rgb)  # type: ignore[return-value]


def _named(flag: str, value: object) -> str:
    """`--picture x.jpg` or `plan.picture=x.jpg`: how the user wrote it."""
    return f"{flag} {value}" if flag.startswith("-") else f"{flag}={value}"


def target(value: str | os.PathLike, flag: str) -> Path:
    """The file a picture goes to, checked before anything is composed or drawn: a .png or .svg in a writable
    directory. A UserError (exit 2) names `flag` otherwise."""
    path = Path(value).expanduser()
    if path.is_dir():
        raise UserError(f"{_named(flag, value)}: is a directory; give a file name ending in .png or .svg")
    if path.suffix.lower() not in SUFFIXES:
        example = path.with_suffix(".png") if path.name else "layout.png"
        raise UserError(
            f"{_named(flag, value)}: a picture is a .png or an .svg file, chosen by its suffix "
            f"({path.suffix or 'none'} given); e.g. {_named(flag, example)}"
        )
    directory = path.absolute().parent
    if not directory.is_dir():
        raise UserError(f"{_named(flag, value)}: the directory {directory} does not exist; create it or choose another")
    if not os.access(directory, os.W_OK | os.X_OK):
        raise UserError(f"{_named(flag, value)}: cannot write into {directory}; choose a directory you can write")
    return path


def require_matplotlib(flag: str) -> None:
    """A config-only install has no matplotlib: say which extra draws, exit 2."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise UserError(f"{flag} draws with matplotlib, which is not installed here: {INSTALL}") from None


@dataclass(frozen=True)
class Caption:
    """What the title says besides the layout."""

    model: str
    device: str  # gpu or npu
    hardware: str
    engine: str = "vllm"


def draw_config(cfg: DictConfig, value: str | os.PathLike, flag: str) -> Path:
    """The picture of a resolved config's own layout (what `plan --picture` and `plan.picture` draw)."""
    caption = Caption(
        model=str(cfg.model.name),
        device=device_of(cfg),
        hardware=str(cfg.hardware.get("name", "?")),
        engine=str(cfg.actor_rollout_ref.rollout.name),
    )
    return draw(Groups(Layout.of(cfg)), caption, Path(value), flag)


# Labels --------------------------------------------------------------------------------------------------


def training_labels(g: Groups) -> dict[str, Callable[[Any], list[str]]]:
    """Per detail level, a device's lines: full (rank number, TP PP [CP], EP DP, [ETP] EDP), short, tiny."""
    lo = g.layout
    cp = lo.cp > 1
    etp = lo.etp > 1
    edp = lo.expert_dp > 1

    def full(p: Any) -> list[str]:
        lines = [f"#{p.rank}", f"TP{p.tp} PP{p.pp}" + (f" CP{p.cp}" if cp else ""), f"EP{p.ep} DP{p.dp}"]
        if etp or edp:
            lines.append(" ".join([f"ETP{p.etp}"] * etp + [f"EDP{p.edp}"] * edp))
        return lines

    def short(p: Any) -> list[str]:
        return [f"T{p.tp} P{p.pp}" + (f" C{p.cp}" if cp else ""), f"E{p.ep} D{p.dp}" + (f" t{p.etp}" if etp else "")]

    return {"full": full, "short": short, "tiny": lambda p: [f"P{p.pp}"]}


def rollout_labels(g: Groups) -> dict[str, Callable[[Any], list[str]]]:
    lo = g.layout
    dp, pp, ep = lo.gen_dp > 1, lo.gen_pp > 1, g.expert_parallel_rollout

    def full(p: Any) -> list[str]:
        second = " ".join([f"DP{p.dp}"] * dp + [f"PP{p.pp}"] * pp + [f"EP{p.ep}"] * ep)
        return [f"#{p.rank}", f"R{p.replica} TP{p.tp}", *([second] if second else [])]

    def short(p: Any) -> list[str]:
        second = " ".join([f"D{p.dp}"] * dp + [f"P{p.pp}"] * pp + [f"E{p.ep}"] * ep)
        return [f"R{p.replica} T{p.tp}", *([second] if second else [])]

    return {"full": full, "short": short, "tiny": lambda p: [f"R{p.replica}"]}


def fitted(labels: dict[str, Callable[[Any], list[str]]], places: Sequence[Any], cell_pt: float) -> tuple[str, float]:
    """The most detailed label set whose longest line fits a cell at >= 7 pt (short >= 5.5, tiny >= 4), and its size."""
    for level, smallest in (("full", 7.0), ("short", 5.5), ("tiny", 4.0)):
        lines = [labels[level](p) for p in places]
        widest = max(len(line) for ls in lines for line in ls)
        tallest = max(len(ls) for ls in lines)
        # DejaVu Sans Mono: 0.6 em a character; 0.66 of the cell is inside the TP outline with a margin.
        size = min(11.0, 0.66 * cell_pt / (0.6 * widest), 0.72 * cell_pt / (1.3 * tallest))
        if size >= smallest:
            return level, size
    return "none", 0.0


# Geometry -------------------------------------------------------------------------------------------------


def contiguous(group: Sequence[int]) -> tuple[int, int] | None:
    """(first, end) when the group is a run of consecutive ranks (only those are outlined), else None."""
    ranks = sorted(group)
    return (ranks[0], ranks[-1] + 1) if ranks[-1] - ranks[0] + 1 == len(ranks) else None


def segments(first: int, end: int, per_row: int) -> list[tuple[int, int, int, int]]:
    """Rectangles (column, row, width, height) covering ranks [first, end) on a grid of `per_row` columns:
    whole rows merged into one rectangle, a partial row at either end on its own."""
    out: list[tuple[int, int, int, int]] = []
    rank = first
    while rank < end:
        row, col = divmod(rank, per_row)
        if col == 0 and end - rank >= per_row:
            rows = (end - rank) // per_row
            out.append((0, row, per_row, rows))
            rank += rows * per_row
        else:
            width = min(per_row - col, end - rank)
            out.append((col, row, width, 1))
            rank += width
    return out


@dataclass(frozen=True)
class Outline:
    """One kind of group drawn as boxes."""

    name: str  # in the legend
    groups: list[list[int]]
    colour: str
    width: float
    inset: float


def _boxes(ax: Any, g: Groups, outline: Outline, lw_scale: float) -> None:
    from matplotlib.patches import Rectangle

    cols = g.layout.devices_per_node
    for group in outline.groups:
        span = contiguous(group)
        if span is None or len(group) < 2:
            continue
        crosses = g.crosses_nodes(group)
        for col, row, width, height in segments(*span, cols):
            d = outline.inset
            ax.add_patch(
                Rectangle(
                    (col + d, row + d),
                    width - 2 * d,
                    height - 2 * d,
                    fill=False,
                    edgecolor=CROSS if crosses else outline.colour,
                    linewidth=outline.width * lw_scale,
                    linestyle=(0, (4, 2.5)) if crosses else "solid",
                    zorder=3,
                )
            )


# Panels ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Panel:
    title: str
    places: list[Any]
    fill: Callable[[Any], int]  # colour index of a device
    fill_name: str  # what the colour means
    fill_count: int
    labels: dict[str, Callable[[Any], list[str]]]
    outlines: list[Outline]
    summary: dict[str, tuple[int, int, int]]  # crossing_summary's
    notes: list[str]


def panels(g: Groups, caption: Caption) -> list[Panel]:
    lo = g.layout
    summary = crossing_summary(g)
    ep_span = lo.etp * lo.ep
    ep_name = "EP group" if lo.etp == 1 else f"EP x ETP span ({ep_span} devices)"
    training = Panel(
        title=(
            f"Training (Megatron): TP {lo.tp} x CP {lo.cp} x PP {lo.pp} x DP {lo.dp} = {lo.world}; "
            f"experts EP {lo.ep} x ETP {lo.etp} x PP {lo.pp} x expert-DP {lo.expert_dp}"
            + (f"; VPP {lo.vpp}" if lo.vpp else "")
        ),
        places=g.places,
        fill=lambda p: p.pp,
        fill_name="PP stage",
        fill_count=lo.pp,
        labels=training_labels(g),
        outlines=[
            Outline(ep_name, g.training("tp-ep"), SPAN, 2.6, 0.04),
            Outline("TP group", g.training("tp"), TP_LINE, 1.3, 0.11),
        ],
        summary=summary["training"],
        notes=[
            "#n global rank; TP/T tensor-parallel rank, PP/P pipeline stage, EP/E expert-parallel rank, "
            "DP/D data-parallel rank"
            + (", CP/C context-parallel rank" if lo.cp > 1 else "")
            + (", ETP/t expert-tensor-parallel rank" if lo.etp > 1 else "")
            + (", EDP expert-data-parallel rank" if lo.expert_dp > 1 else ""),
            "megatron-core 0.16 rank order tp-cp-ep-dp-pp (verl keeps the default); rank r on node r // "
            f"{lo.devices_per_node}",
        ],
    )
    ep_on = g.expert_parallel_rollout
    replica_name = "vLLM replica" + (" (= its EP group)" if ep_on and lo.gen_pp == 1 else "")
    rollout = Panel(
        title=(
            f"Rollout ({caption.engine}): {g.replicas} replica(s) of TP {lo.gen_tp} x DP {lo.gen_dp} x PP {lo.gen_pp}"
            f" = {g.replica_world} devices; expert parallel "
            + (f"on (EP {lo.gen_tp * lo.gen_dp})" if ep_on else "off (experts split by TP)")
        ),
        places=g.rollout_places,
        fill=lambda p: p.replica,
        fill_name="replica",
        fill_count=g.replicas,
        labels=rollout_labels(g),
        outlines=[
            Outline(replica_name, g.rollout("replica"), SPAN, 2.6, 0.04),
            Outline("TP group", g.rollout("tp"), TP_LINE, 1.3, 0.11),
        ],
        summary=summary["rollout"],
        notes=[
            "#n global rank; R replica, TP/T tensor-parallel rank"
            + (", DP/D data-parallel rank in the replica" if lo.gen_dp > 1 else "")
            + (", EP/E expert-parallel rank" if ep_on else ""),
            "verl gives replica k the ranks [k*W, (k+1)*W), W = TP x DP x PP; vLLM orders them DP, PP, TP",
        ],
    )
    return [training, rollout]


def summary_lines(panel: Panel) -> list[tuple[str, bool]]:
    """(text, crosses) per group kind with more than one member."""
    out = []
    for name, (size, count, cross) in panel.summary.items():
        what = f"{name} groups of {size}: {count}"
        if cross == count:
            out.append((f"{what}, every one crosses a node boundary", True))
        elif cross:
            out.append((f"{what}, {cross} cross a node boundary", True))
        else:
            out.append((f"{what}, each inside one node", False))
    if not out:
        out.append(("every group has one member", False))
    return out


# Drawing --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Sizes:
    """Inches of one panel's parts, and the cell's."""

    cell: float
    rows: int
    cols: int
    head: float = 0.75  # the panel's title and the device numbers
    left: float = 0.85  # the node labels

    @property
    def grid_w(self) -> float:
        return self.cols * self.cell

    @property
    def grid_h(self) -> float:
        return self.rows * self.cell


def cell_inches(rows: int, cols: int) -> float:
    """1.25 in a device up to 14 columns, 1.1 at 16 (a 16 x 16 panel is then 17.6 in square), smaller beyond."""
    return max(0.2, min(1.25, 17.6 / cols, 17.6 / rows))


def title_lines(panel: Panel, panel_w: float) -> list[str]:
    """The panel's title in lines that fit its width at 12 pt bold (about 0.62 em a character)."""
    return textwrap.wrap(panel.title, max(40, int((panel_w - 0.5) * 72 / (0.62 * 12))), break_on_hyphens=False)


def notes_wrapped(panel: Panel, width: float) -> list[str]:
    """The notes in lines that fit `width` inches at 9 pt (about 0.55 em a character)."""
    return [line for note in panel.notes for line in textwrap.wrap(note, max(30, int(width * 72 / (0.55 * 9))))]


def legend_height(panel: Panel, width: float) -> float:
    lines = len(summary_lines(panel)) + len(notes_wrapped(panel, width))
    handles = len(panel.outlines) + 1 + min(panel.fill_count, 10)
    per_row = max(1, int(width // 2.6))
    return GAP + 0.25 + 0.27 * (-(-handles // per_row)) + 0.24 * lines


def draw(g: Groups, caption: Caption, path: Path, flag: str) -> Path:
    """Draw both panels into `path` (.png or .svg), written whole or not at all (a temporary file in the same
    directory, renamed over it). Returns the path; a UserError names `flag` when it cannot be written."""
    path = target(path, flag)
    lo = g.layout
    if lo.nnodes > MAX_NODES or lo.devices_per_node > MAX_DEVICES_PER_NODE:
        raise UserError(
            f"{_named(flag, path)}: {lo.nnodes} nodes x {lo.devices_per_node} devices would be unreadable; the "
            f"picture draws up to {MAX_NODES} nodes of up to {MAX_DEVICES_PER_NODE} devices (the groups repeat "
            "every data-parallel slice: picture a smaller parallel.nnodes to see their pattern)"
        )
    require_matplotlib(flag)
    from matplotlib import rc_context
    from matplotlib.figure import Figure

    sizes = Sizes(cell_inches(lo.nnodes, lo.devices_per_node), lo.nnodes, lo.devices_per_node)
    two = panels(g, caption)
    panel_w = sizes.left + max(sizes.grid_w, MIN_GRID_W) + 0.4
    sizes = replace(sizes, head=0.55 + 0.22 * max(len(title_lines(p, panel_w)) for p in two))
    side_by_side = lo.nnodes * 2 > lo.devices_per_node  # square-ish grids side by side, wide ones stacked
    legends = [legend_height(p, panel_w - 0.6) for p in two]
    blocks = [sizes.head + sizes.grid_h + legend for legend in legends]
    title_h = 1.0
    if side_by_side:
        fig_w, fig_h = 2 * panel_w, title_h + max(blocks)
        origins = [(0.0, title_h), (panel_w, title_h)]
    else:
        fig_w, fig_h = panel_w, title_h + sum(blocks)
        origins = [(0.0, title_h), (0.0, title_h + blocks[0])]
    fig = Figure(figsize=(fig_w, fig_h), dpi=DPI, facecolor="white")
    fig.text(0.5, 1 - 0.32 / fig_h, _title(g, caption), ha="center", va="center", fontsize=15, weight="bold")
    fig.text(0.5, 1 - 0.72 / fig_h, _subtitle(g, caption), ha="center", va="center", fontsize=11)
    for panel, (x0, y0), legend in zip(two, origins, legends, strict=True):
        _panel(fig, panel, g, sizes, (x0, y0), (fig_w, fig_h), panel_w, legend)
    _save(fig, path, flag, rc_context)
    return path


def _title(g: Groups, caption: Caption) -> str:
    lo = g.layout
    return f"{caption.model}: {lo.nnodes} node(s) x {lo.devices_per_node} {caption.device.upper()}s = {lo.world}"


def _subtitle(g: Groups, caption: Caption) -> str:
    lo = g.layout
    return (
        f"hardware {caption.hardware} | training tp={lo.tp} pp={lo.pp} cp={lo.cp} ep={lo.ep} etp={lo.etp}"
        + (f" vpp={lo.vpp}" if lo.vpp else "")
        + f" | rollout {caption.engine} tp={lo.gen_tp} dp={lo.gen_dp} ep={lo.gen_ep}"
    )


def _panel(
    fig: Any,
    panel: Panel,
    g: Groups,
    sizes: Sizes,
    origin: tuple[float, float],
    figure: tuple[float, float],
    panel_w: float,
    legend_h: float,
) -> None:
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    (x0, y0), (fw, fh) = origin, figure
    rows, cols, cell = sizes.rows, sizes.cols, sizes.cell
    left = x0 + sizes.left + (max(sizes.grid_w, MIN_GRID_W) - sizes.grid_w) / 2
    top = y0 + sizes.head  # from the figure's top
    ax = fig.add_axes(((left) / fw, 1 - (top + sizes.grid_h) / fh, sizes.grid_w / fw, sizes.grid_h / fh))
    ax.set_xlim(0, cols)
    ax.set_ylim(rows, 0)
    ax.set_axis_off()
    fig.text((x0 + 0.3) / fw, 1 - (y0 + 0.12) / fh, "\n".join(title_lines(panel, panel_w)), fontsize=12,
             weight="bold", va="top", linespacing=1.3)  # fmt: skip

    cell_pt = cell * 72
    level, size = fitted(panel.labels, panel.places, cell_pt)
    palette = [_light(c) for c in TAB10]
    from matplotlib.patches import Rectangle

    for p in panel.places:
        ax.add_patch(
            Rectangle(
                (p.device, p.node), 1, 1, facecolor=palette[panel.fill(p) % 10], edgecolor="white", lw=1.0, zorder=1
            )
        )
        if level == "none":
            continue
        lines = panel.labels[level](p)
        if level == "full":  # the rank number small at the top, the ranks below
            ax.text(p.device + 0.5, p.node + 0.17, lines[0], ha="center", va="center", fontsize=size * 0.8,
                    color="#555555", zorder=4)  # fmt: skip
            lines = lines[1:]
            y = p.node + 0.58
        else:
            y = p.node + 0.5
        ax.text(p.device + 0.5, y, "\n".join(lines), ha="center", va="center", fontsize=size, linespacing=1.15,
                zorder=4, family="DejaVu Sans Mono")  # fmt: skip
    lw_scale = max(0.5, min(1.0, cell / 0.9))
    for outline in panel.outlines:
        _boxes(ax, g, outline, lw_scale)
    for row in range(1, rows):  # node boundaries
        ax.axhline(row, color="black", lw=2.2 * lw_scale, zorder=2)  # under the outlines, which must stay seen
    ax.add_patch(Rectangle((0, 0), cols, rows, fill=False, edgecolor="black", lw=1.2 * lw_scale, zorder=2))
    label_size = max(6.0, min(11.0, cell_pt / 6))
    for row in range(rows):
        ax.text(-0.12, row + 0.5, f"node {row}", ha="right", va="center", fontsize=label_size)
    step = 1 if cols <= 32 else 4
    for col in range(0, cols, step):
        ax.text(col + 0.5, -0.1, str(col), ha="center", va="bottom", fontsize=label_size * 0.9, color="#444444")

    handles: list[Any] = []
    for outline in panel.outlines:
        handles.append(Line2D([], [], color=outline.colour, lw=outline.width, label=outline.name))
    handles.append(Line2D([], [], color=CROSS, lw=2.6, linestyle=(0, (4, 2.5)), label="crosses a node boundary"))
    for i in range(min(panel.fill_count, 10)):
        more = " (colours repeat)" if i == 9 and panel.fill_count > 10 else ""
        handles.append(Patch(facecolor=palette[i], edgecolor="#999999", label=f"{panel.fill_name} {i}{more}"))
    width = panel_w - 0.6
    per_row = max(1, int(width // 2.6))
    legend_top = top + sizes.grid_h + GAP
    leg_ax = fig.add_axes(((x0 + 0.3) / fw, 1 - (legend_top + legend_h - GAP) / fh, width / fw,
                           (legend_h - GAP) / fh))  # fmt: skip
    leg_ax.set_axis_off()
    leg_ax.legend(handles=handles, loc="upper left", ncol=per_row, frameon=False, fontsize=10,
                  bbox_to_anchor=(0, 1), borderaxespad=0.0, handlelength=2.6)  # fmt: skip
    y = legend_top + 0.27 * (-(-len(handles) // per_row)) + 0.12
    for text, crosses in summary_lines(panel):
        fig.text((x0 + 0.3) / fw, 1 - y / fh, text, fontsize=10.5, va="center", color=CROSS if crosses else "black",
                 weight="bold" if crosses else "normal")  # fmt: skip
        y += 0.24
    for note in notes_wrapped(panel, width):
        fig.text((x0 + 0.3) / fw, 1 - y / fh, note, fontsize=9, va="center", color="#444444")
        y += 0.24


def _save(fig: Any, path: Path, flag: str, rc_context: Any) -> None:
    """Drawn into memory, then written whole by the one writer (disk.py): a link at `path` is replaced, never
    written through, and a full disk keeps the file there before."""
    fmt = SUFFIXES[path.suffix.lower()]
    buffer = io.BytesIO()
    with rc_context({"svg.fonttype": "none", "svg.hashsalt": "verl-qwen35"}):
        # no date in an SVG: the same layout gives the same file
        fig.savefig(buffer, format=fmt, dpi=DPI, facecolor="white", metadata={"Date": None} if fmt == "svg" else None)
    try:
        write_file(path, buffer.getvalue())
    except UserError as err:
        raise UserError(f"{_named(flag, path)}: cannot write into {path.absolute().parent} ({err})") from None
