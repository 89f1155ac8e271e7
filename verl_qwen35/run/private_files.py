"""Files a run is launched from (launch.yaml, job.sbatch): written whole, mode 600, in a directory only the user
can write.

A record can set LD_PRELOAD, reward function paths and `_target_`s, and job.sbatch is run by bash on
every node: anyone who can write either, or replace it in its directory, runs code as the user.
"""

import os
import stat
import tempfile
from pathlib import Path

OTHERS_WRITE = stat.S_IWGRP | stat.S_IWOTH


def restrict_dir(directory: Path) -> None:
    """Take group and others' write permission off `directory` when it is ours (Hydra made it with the umask's mode)."""
    info = directory.stat()
    if info.st_uid == os.getuid() and info.st_mode & OTHERS_WRITE:
        directory.chmod(stat.S_IMODE(info.st_mode) & ~OTHERS_WRITE)


def write_private(path: Path, text: str) -> Path:
    """Write `text` to `path` with mode 600: into a temporary file beside it, renamed over it once whole,
    so a full disk or a signal leaves the old file (or none), never half of one."""
    path = Path(path)
    restrict_dir(path.parent)
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")  # mkstemp: mode 600
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
    return path


def writable_by_others(path: Path) -> str | None:
    """Why someone other than the user could change `path` (a file or a directory), or None."""
    info = path.stat()
    if info.st_uid != os.getuid():
        return f"{path} is owned by uid {info.st_uid}, not by you (uid {os.getuid()})"
    if info.st_mode & OTHERS_WRITE:
        bits = (("its group", stat.S_IWGRP), ("others", stat.S_IWOTH))
        who = " and ".join(name for name, bit in bits if info.st_mode & bit)
        return f"{path} can be written by {who} (mode {stat.S_IMODE(info.st_mode):o})"
    return None
