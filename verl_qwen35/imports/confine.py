"""Run a program that may change files only below one directory: Linux's Landlock and a seccomp filter, with
no privilege and no namespace.

`python -I -S confine.py ROOT -- PROGRAM ARGS...` restricts itself, then becomes PROGRAM: every file-system
change (write or truncate a file, make or remove a file, directory, link, FIFO, socket or device node, rename
or link into or out of a directory) is refused by the kernel outside ROOT (Landlock), for every utility and
every option form and for everything PROGRAM starts, which inherits the restriction and cannot lift it.
/dev/null stays writable (scripts redirect into it). TCP connect and bind are refused too (ABI 4), and
signals to processes outside the restriction (ABI 6): a script cannot stop the importer that watches it.
Landlock does not govern a file's metadata (mode, owner, times, extended attributes): a seccomp filter makes
those system calls do nothing, everywhere (they report success, so `touch` or `cp -p` in a script go on;
nothing the recording needs depends on them), and refuses any system call made through another
architecture's entry (x86's 32-bit `int 0x80`, x32), which the filter could not read.

Why Landlock: it needs neither root nor user namespaces (which some distributions restrict) and is on in
the kernels of current distributions (5.13+; `truncate(2)` by path is covered from ABI 3, Linux 6.2, so
that is the least this accepts). Source of the interface: the kernel's include/uapi/linux/landlock.h and
Documentation/userspace-api/landlock.rst. Standard library only: the file runs before the package is
importable, with Python's isolated mode.
"""

import ctypes
import os
import sys

CREATE_RULESET, ADD_RULE, RESTRICT_SELF = 444, 445, 446  # the same number on every architecture
PR_SET_NO_NEW_PRIVS = 38
PR_SET_PDEATHSIG = 1
RULESET_VERSION = 1 << 0  # landlock_create_ruleset flag: ask for the ABI version
RULE_PATH_BENEATH = 1
LEAST_ABI = 3

WRITE_FILE = 1 << 1
# Every right that changes the file system (include/uapi/linux/landlock.h LANDLOCK_ACCESS_FS_*).
CHANGES = {
    1: WRITE_FILE | sum(1 << b for b in range(4, 13)),  # REMOVE_DIR .. MAKE_SYM
    2: 1 << 13,  # REFER: link or rename a file into another directory
    3: 1 << 14,  # TRUNCATE
}
NET_TCP = (1 << 0) | (1 << 1)  # BIND_TCP, CONNECT_TCP (ABI 4)
SCOPE_SIGNAL = 1 << 1  # ABI 6; 1 << 0 is the abstract Unix socket scope
SCOPE_ABSTRACT_UNIX = 1 << 0
FILE_RIGHTS = WRITE_FILE | (1 << 14)  # the rights a rule on a single file (not a directory) may grant


# seccomp (include/uapi/linux/seccomp.h, linux/filter.h, linux/audit.h): the metadata calls, by architecture.
PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 22, 2
RET_ALLOW, RET_ERRNO = 0x7FFF0000, 0x00050000
EPERM = 1
LD_ABS_W, JEQ_K, JGE_K, RET_K = 0x20, 0x15, 0x35, 0x06
X32_BIT = 0x40000000
METADATA = {
    # chmod fchmod fchmodat chown fchown lchown fchownat utime utimes futimesat utimensat, the xattr setters and
    # removers, fchmodat2, setxattrat, removexattrat (arch/x86/entry/syscalls/syscall_64.tbl)
    "x86_64": (0xC000003E, [90, 91, 268, 92, 93, 94, 260, 132, 235, 261, 280, *range(188, 191), *range(197, 200)]),
    # fchmod fchmodat fchownat fchown utimensat, the xattr setters and removers (include/uapi/asm-generic/unistd.h)
    "aarch64": (0xC00000B7, [52, 53, 54, 55, 88, 5, 6, 7, 14, 15, 16]),
}
NEWER = [452, 463, 466]  # fchmodat2, setxattrat, removexattrat: the same number on every architecture


class _Filter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8), ("k", ctypes.c_uint32)]


class _Program(ctypes.Structure):
    _fields_ = [("len", ctypes.c_uint16), ("filter", ctypes.POINTER(_Filter))]


