"""What a run logged: verl's file-logger JSON lines (kept across starts, rotated) and tensorboard events, read back.

verl's FileLogger (verl/utils/tracking.py) writes one `{"step": N, "data": {...}}` a line with orjson, unbuffered
(`open(path, "wb", buffering=0)`), so a run that is still writing may end its file in half a line: that line is
skipped with a note. A damaged line in the middle (a disk error, a hand edit) is skipped and counted. orjson
writes NaN and infinity as `null`: those values are left out, as are strings.

A launch or relaunch moves a non-empty `metrics.jsonl` aside as `metrics.<k>.jsonl` (the logger contract, see
docs/report.md) before verl opens it with "wb": the files are read in the order `metrics.1.jsonl`,
`metrics.2.jsonl`, ..., `metrics.jsonl`, and a later record of a step replaces the earlier one key by key (a
resume recomputes the steps after its checkpoint; the validation-only record verl logs at the resume step,
`val_before_train`, keeps that step's training metrics). The move is `keep_file_history` (run/job.py calls it
before verl starts), the reading `read_run` (review/ calls it).
"""

import json
import math
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from verl_qwen35.config.tracking import METRICS_FILE, PLACE, TENSORBOARD_DIR
from verl_qwen35.disk import NotRegular, is_regular, open_regular
from verl_qwen35.errors import UserError
from verl_qwen35.terminal import say

FILE_LOGGER_ENV = PLACE["file"]  # verl/utils/tracking.py FileLogger.__init__
TENSORBOARD_ENV = PLACE["tensorboard"]  # verl/utils/tracking.py _TensorboardAdapter.__init__
# Every step's record holds the step's timing (verl/trainer/ppo/metric_utils.py compute_timing_metrics);
# the validation verl runs before training (val_before_train) logs a record without it.
TRAINING_KEY = "timing_s/step"
# A verl record is some KiB (a few hundred metrics); a longer "line" is not one, and is not held in memory whole.
MAX_LINE_BYTES = 16 << 20
SHOWN_LINES = 5  # damaged line numbers named in a note


@dataclass
class Metrics:
    """step -> metric name -> value, from every log file of one run, with what was read and skipped."""

    steps: dict[int, dict[str, float]] = field(default_factory=dict)
    # The first training step of each start (each metrics file, and the first tensorboard step): it includes
    # the start's warm-up (compilation, vLLM's CUDA graphs, first allocations) and is left out of the medians.
    warm_up: set[int] = field(default_factory=set)
    sources: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # Where each step's values were read (`metrics.jsonl line 12`), and the metric names a step logged as
    # something that is not a finite number (NaN, Infinity, a string): left out of `steps`, named by calibrate.
    origin: dict[int, str] = field(default_factory=dict)
    not_finite: dict[int, dict[str, str]] = field(default_factory=dict)

    def merge(self, step: int, data: dict[str, float], override: bool = True) -> None:
        held = self.steps.setdefault(step, {})
        held.update(data if override else {k: v for k, v in data.items() if k not in held})

    def series(self, key: str) -> list[tuple[int, float]]:
        return [(step, data[key]) for step, data in sorted(self.steps.items()) if key in data]

    @property
    def training_steps(self) -> list[int]:
        """Steps with a training record; all steps when no record carries the step timing (another trainer)."""
        found = sorted(s for s, d in self.steps.items() if TRAINING_KEY in d)
        return found or sorted(self.steps)


def kept_name(current: Path, k: int) -> Path:
    """metrics.jsonl -> metrics.<k>.jsonl: where a start moves the previous start's file."""
    return current.with_name(f"{current.stem}.{k}{current.suffix}")


def kept_number(current: Path, other: Path) -> int | None:
    """k when `other` is `current`'s kept file metrics.<k>.jsonl, else None."""
    middle = other.name.removeprefix(f"{current.stem}.").removesuffix(current.suffix)
    shaped = other.name == f"{current.stem}.{middle}{current.suffix}"
    return int(middle) if shaped and middle.isdigit() else None


