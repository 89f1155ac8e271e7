"""One sweep per sweep directory: two sweeps given one `hydra.sweep.dir` would write the same job
directories (0/, 1/, ...) and overwrite each other's verdicts.

The lock is `fcntl.flock` on `.sweep.lock` in the sweep directory (made new, or opened, never through a link
planted there: disk.py `open_lock_file`): the kernel drops it when its holder
ends, however it ends (SIGKILL, the OOM killer), so a lock never outlives its sweep. The file names
its holder (pid, host, start time) for the sweep that is turned away; a holder that ended without
releasing (the file still names it, but nobody holds the lock) is noted and taken over.
"""

import fcntl
import json
import os
import socket
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from verl_qwen35.disk import NotRegular, open_lock_file
from verl_qwen35.errors import UserError
from verl_qwen35.terminal import say

LOCK_FILE = ".sweep.lock"
HOLDER_MAX_BYTES = 4096  # the holder's line; a larger file is not ours


@dataclass
class SweepLock:
    """The lock this process holds on its sweep directory; `release()` frees it (so does this process's end)."""

    file: IO[str] | None

    def release(self) -> None:
        if self.file is None:
            return
        file, self.file = self.file, None
        try:
            file.truncate(0)  # an empty file: nobody to name, nothing stale
        finally:
            file.close()  # closing the last descriptor drops the flock


def lock_sweep_dir(sweep_dir: Path, sweep_id: str) -> SweepLock:
    """Hold `sweep_dir` for this sweep, or refuse naming the sweep that holds it (UserError, nothing written).

    A filesystem without flock (Lustre mounted without `-o flock`) cannot lock: the sweep runs with a warning."""
    key = f"hydra.sweep.dir={sweep_dir}"
    path = sweep_dir / LOCK_FILE
    try:
        sweep_dir.mkdir(parents=True, exist_ok=True)
        file = os.fdopen(open_lock_file(path), "r+", encoding="utf-8", errors="replace")
    except NotRegular:
        why = "is not a regular file; remove it, or give the sweep another directory"
        raise UserError(f"{key}: {path} {why}") from None
    except OSError as err:
        if path.is_symlink():
            raise UserError(
                f"{key}: {path} is a symbolic link; a lock is never taken through a link (remove it, or give the "
                "sweep another directory)"
            ) from None
        reason = f"cannot write there ({err.strerror})"
        raise UserError(f"{key}: {reason}: give the sweep a directory you can write") from None
    try:
        fcntl.flock(file, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = _holder(file)
        file.close()
        raise UserError(
            f"{key} is in use by another sweep ({holder}): wait for it to end, or give this sweep its own "
            "hydra.sweep.dir"
        ) from None
    except OSError as err:  # ENOLCK, ENOSYS, EINVAL: the filesystem has no locks
        file.close()
        note = f"WARNING sweep: {key} cannot be locked ({err.strerror}): a second sweep there is not kept out"
        say(note, file=sys.stderr)
        return SweepLock(None)
    if stale := _holder(file, missing=""):
        say(f"sweep: took over the lock of a sweep that ended without releasing it ({stale})", file=sys.stderr)
    file.seek(0)
    file.truncate(0)
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    file.write(json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "started": started, "sweep_id": sweep_id}))
    file.write("\n")
    file.flush()
    return SweepLock(file)


def _holder(file: IO[str], missing: str = "it has not named itself yet") -> str:
    """`pid N on host H, started T` from the lock file, or `missing` when it names nobody readable."""
    file.seek(0)
    text = file.read(HOLDER_MAX_BYTES + 1)
    try:
        holder = json.loads(text) if 0 < len(text) <= HOLDER_MAX_BYTES else None
    except ValueError:
        holder = None
    if not isinstance(holder, dict):
        return missing if not text.strip() else "its lock file does not say which"
    fields = {k: str(holder.get(k, "?"))[:100] for k in ("pid", "host", "started")}
    return f"pid {fields['pid']} on host {fields['host']}, started {fields['started']}"
