"""Files a run is launched from (launch.yaml, job.sbatch): written whole, mode 600, in a directory only the user
can write.

A record can set LD_PRELOAD, reward function paths and `_target_`s, and job.sbatch is run by bash on
every node: anyone who can write either, or replace it in its directory, runs code as the user.
"""

import os
import stat
from pathlib import Path

from verl_qwen35.disk import write_file

OTHERS_WRITE = stat.S_IWGRP | stat.S_IWOTH


def restrict_dir(directory: Path) -> None:
    """Take group and others' write permission off `directory` when it is ours (Hydra made it with the umask's mode)."""
    info = directory.stat()
    if info.st_uid == os.getuid() and info.st_mode & OTHERS_WRITE:
        directory.chmod(stat.S_IMODE(info.st_mode) & ~OTHERS_WRITE)


def write_private(path: Path, text: str) -> Path:
    """Write `text` to `path` with mode 600 by the one writer (disk.py): whole or not at all, never through a link."""
    path = Path(path)
    restrict_dir(path.parent)
    return write_file(path, text, private=True)


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