def keep_file_history(path: str | Path) -> Path | None:
    """Before verl's FileLogger opens `path` with "wb" (verl/utils/tracking.py FileLogger.__init__), move a
    non-empty one to metrics.<k>.jsonl, k one more than the highest kept: a relaunch or a requeued job never
    truncates what the run logged before. Returns where it went, or None when there was nothing to keep."""
    path = Path(path)
    if not path.is_file() or path.stat().st_size == 0:
        return None
    numbers = [k for p in path.parent.iterdir() if (k := kept_number(path, p)) is not None]
    kept = kept_name(path, max(numbers, default=0) + 1)
    path.rename(kept)
    say(f"metrics    kept the previous {path.name} as {kept} (verl's file logger starts it anew)", file=sys.stderr)
    return kept


def rotated_files(current: Path) -> list[Path]:
    """`metrics.1.jsonl`, `metrics.2.jsonl`, ... (numerically), then `metrics.jsonl`: the files that exist."""
    older = []
    if current.parent.is_dir():
        older = [(k, p) for p in current.parent.iterdir() if (k := kept_number(current, p)) is not None]
    found = [p for _, p in sorted(older)]
    return found + ([current] if current.exists() else [])


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def _record(line: bytes) -> tuple[int, dict[str, float], dict[str, str]] | None:
    """(step, numbers, the rest as text) of one FileLogger line, or None when it is not one."""
    try:
        record = json.loads(line)
    except (ValueError, RecursionError):  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        return None
    if not isinstance(record, dict) or not isinstance(record.get("data"), dict):
        return None
    step = record.get("step")
    if isinstance(step, bool) or not isinstance(step, int):
        return None
    numbers = {str(k): n for k, v in record["data"].items() if (n := _number(v)) is not None}
    rest = {str(k): repr(v)[:40] for k, v in record["data"].items() if str(k) not in numbers}
    return step, numbers, rest


def _lines(handle: BinaryIO) -> Iterator[tuple[int, bytes | None, bool]]:
    """(line number, bytes, complete) of each line; a line longer than MAX_LINE_BYTES comes as None (damaged)."""
    number = 0
    while chunk := handle.readline(MAX_LINE_BYTES):
        number += 1
        if len(chunk) == MAX_LINE_BYTES and not chunk.endswith(b"\n"):
            while (rest := handle.readline(MAX_LINE_BYTES)) and not rest.endswith(b"\n"):
                pass
            yield number, None, bool(rest)
        else:
            yield number, chunk, chunk.endswith(b"\n")


def read_file_logger(path: Path, into: Metrics) -> None:
    """Add one FileLogger file's records to `into`; a file in which no line is a record is refused."""
    try:
        handle = open_regular(path)
    except NotRegular:
        raise UserError(f"{path}: not a regular file, so not verl's file-logger output") from None
    except OSError as err:
        raise UserError(f"{path}: cannot be read ({err.strerror or err})") from None
    damaged: list[int] = []
    half_written = False
    first_training: int | None = None
    records = 0
    with handle:
        try:
            for number, line, complete in _lines(handle):
                if line is not None and not line.strip():
                    continue
                found = None if line is None else _record(line)
                if found is None:
                    if complete:
                        damaged.append(number)
                    else:
                        half_written = True  # only the last line can lack its newline
                    continue
                step, data, rest = found
                records += 1
                into.merge(step, data)
                into.origin[step] = f"{path} line {number}"
                if rest:
                    into.not_finite.setdefault(step, {}).update(rest)
                if first_training is None and TRAINING_KEY in data:
                    first_training = step
        except OSError as err:
            raise UserError(f"{path}: cannot be read ({err.strerror or err})") from None
    if records == 0 and damaged:
        raise UserError(
            f'{path}: not verl\'s file-logger output, no line is a JSON record {{"step": N, "data": {{...}}}} '
            f"(verl/utils/tracking.py FileLogger); another file sits where the run's file logger writes "
            f"(env.set.{FILE_LOGGER_ENV}): move it away"
        )
    if first_training is not None:
        into.warm_up.add(first_training)
    into.sources.append(f"{path.name} ({records} record(s))")
    if damaged:
        shown = ", ".join(map(str, damaged[:SHOWN_LINES])) + (", ..." if len(damaged) > SHOWN_LINES else "")
        into.notes.append(f"{path.name}: {len(damaged)} damaged line(s) skipped (line {shown})")
    if half_written:
        into.notes.append(f"{path.name}: the last line is half-written (the run is still writing it): skipped")


