"""SIGTERM (scancel, `timeout`, a killed container) stops the command as Ctrl-C does.

Python turns SIGINT into KeyboardInterrupt where it lands; SIGTERM's default ends the process at once,
so a sweep would leave no summary and its current job marked `running`. While the command runs,
SIGTERM raises `Terminated` (a KeyboardInterrupt) instead: one path for both signals, through every
`finally` and on to the command's `answered`, which writes the summary and exits 128 + the signal.
"""

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where it landed."""


def signal_name(stop: KeyboardInterrupt) -> str:
    return "SIGTERM" if isinstance(stop, Terminated) else "Ctrl-C"


def exit_code(stop: KeyboardInterrupt) -> int:
    """128 + the signal, as a shell reports a process that the signal ended: 143 SIGTERM, 130 SIGINT."""
    return 128 + (signal.SIGTERM if isinstance(stop, Terminated) else signal.SIGINT)


def _raise_terminated(signum: int, frame: FrameType | None) -> None:
    raise Terminated


@contextmanager
def sigterm_raised() -> Iterator[None]:
    """SIGTERM raises Terminated inside the block; the handler before it is back afterwards.

    Signal handlers belong to the main thread (signal.signal raises elsewhere): called from another
    thread, the block runs with the process's handlers as they are."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextmanager
def stops_held() -> Iterator[None]:
    """While a stopped command writes its last words (the summary), a second Ctrl-C or SIGTERM is
    ignored: raised halfway through, it would leave a traceback instead of them."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {s: signal.signal(s, signal.SIG_IGN) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
