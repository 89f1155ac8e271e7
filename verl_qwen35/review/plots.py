"""PNG plots of a run report over steps (and of a sweep, a line per run), drawn with matplotlib.

matplotlib is imported here only, when a plot is drawn: composing, checking and planning never need it
(a config-only install has none: `pip install 'verl-qwen35[plots]'`). The figures are `matplotlib.figure.Figure`
objects saved by the Agg canvas, without pyplot: no GUI backend, no global figure state.
"""

import io
import math
from pathlib import Path
from typing import Any

from verl_qwen35.disk import make_dirs, write_file
from verl_qwen35.errors import UserError
from verl_qwen35.review.quantities import BY_NAME
from verl_qwen35.review.report import RunReport

PLOTS_EXTRA = "pip install 'verl-qwen35[plots]'"
# (file stem of a sweep's figure, title, the quantities drawn in the panel)
PANELS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("reward", "reward", ("reward",)),
    ("response_length", "response length (tokens)", ("response_length",)),
    ("kl", "KL", ("kl",)),
    ("entropy", "entropy", ("entropy",)),
    ("tokens_per_second", "tokens/s per device", ("tokens_per_second",)),
    ("step_time", "step time (s)", ("step_time", "rollout_time")),
    ("memory", "device memory, actor process (GiB)", ("memory_allocated", "memory_reserved")),
    ("host_memory", "host memory used (GiB)", ("host_memory",)),
)
PREDICTED = {"step_time": "step time", "rollout_time": "rollout time", "memory_allocated": "training peak (torch)"}
RUN_FIGURE = "report.png"
LEGEND_CHARS = 60  # a sweep run's name in a legend
# Points matplotlib can place on an axis: its limits and margins overflow past ~1e308, and a step must be a float.
DRAWABLE = 1e100


def require_matplotlib() -> None:
    """Refuse before anything is drawn or printed when the plots cannot be drawn."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise UserError(f"the plots need matplotlib, which is not installed: {PLOTS_EXTRA} (or --no-plots)") from None


def _figure(**kwargs: Any) -> Any:
    from matplotlib.figure import Figure

    return Figure(**kwargs)


def _out_dir(out: Path, within: Path | None) -> tuple[Path, Path]:
    """The plots' directory and the directory trusted as given: RUN_DIR for the default RUN_DIR/report (a link
    planted as `report` is refused), the --out directory itself when the user named one."""
    try:
        if within is None:
            out.mkdir(parents=True, exist_ok=True)
        else:
            make_dirs(out, within)
    except OSError as err:
        why = err.strerror or err
        raise UserError(f"cannot write the plots to {out} ({why}); choose a directory with --out DIR") from None
    return out, within or out


def _save(fig: Any, path: Path, within: Path) -> Path:
    """Drawn into memory first, then written whole by the one writer: a full disk keeps the old plot."""
    buffer = io.BytesIO()
    try:
        fig.savefig(buffer, format="png", dpi=100)
    except (ValueError, OverflowError, RuntimeError) as err:  # matplotlib on values or text it cannot lay out
        why = type(err).__name__
        raise UserError(f"cannot draw {path.name} ({why}); the report without plots: --no-plots") from None
    return write_file(path, buffer.getvalue(), within=within)


def text(value: object) -> str:
    """A name as matplotlib shows it literally: a `$` would start its math mode (and fail on an odd count)."""
    return str(value).replace("$", r"\$")


def _line(axes: Any, points: tuple[tuple[int, float], ...], label: str) -> Any:
    from matplotlib.ticker import MaxNLocator

    axes.xaxis.set_major_locator(MaxNLocator(integer=True))  # steps are whole
    kept = [(s, v) for s, v in points if abs(s) < DRAWABLE and math.isfinite(v) and abs(v) < DRAWABLE]
    steps, values = [float(s) for s, _ in kept], [v for _, v in kept]
    if len(kept) < len(points):
        label += f" ({len(points) - len(kept)} point(s) beyond {DRAWABLE:g} not drawn)"
    return axes.plot(steps, values, label=text(label), marker="o" if len(kept) < 40 else None, markersize=3)[0]


def run_figure(report: RunReport, out: Path, within: Path | None = None) -> Path:
    """One figure, a panel per quantity over steps; the plan's predictions as dashed lines."""
    fig = _figure(figsize=(12, 13), layout="constrained")
    fig.suptitle(text(report.run_dir), fontsize=9)
    grid = fig.subplots(4, 2, squeeze=False)
    for axes, (_, title, names) in zip(grid.flat, PANELS, strict=True):
        axes.set_title(title, fontsize=10)
        axes.set_xlabel("step", fontsize=8)
        axes.tick_params(labelsize=8)
        axes.grid(alpha=0.3)
        drawn = False
        for name in names:
            m = report.measured[name]
            if not m.points:
                continue
            line = _line(axes, m.points, f"{m.key}")
            drawn = True
            p = report.prediction(PREDICTED.get(name, ""))
            if p and p.predicted is not None and math.isfinite(p.predicted) and abs(p.predicted) < DRAWABLE:
                axes.axhline(p.predicted, linestyle="--", color=line.get_color(), label=text(f"predicted {p.name}"))
        if drawn:
            axes.legend(fontsize=7)
        else:
            keys = ", ".join(k for n in names for k, _ in BY_NAME[n].keys)
            axes.text(0.5, 0.5, f"not logged\n({keys})", ha="center", va="center", fontsize=8, transform=axes.transAxes)
    out, within = _out_dir(out, within)
    return _save(fig, out / RUN_FIGURE, within)


def sweep_figures(reports: list[RunReport], out: Path, within: Path | None = None) -> list[Path]:
    """One figure per quantity, a line per run (the first quantity of each panel)."""
    out, within = _out_dir(out, within)
    written = []
    for stem, title, names in PANELS:
        name = names[0]
        fig = _figure(figsize=(9, 5), layout="constrained")
        axes = fig.subplots()
        q = BY_NAME[name]
        axes.set_title(title if len(names) == 1 else f"{q.label} ({q.unit})", fontsize=10)
        axes.set_xlabel("step")
        axes.grid(alpha=0.3)
        drawn = [r for r in reports if r.measured[name].points]
        for r in drawn:
            label = r.name if len(r.name) <= LEGEND_CHARS else r.name[: LEGEND_CHARS - 3] + "..."
            _line(axes, r.measured[name].points, label)
        if drawn:
            axes.legend(fontsize=7, loc="best")
        else:
            axes.text(0.5, 0.5, "no run logged it", ha="center", va="center", transform=axes.transAxes)
        written.append(_save(fig, out / f"{stem}.png", within))
    return written
