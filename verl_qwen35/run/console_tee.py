"""The copier behind run/console_copy.py: what the launch writes to its two pipes goes to the terminal (this
process's stdout and stderr, the descriptors the launch had before) and is appended to job.out, bounded.

Run as a script, `python -I -S console_tee.py OUT_FD ERR_FD FILE_FD HEAD_BYTES TAIL_BYTES`, in a session of
its own: the standard library only, no site-packages, nothing from the environment or the working directory.
It ends when every writer of both pipes is gone (the launch ended, stopped or crashed), or at SIGTERM/SIGHUP
(console_copy's last resort when something the launch left behind still holds a pipe): either way it copies
what the pipes already hold, writes the kept tail and exits. A terminal that goes away (closed, EPIPE) or a
file that cannot be written (a full disk) is dropped with a note on stderr; the other goes on, so the launch
is never stopped by its copy.
"""

import collections
import contextlib
import os
import selectors
import signal
import sys

CHUNK = 1 << 16


WAKE = "wake"  # the selector's mark for the signal wake-up pipe


def _noted(signum: int, frame: object) -> None:
    """SIGTERM or SIGHUP: noted only; the wake-up pipe (signal.set_wakeup_fd) ends the wait, and the loop then
    copies what the pipes already hold and ends. Nothing read is ever dropped between a read and its writes."""


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


class Kept:
    """job.out's share of the output: the first `head` bytes as they come, then the last `tail` bytes, written
    at the end after one line saying how much was cut between."""

    def __init__(self, fd: int, head: int, tail: int) -> None:
        self.fd: int | None = fd
        self.head, self.tail = head, tail
        self.written = 0
        self.beyond = 0  # bytes past the head
        self.last: collections.deque[bytes] = collections.deque()
        self.last_size = 0
        self.error: str | None = None

    def add(self, data: bytes) -> None:
        room = self.head - self.written
        if room > 0:
            self._write(data[:room])
            self.written += min(room, len(data))
            data = data[room:]
        if data:
            self.beyond += len(data)
            self.last.append(data)
            self.last_size += len(data)
            while self.last and self.last_size - len(self.last[0]) >= self.tail:
                self.last_size -= len(self.last.popleft())

    def finish(self) -> None:
        if not self.beyond:
            return
        last = b"".join(self.last)
        tail = last[-self.tail :] if self.tail > 0 else b""
        if len(tail) < self.beyond:
            if len(tail) < len(last) and last[-len(tail) - 1 : -len(tail)] != b"\n":  # begin at a whole line
                tail = tail[tail.find(b"\n") + 1 :]
            cut = self.beyond - len(tail)
            self._write(
                f"\n[job.out: {cut:,} bytes cut here (the terminal showed them): each launch keeps its first "
                f"{self.head:,} bytes and its last {self.tail:,}]\n".encode()
            )
        self._write(tail)

    def _write(self, data: bytes) -> None:
        if self.fd is None or not data:
            return
        try:
            write_all(self.fd, data)
        except OSError as err:
            self.error, self.fd = err.strerror or str(err), None


def copy(sources: dict[int, int], kept: Kept, wake: int) -> None:
    """Each chunk read from a source pipe to its terminal descriptor and to `kept`, until every pipe is closed or a
    stop signal woke `wake`; then what the pipes hold already, without waiting for more."""
    terminals = set(sources.values())
    selector = selectors.DefaultSelector()
    for source, terminal in sources.items():
        selector.register(source, selectors.EVENT_READ, terminal)
    selector.register(wake, selectors.EVENT_READ, WAKE)

    def one(source: int) -> bool:
        chunk = os.read(source, CHUNK)
        if not chunk:
            selector.unregister(source)
            return False
        terminal = sources[source]
        if terminal in terminals:
            try:
                write_all(terminal, chunk)
            except OSError:  # the terminal went away (closed, EPIPE): job.out goes on
                terminals.discard(terminal)
        kept.add(chunk)
        return True

    stopped = False
    while not stopped and len(selector.get_map()) > 1:
        for key, _ in selector.select():
            if key.data == WAKE:
                stopped = True
            elif key.fd in selector.get_map():
                one(key.fd)
    for source in [fd for fd in sources if fd in selector.get_map()]:
        os.set_blocking(source, False)
        with contextlib.suppress(BlockingIOError):
            while one(source):
                pass


def main(argv: list[str]) -> int:
    out_fd, err_fd, file_fd, head, tail = (int(a) for a in argv)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C is the launch's to take; the copy outlives it
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_write, False)
    signal.set_wakeup_fd(wake_write)
    signal.signal(signal.SIGTERM, _noted)
    signal.signal(signal.SIGHUP, _noted)
    kept = Kept(file_fd, head, tail)
    try:
        copy({out_fd: 1, err_fd: 2}, kept, wake_read)
    finally:
        kept.finish()
    if kept.error:
        with contextlib.suppress(OSError):
            write_all(2, f"verl-qwen35: job.out not written past byte {kept.written:,}: {kept.error}\n".encode())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
