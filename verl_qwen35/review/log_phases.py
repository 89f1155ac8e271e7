"""How far a job got before its first step, and what broke, read from its log files: the lines verl, Ray, vLLM and
torch print, as the table data/log_markers.yaml lists them with the upstream file and line of each.

The log files are those a run directory holds: Hydra's job log (`<job name>.log`, conf/hydra/job_logging), a
sweep job's `error.log` (run/sweep.py), the console a launch keeps as `job.out` (run/console_copy.py), Slurm's
`slurm-<id>.out` (run/submit/slurm.py `--output`) and any `*.log` or `*.out` a user saved there (`ray job logs`).
They are someone else's text: at most MAX_FILES files, each read as its first and last HEAD_BYTES (start-up is at
the top, the failure at the bottom), links not followed, nothing in them run; every line shown is made terminal-safe
(terminal.one_line) and cut at SHOWN_CHARS. Ray colours and prefixes what it forwards from its workers
(`(TaskRunnerV1 pid=1, ip=...)`, ray/_private/worker.py print_worker_logs); the colour codes are dropped before
matching.
"""

import functools
import os
import re
import stat
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from verl_qwen35.config.yaml_files import load_mapping
from verl_qwen35.data import DATA_DIR
from verl_qwen35.disk import NotRegular, open_regular
from verl_qwen35.terminal import one_line

MARKERS_FILE = DATA_DIR / "log_markers.yaml"
LOG_SUFFIXES = (".log", ".out")
MAX_FILES = 16
HEAD_BYTES = 4 << 20  # read from each end of a larger file; a trial's start-up and its failure both fit
SHOWN_CHARS = 240
SHOWN_FAILURES = 3  # the first lines that say what broke, before the last traceback's exception line
TRACEBACK = "Traceback (most recent call last):"  # CPython's traceback header (Lib/traceback.py)
_COLOUR = re.compile(r"\x1b\[[0-9;]*m")  # SGR: Ray's and vLLM's colours; every other control is escaped
_RAY_PREFIX = re.compile(r"^\([^()\n]*pid=[^()\n]*\) ?")  # ray/_private/worker.py print_worker_logs
_STAMP = re.compile(r"(\d{4}-\d{2}-\d{2})[ T](\d{2}:\d{2}:\d{2})")  # Ray's and verl's logging asctime


@dataclass(frozen=True)
class Marker:
    text: str
    source: str  # "package version file:line", or why there is no line


@dataclass(frozen=True)
class Phase:
    name: str
    markers: tuple[Marker, ...]
    metric: str | None = None  # the `timing_s/*` metric a step that reached it logs
    optional: str | None = None  # "all", or the trial drill that must reach it ("drill_save", "drill_resume")


@dataclass(frozen=True)
class Failure:
    kind: str
    text: str
    source: str


@dataclass(frozen=True)
class Hit:
    """One line of a log file that says something: where it is, when it was printed (when it says), what."""

    file: str
    line: int | None  # None: in the tail of a long file, whose line count is not read
    shown: str
    time: datetime | None = None
    what: str = ""

    def where(self) -> str:
        return f"{self.file}:{self.line}" if self.line is not None else f"{self.file} (near its end)"


@dataclass
class LogReading:
    files: list[str] = field(default_factory=list)
    phases: dict[str, Hit] = field(default_factory=dict)  # the first line of each phase reached
    failures: list[Hit] = field(default_factory=list)  # the first line of each kind of failure, in log order
    exception: Hit | None = None  # the last traceback's exception line
    notes: list[str] = field(default_factory=list)

    def broke(self) -> list[Hit]:
        """The first lines that say what broke, then the last traceback's exception line (when not among them)."""
        shown = self.failures[:SHOWN_FAILURES]
        if self.exception and all(h.shown != self.exception.shown for h in shown):
            shown.append(self.exception)
        return shown


def _source(entry: dict[str, Any]) -> str:
    where = f"{entry['file']}:{entry['line']}" if entry.get("line") else f"{entry['file']} (line not pinned)"
    version = f" {entry['version']}" if entry.get("version") else ""
    return f"{entry['package']}{version} {where}"


