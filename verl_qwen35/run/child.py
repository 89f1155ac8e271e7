"""A program we start on someone else's behalf (an imported launch script): bounded, in its own process group,
and gone when we are done with it.

Its output is read with a deadline and only its tail kept (a script printing 64 MB must not cost 400 MiB and a
61 MiB message); a daemon it leaves holding the pipe does not keep us waiting past a short grace; at the end
its whole process group is killed, so nothing it started in the background lives on. The wait is `stoppable`:
Ctrl-C and SIGTERM are forwarded to the group, which gets a moment to stop before it is killed; the
exception then goes on to the caller's cleanup (its temp directory).

`run_attached` is the same for a program of our own whose output is the user's to watch (`plan --sweep`'s
multirun): its output goes straight to ours (nothing held, so nothing to bound), the rest is as above.
"""

import contextlib
import os
import selectors
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from verl_qwen35.run.stops import signal_of, stoppable

KEEP_BYTES = 64 * 1024  # the tail of the output kept for a message
GRACE_S = 1.0  # how long a daemon may hold the pipe after the program exited
STOP_S = 2.0  # how long the group has to stop after a forwarded signal, before SIGKILL


@dataclass(frozen=True)
class Finished:
    """How the program ended: its exit code (None: stopped at the time limit), its output's tail, its size."""

    returncode: int | None
    output: bytes
    total: int

    @property
    def cut(self) -> bool:
        return self.total > len(self.output)

    def last_lines(self, count: int) -> list[str]:
        """The output's last lines as text, the first one marked when the output was cut before it."""
        lines = self.output.decode("utf-8", "replace").strip().splitlines()[-count:]
        if self.cut:
            lines.insert(0, f"[output cut: {self.total:,} bytes, the last {len(self.output):,} kept]")
        return lines


def _signal_group(pgid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signum)


def _stop(proc: subprocess.Popen, signum: int = signal.SIGTERM, wait_s: float = STOP_S) -> None:
    """`signum` to the program's group, `wait_s` to stop, then the group is killed."""
    _signal_group(proc.pid, signum)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(wait_s)
    _signal_group(proc.pid, signal.SIGKILL)
    proc.wait()


def run_attached(argv: Sequence[str], *, stop_s: float = STOP_S) -> int:
    """Run `argv` in a new session with our stdout and stderr (stdin closed) and wait for it; on Ctrl-C or SIGTERM
    here it gets the same signal and `stop_s` to end (a sweep writes its summary), then its group is killed and
    the exception goes on. Whatever it left running in its group is killed when it exits. Its exit code."""
    with stoppable():
        proc = subprocess.Popen(list(argv), stdin=subprocess.DEVNULL, start_new_session=True)
        try:
            code = proc.wait()
        except BaseException as stop:
            _stop(proc, signal_of(stop) if isinstance(stop, KeyboardInterrupt) else signal.SIGTERM, stop_s)
            raise
    _signal_group(proc.pid, signal.SIGKILL)
    return code


def run_child(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    time_limit_s: float,
    keep: int = KEEP_BYTES,
    grace_s: float = GRACE_S,
) -> Finished:
    """Run `argv` in a new session (its own process group), stdin closed, stdout and stderr together."""
    with stoppable():
        proc = subprocess.Popen(
            list(argv),
            cwd=cwd,
            env=dict(env),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        assert proc.stdout is not None
        tail, total = bytearray(), 0
        deadline = time.monotonic() + time_limit_s
        exited_at: float | None = None
        try:
            fd = proc.stdout.fileno()
            os.set_blocking(fd, False)
            with selectors.DefaultSelector() as selector:
                selector.register(fd, selectors.EVENT_READ)
                while True:
                    now = time.monotonic()
                    if exited_at is None and proc.poll() is not None:
                        exited_at = now
                    limit = deadline if exited_at is None else min(deadline, exited_at + grace_s)
                    if now >= limit:
                        break
                    if not selector.select(timeout=min(limit - now, 0.1)):
                        continue
                    try:
                        chunk = os.read(fd, 1 << 16)
                    except BlockingIOError:
                        continue
                    if not chunk:  # every writer closed the pipe
                        break
                    total += len(chunk)
                    tail += chunk
                    del tail[:-keep]
            timed_out = False
            if exited_at is None:  # the pipe closed (or the time is up): the program's exit may still be on its way
                try:
                    proc.wait(max(0.0, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    timed_out = True
        except BaseException:  # Ctrl-C, SIGTERM: forwarded, a moment to stop, then the group is killed
            _stop(proc)
            raise
        finally:
            proc.stdout.close()
    _signal_group(proc.pid, signal.SIGKILL)  # the program, if still running, and whatever it left in its group
    proc.wait()
    return Finished(None if timed_out else proc.returncode, bytes(tail), total)
