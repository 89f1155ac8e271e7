"""Ctrl-C and SIGTERM (scancel, `timeout`, a killed container), and the other signals a terminal sends (SIGHUP when
it closes, SIGQUIT from Ctrl-\\), stop the command at a point where stopping is safe.

Python's own Ctrl-C raises KeyboardInterrupt wherever the main thread happens to be, and SIGTERM's default
ends the process at once. Raised inside Hydra or OmegaConf, an exception can leave a config half-changed:
OmegaConf's `flag_override` then fails in its own cleanup (AttributeError on a half-set list node), which
replaces the stop with a traceback; caught by a broad handler on the way, it is lost and the command exits 0.
So while a command runs (`stops_deferred`), a signal is only noted; it is raised at the next `stop_point`
(between sweep jobs, and when the command's work is done), or at once inside a `stoppable` block: a wait on a
child process, verl's training, a network call, code written to be stopped anywhere. Either way it goes up
as `KeyboardInterrupt` (SIGTERM, SIGHUP and SIGQUIT as its subclass `Terminated`, which names its signal),
through every `finally` (children stopped by process group, locks released), to the command's `answered`, which
writes the summary and exits 128 + the signal. SIGHUP and SIGQUIT left at their defaults would end the process
at once (SIGQUIT with a core dump), skipping all of that.
"""

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

STOPS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)


class Terminated(KeyboardInterrupt):
    """SIGTERM (or SIGHUP, SIGQUIT: `signum`), raised where the command could stop."""

    def __init__(self, signum: int = signal.SIGTERM) -> None:
        super().__init__()
        self.signum = signum


def signal_of(stop: KeyboardInterrupt) -> int:
    """The signal that asked for this stop (SIGINT for a plain KeyboardInterrupt)."""
    return stop.signum if isinstance(stop, Terminated) else signal.SIGINT


def signal_name(stop: KeyboardInterrupt) -> str:
    return "Ctrl-C" if signal_of(stop) == signal.SIGINT else signal.Signals(signal_of(stop)).name


def exit_code(stop: KeyboardInterrupt) -> int:
    """128 + the signal, as a shell reports a process that the signal ended: 130 SIGINT, 143 SIGTERM, 129 SIGHUP,
    131 SIGQUIT."""
    return 128 + signal_of(stop)


class _Stops:
    """The one stop this process was asked for and not yet raised, and whether it may be raised where it lands."""

    pending: KeyboardInterrupt | None = None
    at_once = False


def _stop_for(signum: int) -> KeyboardInterrupt:
    return KeyboardInterrupt() if signum == signal.SIGINT else Terminated(signum)


def _raise_stop(signum: int, frame: FrameType | None) -> None:
    raise _stop_for(signum)


def stops_raised() -> None:
    """From the command's first line until it defers them (`stops_deferred`): each stop signal raises where it
    lands, for the command's `answered` (or its entry point, before that exists) to end it quietly with 128 + the
    signal, instead of SIGTERM's and SIGHUP's silent end or SIGQUIT's core dump, and a traceback from Ctrl-C in
    the first imports. A signal the process was started with ignored (`nohup`) stays ignored."""
    if not _main_thread():
        return
    for signum in STOPS:
        if signal.getsignal(signum) is not signal.SIG_IGN:
            signal.signal(signum, _raise_stop)


def _on_signal(signum: int, frame: FrameType | None) -> None:
    stop = _stop_for(signum)
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
