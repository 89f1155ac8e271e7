"""A launch keeps its whole console output in its run directory, as `job.out`, while the terminal still shows it.

verl prints with `print()`, Ray's driver forwards what its workers print to its own stdout and stderr
(ray/_private/worker.py print_worker_logs), C and C++ code writes to the descriptors: none of that is a logging
record, so Hydra's job log (run/job_log.py) never holds it, and `report` (review/log_phases.py) could not say how
far a local launch got. So for the launch, descriptors 1 and 2 become two pipes, read by a copier process
(run/console_tee.py) that writes each chunk to the terminal (the descriptors from before, stdout and stderr kept
apart) and appends it to job.out. A process of its own, in a session of its own: a driver that crashes or is
killed closes the pipes and the copier still writes what it holds; the terminal's Ctrl-C goes to the launch
(stops.py), never to the copier, which takes the launch's last lines as it stops.

job.out is opened without following a link and never a FIFO (disk.open_append), mode 600 like the launch
record, owned by the user (a file someone else owns there is refused), its directory without group and
others' write (private_files.restrict_dir). A relaunch appends after the earlier launches, each starting with
one line of its own. Bounded: each launch appends at most its first HEAD_BYTES and its last TAIL_BYTES, with
one line saying how much was cut between (the copier keeps the tail in memory). It holds what the terminal
showed, byte for byte, and nothing else but those lines. The terminal sees the output through a pipe, as
with `| tee`: programs that colour or redraw only on a terminal print plain lines.
"""

import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from verl_qwen35.disk import NotRegular, kind_at, open_append
from verl_qwen35.errors import UserError
from verl_qwen35.records.private_files import restrict_dir
from verl_qwen35.run import console_tee
from verl_qwen35.terminal import say

JOB_OUT = "job.out"
HEAD_BYTES = 48 << 20  # a launch's first 48 MiB (start-up, the first steps) ...
TAIL_BYTES = 16 << 20  # ... and its last 16 MiB (how it ended): 64 MiB at most per launch
DRAIN_S = 5.0  # how long the copier may take to see the pipes close after the launch, then once more after SIGTERM
STREAMS = (1, 2)


def open_job_out(path: Path) -> int:
    """job.out opened for appending: never through a link, never a FIFO or a device, mode 600, the user's own."""
    restrict_dir(path.parent)
    fix = "nothing launched. Remove it, or launch into another directory"
    try:
        fd = open_append(path, private=True)
    except (OSError, NotRegular) as err:
        if kind_of(path) == "link":
            raise UserError(
                f"{path} is a symbolic link; nothing is written through a link planted there: {fix}"
            ) from None
        if kind_of(path) not in (None, "file"):  # a FIFO (ENXIO: no reader), a device, a directory
            raise UserError(f"{path} is not a regular file (a FIFO, a device or a directory): {fix}") from None
        raise UserError(f"cannot write {path} ({getattr(err, 'strerror', None) or err}); nothing launched") from None
    info = os.fstat(fd)
    if info.st_uid != os.getuid():
        os.close(fd)
        raise UserError(
            f"{path} is owned by uid {info.st_uid}, not by you (uid {os.getuid()}); the launch's output is not "
            f"appended to someone else's file: {fix}"
        )
    if info.st_mode & 0o077:
        os.fchmod(fd, 0o600)
    return fd