def _metadata_filter(machine: str) -> list[tuple[int, int, int, int]]:
    """The BPF program: another architecture's entry refused; a metadata call answered 0 without running."""
    arch, numbers = METADATA[machine]
    numbers = [*numbers, *NEWER]
    head = [(LD_ABS_W, 0, 0, 4), (JEQ_K, 0, 0, arch), (LD_ABS_W, 0, 0, 0)]  # jf of the arch test filled below
    if machine == "x86_64":
        head.append((JGE_K, 0, 0, X32_BIT))  # jt filled below
    body = [(JEQ_K, len(numbers) - i, 0, nr) for i, nr in enumerate(numbers)]  # jt: to the no-op return
    tail = [(RET_K, 0, 0, RET_ALLOW), (RET_K, 0, 0, RET_ERRNO | 0), (RET_K, 0, 0, RET_ERRNO | EPERM)]
    program = head + body + tail
    refuse = len(program) - 1
    program[1] = (JEQ_K, 0, refuse - 2, arch)
    if machine == "x86_64":
        program[3] = (JGE_K, refuse - 4, 0, X32_BIT)
    return program


def _filter_metadata(libc: ctypes.CDLL) -> None:
    machine = os.uname().machine
    if machine not in METADATA:
        sys.stderr.write(f"verl-qwen35-confine: no metadata filter for the {machine} architecture\n")
        sys.exit(125)
    program = _metadata_filter(machine)
    filters = (_Filter * len(program))(*(_Filter(*ins) for ins in program))
    prog = _Program(len(program), filters)
    if libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0) != 0:
        _fail("prctl(PR_SET_SECCOMP)")


class _Ruleset(ctypes.Structure):
    _fields_ = [("fs", ctypes.c_uint64), ("net", ctypes.c_uint64), ("scoped", ctypes.c_uint64)]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def abi() -> int:
    """The kernel's Landlock ABI version; 0 where Landlock is not built in, not enabled, or blocked."""
    if not sys.platform.startswith("linux"):
        return 0
    try:
        found = _libc().syscall(CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(RULESET_VERSION))
    except (OSError, AttributeError):
        return 0
    return max(int(found), 0)


def _fail(what: str) -> None:
    err = ctypes.get_errno()
    sys.stderr.write(f"verl-qwen35-confine: {what}: {os.strerror(err)}\n")
    sys.exit(125)


def _allow(libc: ctypes.CDLL, ruleset: int, path: str, rights: int) -> None:
    fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    try:
        rule = _PathBeneath(rights, fd)
        if libc.syscall(ADD_RULE, ruleset, RULE_PATH_BENEATH, ctypes.byref(rule), ctypes.c_uint32(0)) != 0:
            _fail(f"landlock_add_rule {path}")
    finally:
        os.close(fd)


def confine(root: str) -> None:
    """Restrict this process (and all it will start) to changing files below `root`."""
    version = abi()
    if version < LEAST_ABI:
        sys.stderr.write(f"verl-qwen35-confine: Landlock ABI {version} (needs {LEAST_ABI})\n")
        sys.exit(125)
    libc = _libc()
    fs = sum(bits for v, bits in CHANGES.items() if v <= version)
    attr = _Ruleset(fs, NET_TCP if version >= 4 else 0, (SCOPE_SIGNAL | SCOPE_ABSTRACT_UNIX) if version >= 6 else 0)
    size = 24 if version >= 6 else 16 if version >= 4 else 8
    ruleset = libc.syscall(CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0))
    if ruleset < 0:
        _fail("landlock_create_ruleset")
    _allow(libc, ruleset, root, fs)
    _allow(libc, ruleset, os.devnull, fs & FILE_RIGHTS)
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:  # also keeps a setuid program from lifting it
        _fail("prctl(PR_SET_NO_NEW_PRIVS)")
    if libc.syscall(RESTRICT_SELF, ruleset, ctypes.c_uint32(0)) != 0:
        _fail("landlock_restrict_self")
    os.close(ruleset)
    _filter_metadata(libc)


def main(argv: list[str]) -> None:
    if len(argv) < 3 or argv[1] != "--":
        sys.stderr.write("usage: confine.py ROOT -- PROGRAM [ARGS...]\n")
        sys.exit(125)
    parent = os.getppid()
    # Killed with the importer even if it dies without stopping us (SIGKILL, out of memory).
    if _libc().prctl(PR_SET_PDEATHSIG, 9, 0, 0, 0) != 0 or os.getppid() != parent:
        sys.exit(125)
    confine(argv[0])
    os.execv(argv[2], argv[2:])


if __name__ == "__main__":
    main(sys.argv[1:])