@functools.cache
def table() -> tuple[tuple[Phase, ...], tuple[Failure, ...]]:
    """The shipped markers, read once a process."""
    data = load_mapping(MARKERS_FILE)
    phases = tuple(
        Phase(
            p["name"],
            tuple(Marker(m["text"], _source(m)) for m in p.get("markers") or ()),
            p.get("metric"),
            p.get("optional"),
        )
        for p in data["phases"]
    )
    failures = tuple(Failure(f["kind"], f["text"], _source(f)) for f in data["failures"])
    return phases, failures


def log_files(run_dir: Path) -> tuple[list[Path], list[str]]:
    """The run directory's own log files (not through links), oldest first, and a note when some were left."""
    try:
        entries = list(os.scandir(run_dir))
    except OSError:
        return [], []
    found = []
    for entry in entries:
        if entry.name.endswith(LOG_SUFFIXES) and entry.is_file(follow_symlinks=False):
            try:
                found.append((entry.stat(follow_symlinks=False).st_mtime, entry.name, Path(entry.path)))
            except OSError:
                continue
    found.sort()
    notes = [f"{len(found) - MAX_FILES} more log file(s) not read (the newest {MAX_FILES} are)"]
    return [p for *_, p in found[-MAX_FILES:]], notes if len(found) > MAX_FILES else []


def _read_ends(path: Path) -> tuple[bytes, bytes, int]:
    """(head, tail, bytes skipped between): the whole file when it is at most twice HEAD_BYTES."""
    with open_regular(path) as handle:
        size = os.fstat(handle.fileno()).st_size
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode) or size <= 2 * HEAD_BYTES:
            return handle.read(2 * HEAD_BYTES), b"", 0
        head = handle.read(HEAD_BYTES)
        handle.seek(size - HEAD_BYTES)
        tail = handle.read(HEAD_BYTES)
    return head, tail.split(b"\n", 1)[-1], size - 2 * HEAD_BYTES


def _stamp(text: str) -> datetime | None:
    found = _STAMP.search(text)
    if not found:
        return None
    try:
        return datetime.fromisoformat(f"{found.group(1)} {found.group(2)}")
    except ValueError:
        return None


def _shown(text: str) -> str:
    shown = one_line(text.strip())
    return shown if len(shown) <= SHOWN_CHARS else shown[: SHOWN_CHARS - 3] + "..."


def read_logs(run_dir: Path) -> LogReading:
    """Every phase marker and failure line in the run directory's log files."""
    files, notes = log_files(run_dir)
    reading = LogReading(notes=notes)
    for path in files:
        try:
            head, tail, skipped = _read_ends(path)
        except (OSError, NotRegular) as err:
            reading.notes.append(f"{path.name}: not read ({getattr(err, 'strerror', None) or err})")
            continue
        reading.files.append(path.name)
        if skipped:
            reading.notes.append(f"{path.name}: {skipped:,} bytes in the middle not read (a long log)")
        _scan(path.name, head.decode("utf-8", "replace"), 1, reading)
        if tail:
            _scan(path.name, tail.decode("utf-8", "replace"), None, reading)
    return reading


def _scan(name: str, text: str, first: int | None, reading: LogReading) -> None:
    """Add the hits of one piece of a file; `first`: its first line's number (None: the tail of a long file)."""
    phases, failures = table()
    lines = text.split("\n")
    seen_kinds = {h.what for h in reading.failures}
    in_traceback = False
    for i, raw in enumerate(lines):
        line = _COLOUR.sub("", raw).rstrip("\r")
        body = _RAY_PREFIX.sub("", line)
        number = first + i if first is not None else None

        def hit(what: str, line: str = line, body: str = body, number: int | None = number) -> Hit:
            return Hit(name, number, _shown(line), _stamp(body), what)

        for phase in phases:
            if phase.name not in reading.phases and any(m.text in body for m in phase.markers):
                reading.phases[phase.name] = hit(phase.name)
        for failure in failures:
            if failure.kind not in seen_kinds and failure.text in body:
                seen_kinds.add(failure.kind)
                reading.failures.append(hit(failure.kind))
        if body.startswith(TRACEBACK):
            in_traceback = True
        elif in_traceback and body.strip() and not body[0].isspace():
            in_traceback = False
            reading.exception = hit("the last traceback's exception")
