"""Ctrl-C and SIGTERM (scancel, `timeout`, a killed container) stop the command at a point where stopping is safe.

Python's own Ctrl-C raises KeyboardInterrupt wherever the main thread happens to be, and SIGTERM's default
ends the process at once. Raised inside Hydra or OmegaConf, an exception can leave a config half-changed:
OmegaConf's `flag_override` then fails in its own cleanup (AttributeError on a half-set list node), which
replaces the stop with a traceback; caught by a broad handler on the way, it is lost and the command exits 0.
So while a command runs (`stops_deferred`), a signal is only noted; it is raised at the next `stop_point`
(between sweep jobs, and when the command's work is done), or at once inside a `stoppable` block: a wait on a
child process, verl's training, a network call, code written to be stopped anywhere. Either way it goes up
as `KeyboardInterrupt` (SIGTERM as its subclass `Terminated`), through every `finally`, to the command's
`answered`, which writes the summary and exits 128 + the signal.
"""

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

STOPS = (signal.SIGINT, signal.SIGTERM)


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the command could stop."""


def signal_name(stop: KeyboardInterrupt) -> str:
    return "SIGTERM" if isinstance(stop, Terminated) else "Ctrl-C"


def exit_code(stop: KeyboardInterrupt) -> int:
    """128 + the signal, as a shell reports a process that the signal ended: 143 SIGTERM, 130 SIGINT."""
    return 128 + (signal.SIGTERM if isinstance(stop, Terminated) else signal.SIGINT)


class _Stops:
    """The one stop this process was asked for and not yet raised, and whether it may be raised where it lands."""

    pending: KeyboardInterrupt | None = None
    at_once = False


def _on_signal(signum: int, frame: FrameType | None) -> None:
    stop = Terminated() if signum == signal.SIGTERM else KeyboardInterrupt()
    if _Stops.at_once:
        raise stop
    _Stops.pending = _Stops.pending or stop  # the first one asked decides how the command ends


def stop_point() -> None:
    """Raise the stop a signal asked for since the last stop point, if any."""
    stop, _Stops.pending = _Stops.pending, None
    if stop is not None:
        raise stop


@contextmanager
def stoppable() -> Iterator[None]:
    """Inside the block a signal raises where it lands: for a wait that may be long and is safe to cut."""
    stop_point()
    before, _Stops.at_once = _Stops.at_once, True
    try:
        yield
    finally:
        _Stops.at_once = before


def _main_thread() -> bool:
    """Signal handlers belong to the main thread (signal.signal raises elsewhere)."""
    return threading.current_thread() is threading.main_thread()


@contextmanager
def stops_deferred() -> Iterator[None]:
    """Ctrl-C and SIGTERM are noted inside the block and raised at its stop points, the last one when the block's
    work is done; the handlers from before are back afterwards. Called from another thread, or inside another
    such block, the block runs with the handlers as they are."""
    if not _main_thread() or signal.getsignal(signal.SIGTERM) is _on_signal:
        yield
        return
    # A signal the process was started with ignored (`nohup`, a background job's SIGINT) stays ignored.
    previous = {s: signal.signal(s, _on_signal) for s in STOPS if signal.getsignal(s) is not signal.SIG_IGN}
    _Stops.pending, _Stops.at_once = None, False
    try:
        yield
        stop_point()
    finally:
        _Stops.pending = None
        _restore(previous)


@contextmanager
def stops_held() -> Iterator[None]:
    """While a stopped command writes its last words (the summary), a second Ctrl-C or SIGTERM is
    ignored: raised halfway through, it would leave a traceback instead of them."""
    if not _main_thread():
        yield
        return
    previous = {s: signal.signal(s, signal.SIG_IGN) for s in STOPS}
    try:
        yield
    finally:
        _restore(previous)


def _restore(previous: dict[signal.Signals, object]) -> None:
    for signum, handler in previous.items():
        if handler is not None:  # None: a handler not set from Python, which cannot be put back
            signal.signal(signum, handler)