def kind_of(path: Path) -> str | None:
    """What is at `path`, a link not followed (disk.kind_at)."""
    dir_fd = os.open(path.parent, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        return kind_at(dir_fd, path.name)
    finally:
        os.close(dir_fd)


@contextlib.contextmanager
def console_copy(
    run_dir: str | Path | None, head_bytes: int = HEAD_BYTES, tail_bytes: int = TAIL_BYTES
) -> Iterator[Path | None]:
    """Inside the block, everything written to descriptors 1 and 2 (by Python, C code and every child that
    inherits them) also goes to `run_dir`/job.out; afterwards they are as before and the copier has ended.
    `run_dir` None: nothing is copied (the terminal only)."""
    if run_dir is None:
        yield None
        return
    path = Path(run_dir) / JOB_OUT
    file_fd = open_job_out(path)
    try:
        stamp = time.strftime("%Y-%m-%d %H:%M:%S")
        try:
            line = f"--- verl-qwen35 launch, {stamp} (pid {os.getpid()}): its console follows ---\n"
            os.write(file_fd, line.encode())
        except OSError as err:  # a full disk, a quota
            raise UserError(f"cannot write {path} ({err.strerror or err}); nothing launched") from None
        say(f"console    {path} (this launch's whole output as the terminal shows it)", file=sys.stderr)
        copier, saved = _start(file_fd, head_bytes, tail_bytes)
    finally:
        os.close(file_fd)  # the copier holds its own
    try:
        yield path
    finally:
        _end(copier, saved)


def _flush() -> None:
    """Python's own buffers out first, so what was printed before a switch goes where it was meant to."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()


def _dup(fd: int) -> int | None:
    try:
        return os.dup(fd)  # not inheritable: only the copier gets the terminal this way
    except OSError:  # started with the descriptor closed
        return None


def _occupy(fd: int) -> None:
    """A closed descriptor 1 or 2 taken by /dev/null until the copy ends."""
    null = os.open(os.devnull, os.O_WRONLY)  # the lowest free descriptor: `fd` itself when it is the lowest
    if null != fd:
        os.dup2(null, fd)
        os.close(null)


def _start(file_fd: int, head_bytes: int, tail_bytes: int) -> tuple[subprocess.Popen, dict[int, int | None]]:
    """The copier started on two new pipes, which then replace descriptors 1 and 2; what they were, kept."""
    _flush()
    saved = {fd: _dup(fd) for fd in STREAMS}
    for fd in (fd for fd, before in saved.items() if before is None):
        _occupy(fd)  # so that no pipe end lands on it
    pipes: dict[int, tuple[int, int]] = {}
    try:
        for fd in STREAMS:
            pipes[fd] = os.pipe()  # both ends not inheritable: the copier gets the read ends by pass_fds
        reads = [pipes[fd][0] for fd in STREAMS]
        argv = [sys.executable, "-I", "-S", console_tee.__file__, *map(str, reads), str(file_fd)]
        copier = subprocess.Popen(
            [*argv, str(head_bytes), str(tail_bytes)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL if saved[1] is None else saved[1],
            stderr=subprocess.DEVNULL if saved[2] is None else saved[2],
            pass_fds=(*reads, file_fd),
            start_new_session=True,  # a Ctrl-C or a stop sent to the launch's process group is not the copier's
        )
        for fd in STREAMS:
            os.dup2(pipes[fd][1], fd)  # inheritable, as 1 and 2 always are: Ray's and verl's children write here
    except BaseException:
        _restore(saved)
        raise
    finally:
        for read, write in pipes.values():
            os.close(read)
            os.close(write)
    return copier, saved


def _restore(saved: dict[int, int | None]) -> None:
    """Descriptors 1 and 2 as they were (closed if they were), the kept copies closed."""
    for fd, before in saved.items():
        if before is None:
            with contextlib.suppress(OSError):
                os.close(fd)
        else:
            os.dup2(before, fd)
            os.close(before)


def _end(copier: subprocess.Popen, saved: dict[int, int | None]) -> None:
    """Descriptors 1 and 2 back, which closes this process's ends of the pipes; then the copier, once every other
    writer is gone too, writes the tail and ends. A process the launch left behind still holding a pipe gets
    DRAIN_S, then the copier is told to end (SIGTERM: it copies what the pipes hold and writes the tail)."""
    _flush()
    _restore(saved)
    try:
        copier.wait(DRAIN_S)
        return
    except subprocess.TimeoutExpired:
        copier.terminate()
    try:
        copier.wait(DRAIN_S)
    except subprocess.TimeoutExpired:
        copier.kill()
        copier.wait()
