"""The one writer and the one careful reader of files in directories someone else may have prepared.

A run directory may be someone else's, or downloaded: a link planted as `report/report.png` or as `report/`
would make a plain `open(path, "w")` replace a file anywhere the user can write. So every file the package
writes goes through `write_file`: the directories below a trusted root are made (or checked) one component at
a time without following a link, the file is written into a new temporary file beside it (O_EXCL, O_NOFOLLOW),
synced, and renamed over the old name, which replaces a link rather than writing through it. A full disk or a
signal on the way leaves the old file whole and no temporary file behind.

`read_bytes` opens without blocking and reads only a regular file: a FIFO or a device named like a log file
would otherwise block a reader forever or feed it without end.
"""

import contextlib
import os
import stat
from pathlib import Path
from typing import BinaryIO

from verl_qwen35.errors import UserError

_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0)
_TEMP_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
_READ_FLAGS = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)


def _open_dir(root: Path, parts: tuple[str, ...], make: bool) -> int:
    """A descriptor of root/parts..., each part made (by the umask's mode) or opened without following a link;
    `root` itself is the caller's, trusted as given."""
    fd = os.open(root, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        for part in parts:
            if make:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, dir_fd=fd)
            try:
                child = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except OSError as err:
                if _is_link(fd, part):
                    raise UserError(
                        f"{root / Path(*parts)}: {part} is a symbolic link; nothing is written through a link "
                        "planted in a directory (remove it, or choose another output directory)"
                    ) from None
                raise err
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd


def _is_link(dir_fd: int, name: str) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


def _split(path: Path, within: Path | None) -> tuple[Path, tuple[str, ...], str]:
    path = Path(path)
    root = Path(within) if within is not None else path.parent
    try:
        parts = path.parent.relative_to(root).parts
    except ValueError:
        root, parts = path.parent, ()
    if any(part in ("..", "") for part in parts):
        raise UserError(f"{path}: a path that leaves {root}; nothing written")
    return root, parts, path.name


def write_file(path: Path, data: str | bytes, *, within: Path | None = None, private: bool = False) -> Path:
    """`data` into `path`, whole or not at all, never through a link.

    `within` is the trusted directory (a run directory, an output directory the user named): the directories
    between it and `path` are made without following links, and a link among them is refused. `private`
    writes mode 600 (records a job is launched from); otherwise the umask's mode, as `open` would.
    An OSError (a full disk, no permission) is one UserError naming the file; the old file is kept."""
    path = Path(path)
    root, parts, name = _split(path, within)
    raw = data.encode("utf-8") if isinstance(data, str) else data
    try:
        dir_fd = _open_dir(root, parts, make=True)
    except OSError as err:
        raise UserError(f"cannot write {path} ({err.strerror or err}); nothing written") from None
    temp = None
    try:
        for attempt in range(100):
            temp = f".{name[:100]}.{os.getpid()}.{attempt}.tmp"
            try:
                fd = os.open(temp, _TEMP_FLAGS, 0o600 if private else 0o666, dir_fd=dir_fd)
                break
            except FileExistsError:
                continue
        else:
            raise FileExistsError(f"no free temporary name beside {path}")
        try:
            view = memoryview(raw)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        temp = None
    except OSError as err:
        raise UserError(f"cannot write {path} ({err.strerror or err}); the file there before is kept") from None
    finally:
        if temp is not None:
            with contextlib.suppress(OSError):
                os.unlink(temp, dir_fd=dir_fd)
        os.close(dir_fd)
    return path


def open_below(root: Path, path: Path, make: bool) -> int:
    """A descriptor of the directory `path` below `root`, each component below `root` made (`make`) or opened
    without following a link (a link among them is a UserError naming it); `root` is trusted as given."""
    try:
        parts = Path(path).relative_to(root).parts
    except ValueError:
        raise UserError(f"{path}: not below {root}; nothing written") from None
    if any(part in ("..", "") for part in parts):
        raise UserError(f"{path}: a path that leaves {root}; nothing written")
    return _open_dir(Path(root), parts, make=make)


def kind_at(dir_fd: int, name: str) -> str | None:
    """What `name` is in the directory `dir_fd`, a link not followed: "link", "dir", "file", "other", or None."""
    try:
        mode = os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(mode):
        return "link"
    return "dir" if stat.S_ISDIR(mode) else "file" if stat.S_ISREG(mode) else "other"


def open_append(path: Path, private: bool = False) -> int:
    """A descriptor appending to the regular file `path` (made when absent: mode 600 when `private`, else the
    umask's), never through a link planted there (O_NOFOLLOW) and never blocking on a FIFO (O_NONBLOCK). Raises
    OSError (ELOOP for a link), NotRegular."""
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(path, flags | getattr(os, "O_CLOEXEC", 0), 0o600 if private else 0o666)
    return _regular_or_closed(fd, f"{path}: not a regular file (a FIFO, a device or a directory); not written")


def make_dirs(path: Path, within: Path) -> Path:
    """`path` made below `within` one component at a time, a link among them refused (see `write_file`)."""
    try:
        parts = Path(path).relative_to(within).parts
    except ValueError:
        within, parts = Path(path), ()
        Path(path).mkdir(parents=True, exist_ok=True)
    if ".." in parts:
        raise UserError(f"{path}: a path that leaves {within}; nothing written")
    os.close(_open_dir(Path(within), parts, make=True))
    return Path(path)


class NotRegular(UserError):
    """A path that names something other than a regular file (a FIFO, a device, a directory)."""


def open_lock_file(path: Path) -> int:
    """A descriptor (read-write) of the lock file `path`, made new (O_CREAT|O_EXCL) when absent, otherwise the
    regular file there opened: never through a link planted at `path` (O_NOFOLLOW), never blocking on a FIFO
    planted there. `path`'s directory is the caller's, trusted as given. Raises OSError as `open` does
    (ELOOP for a link), NotRegular for a FIFO, a device or a directory."""
    flags = os.O_RDWR | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        return os.open(path, flags | os.O_CREAT | os.O_EXCL, 0o666)
    except FileExistsError:
        pass
    fd = os.open(path, flags | os.O_NONBLOCK)
    return _regular_or_closed(fd, f"{path}: not a regular file (a FIFO, a device or a directory); not used as a lock")


def _regular_or_closed(fd: int, refusal: str) -> int:
    """`fd`, made blocking, when it is a regular file (opened O_NONBLOCK so a FIFO did not wait); else closed and
    NotRegular(refusal) raised."""
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise NotRegular(refusal)
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_regular(path: Path) -> BinaryIO:
    """`path` opened for reading when it is a regular file: opened without blocking (a FIFO's open would wait for
    a writer), then checked on the open descriptor (no race with a swap). Raises OSError as `open` does,
    NotRegular for a FIFO, a device or a directory."""
    fd = os.open(path, _READ_FLAGS)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise NotRegular(f"{path}: not a regular file (a FIFO, a device or a directory); not read")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_bytes(path: Path, limit: int) -> bytes:
    """At most `limit` bytes of a regular file (see `open_regular`)."""
    with open_regular(path) as handle:
        return handle.read(limit)


def is_regular(path: Path) -> bool:
    """A regular file (through links, as `open` sees it), checked without opening it."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False