class TensorboardUnread(UserError):
    """Event files that could not be read: a note beside the file logger's metrics, else the answer."""


class TensorboardMissing(TensorboardUnread):
    """The `tensorboard` package (its event reader) is not installed."""


def read_tensorboard(directory: Path, into: Metrics) -> None:
    """Add the scalars of the event files in `directory` (verl's _TensorboardAdapter writes each metric with
    SummaryWriter.add_scalar) to `into`, without replacing what the file logger recorded."""
    try:
        from tensorboard.backend.event_processing import event_accumulator
    except ImportError:
        raise TensorboardMissing(
            f"{directory} holds tensorboard events, but the tensorboard package is not installed: "
            "pip install tensorboard (verl installs it)"
        ) from None
    # SCALARS: 0 keeps every step (the default samples 10,000). The accumulator reads the event files in order
    # and purges the steps a restart logs again (purge_orphaned_data): a later start's steps replace the earlier.
    if odd := [p.name for p in directory.iterdir() if "tfevents" in p.name and not is_regular(p)]:
        raise TensorboardUnread(f"{directory}: {odd[0]} is not a regular file (a FIFO or a device); events not read")
    accumulator = event_accumulator.EventAccumulator(str(directory), size_guidance={event_accumulator.SCALARS: 0})
    try:
        accumulator.Reload()
    except OSError as err:
        raise UserError(f"{directory}: cannot be read ({err.strerror or err})") from None
    tags = accumulator.Tags().get(event_accumulator.SCALARS, [])
    steps: dict[int, dict[str, float]] = {}
    for tag in tags:
        for event in accumulator.Scalars(tag):
            if (value := _number(event.value)) is not None:
                steps.setdefault(event.step, {})[tag] = value
            elif event.step not in into.steps:
                into.not_finite.setdefault(event.step, {})[tag] = repr(event.value)
    for step in steps:
        into.origin.setdefault(step, f"{directory} (tensorboard) step {step}")
    for step, data in steps.items():
        into.merge(step, data, override=False)
    if training := sorted(s for s, d in steps.items() if TRAINING_KEY in d):
        into.warm_up.add(training[0])
    if not steps:
        raise TensorboardUnread(
            f"{directory}: its event files hold no scalar tensorboard can read (damaged, or not verl's events)"
        )
    into.sources.append(f"{directory.name}/ (tensorboard, {len(steps)} step(s))")


@dataclass(frozen=True)
class LogPlaces:
    """Where a run's logs are: the file logger's current file and the tensorboard directory."""

    metrics: Path
    tensorboard: Path


def log_places(run_dir: Path, env: dict[str, str] | None = None) -> LogPlaces:
    """The launch record's env.set values (made absolute under the run directory at launch), where they exist;
    else the logger contract's defaults under the run directory (a run directory copied elsewhere)."""
    env = env or {}

    def place(name: str, default: str) -> Path:
        recorded = env.get(name)
        if recorded:
            path = Path(os.path.expanduser(recorded))
            path = path if path.is_absolute() else run_dir / path
            if path.exists() or path.parent.is_dir() and rotated_files(path):
                return path
        return run_dir / default

    return LogPlaces(place(FILE_LOGGER_ENV, METRICS_FILE), place(TENSORBOARD_ENV, TENSORBOARD_DIR))


def has_events(directory: Path) -> bool:
    return directory.is_dir() and any("tfevents" in p.name for p in directory.iterdir())


def read_run(places: LogPlaces) -> Metrics:
    """Everything the run logged, file logger first; nothing found gives an empty `Metrics`."""
    found = Metrics()
    for path in rotated_files(places.metrics):
        read_file_logger(path, found)
    if has_events(places.tensorboard):
        try:
            read_tensorboard(places.tensorboard, found)
        except TensorboardUnread as unread:
            if not found.steps:
                raise
            found.notes.append(str(unread))
    return found
