"""Record what a bash launch script hands to `python3 -m verl.trainer.main_ppo`, without running verl.

The recording procedure of /work/shared/reference/README.md (how seed_overrides/ were made): a stand-in
`python3` first on PATH writes the arguments of a `-m verl.trainer.main_ppo` call one a line and the
exported environment, and exits 0; stand-ins for the other commands such scripts call do nothing; the
script runs under `bash` with a clean environment in a temporary directory, with a time limit.

The script is someone else's: it runs confined, so that it can change no file outside the temporary
directory whatever it calls and however (an absolute path, a redirection, `dd of=`, `sed -i`, `install`,
`rsync`, a Python one-liner). The kernel holds the line, not a list of commands: Landlock and a seccomp
filter (imports/confine.py) where the kernel has them (Linux 6.2+), else bubblewrap (`bwrap`, a read-only
view of the file system but the temporary directory) where it is installed and allowed; with neither, the
import refuses to run the script and says so (a `.txt` list of overrides needs no run). Where user
namespaces are allowed (`unshare -rn`) the script also has no network interface but loopback; Landlock also
refuses it TCP (ABI 4) and signals to processes outside (ABI 6). The stand-ins of the utilities that write
(mkdir, cp, tee...) skip a path outside the temporary directory and name it in the report, so that a
script's `mkdir -p /root/.cache/logs` goes on instead of failing: a convenience, not the confinement.
"""

import shlex
import shutil
import signal
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from verl_qwen35.config.secrets import redact
from verl_qwen35.config.yaml_files import read_text
from verl_qwen35.disk import NotRegular, read_bytes, write_file
from verl_qwen35.errors import UserError
from verl_qwen35.imports import confine
from verl_qwen35.run.child import run_child

ENTRYPOINT = "verl.trainer.main_ppo"
TIME_LIMIT_S = 30
# Commands verl's launch scripts call around the trainer; their stand-ins do nothing and exit 0.
NO_OPS = ("hf", "huggingface-cli", "nvidia-smi", "npu-smi", "ray", "wandb", "modelscope", "pip", "pip3", "uv")
# Utilities that write: their stand-ins drop every path outside the temporary directory (see CONFINED_SH).
CONFINED = ("chmod", "cp", "ln", "mkdir", "mv", "rm", "rmdir", "tee", "touch")
# Utilities a launch script may use to build its overrides (names looked up in /usr/bin and /bin).
BASICS = [
    "awk",
    "basename",
    "bash",
    "cat",
    "cut",
    "date",
    "dirname",
    "echo",
    "env",
    "expr",
    "false",
    "grep",
    "head",
    "hostname",
    "id",
    "ls",
    "mktemp",
    "nproc",
    "printf",
    "pwd",
    "readlink",
    "realpath",
    "sed",
    "seq",
    "sleep",
    "sort",
    "stat",
    "tail",
    "test",
    "tr",
    "true",
    "uname",
    "wc",
    "which",
    "whoami",
    "xargs",
]
# Proxies are set to a dummy before the run (as in the recording) to see whether the script clears them.
DUMMY_PROXY = "http://proxy:1"
PROXIES = ("http_proxy", "https_proxy")  # as recorded (the seed files show these two)
# What bash itself sets, not the script's exports.
BASH_OWN = frozenset({"PWD", "OLDPWD", "SHLVL", "_", "BASH_ENV"})

STANDIN_PYTHON = """#!/bin/sh
# Stand-in python3 (verl-qwen35 import): records a main_ppo call (after any interpreter options such as
# `-X faulthandler`), names another `-m verl...` entrypoint, refuses anything else.
all="$*"
module=""
while [ $# -gt 0 ]; do
    case "$1" in
        -m) module="$2"; shift 2; break ;;
        -X|-W) shift 2 ;;
        -*) shift ;;
        *) break ;;
    esac
done
if [ "$module" = "verl.trainer.main_ppo" ]; then
    : > "$IMPORT_RECORD/args"
    for arg in "$@"; do printf '%s\\0' "$arg" >> "$IMPORT_RECORD/args"; done
    env -0 > "$IMPORT_RECORD/env"
    exit 0
fi
case "$module" in verl.*) printf '%s\\0' "$module" >> "$IMPORT_RECORD/entrypoint" ;; esac
printf '%s\\0' "python3 $all" >> "$IMPORT_RECORD/other_python"
exit 1
"""
# torchrun (verl's SFT scripts): the module it would start is named; nothing runs.
STANDIN_TORCHRUN = """#!/bin/sh
while [ $# -gt 0 ]; do
    if [ "$1" = "-m" ] || [ "$1" = "--module" ]; then
        printf '%s\\0' "$2" >> "$IMPORT_RECORD/entrypoint"
        exit 1
    fi
    shift
done
printf '%s\\0' "torchrun" >> "$IMPORT_RECORD/entrypoint"
exit 1
"""
# A writing utility confined to the temporary directory: @REAL@, @REALPATH@ and @ROOT@ are filled in.
CONFINED_SH = """#!@BASH@
# Stand-in @NAME@ (verl-qwen35 import): the real one, given only the paths inside @ROOT@.
kept=()
dropped=0
for arg in "$@"; do
    if [[ $arg != -* ]]; then
        path=$(@REALPATH@ -m -- "$arg")
        if [[ $path != @ROOT@ && $path != @ROOT@/* ]]; then
            printf '%s\\0' "@NAME@ $arg" >> "$IMPORT_RECORD/outside"
            dropped=1
            continue
        fi
    fi
    kept+=("$arg")
done
case "@NAME@" in
    cp|mv|ln) [[ $dropped = 1 ]] && exit 0 ;;  # a copy or move from or to outside: skipped whole
    tee) exec @REAL@ "${kept[@]}" ;;  # with no file left, tee copies its input to its output
esac
for arg in "${kept[@]}"; do [[ $arg != -* ]] && exec @REAL@ "${kept[@]}"; done
exit 0
"""
NO_OP = "#!/bin/sh\nexit 0\n"
# Bash calls this function for a command not on PATH: named in the report instead of a bare 127.
MISSING_HOOK = """command_not_found_handle() {
    printf '%s\\0' "$1" >> "$IMPORT_RECORD/missing"
    printf 'verl-qwen35 import: %s is not available while importing\\n' "$1" >&2
    return 127
}
"""


@dataclass
class Recorded:
    """The overrides a script hands to main_ppo (in order) and the environment it exports."""

    overrides: list[str]
    env: dict[str, str] = field(default_factory=dict)
    unset_proxies: bool = True
    notes: list[str] = field(default_factory=list)


def read_overrides(path: Path) -> Recorded:
    """A plain list: one override a line, `#` comments; an `#ENV` line starts `NAME=value` lines (the
    seed files' format). Without an `#ENV` section nothing is known of the environment."""
    text = read_text(path, kind="override list")
    lines = [ln.strip() for ln in text.splitlines()]
    marker = "#ENV" in lines
    cut = lines.index("#ENV") if marker else len(lines)
    overrides = [ln for ln in lines[:cut] if ln and not ln.startswith("#")]
    env = dict(ln.split("=", 1) for ln in lines[cut + 1 :] if "=" in ln and not ln.startswith("#"))
    unset = not any(env.get(p) == DUMMY_PROXY for p in PROXIES)
    for name in [p for p in PROXIES if env.get(p) == DUMMY_PROXY]:
        del env[name]
    return Recorded(overrides, env, unset_proxies=unset or not marker)


def _system(name: str) -> Path | None:
    return next((Path(d, name) for d in ("/usr/bin", "/bin") if Path(d, name).is_file()), None)


def _write_standins(bin_dir: Path, root: Path, bash: str) -> None:
    bin_dir.mkdir()
    scripts = [("python3", STANDIN_PYTHON), ("python", STANDIN_PYTHON), ("torchrun", STANDIN_TORCHRUN)]
    realpath = _system("realpath")
    for name in CONFINED if realpath else ():
        real = _system(name)
        if real is not None:
            filled = {"@BASH@": bash, "@NAME@": name, "@REAL@": str(real), "@REALPATH@": str(realpath)}
            text = CONFINED_SH.replace("@ROOT@", shlex.quote(str(root.resolve())))
            for mark, value in filled.items():
                text = text.replace(mark, value)
            scripts.append((name, text))
    for name, text in [*scripts, *((n, NO_OP) for n in NO_OPS)]:
        write_file(bin_dir / name, text)
        (bin_dir / name).chmod(0o755)
    for name in BASICS:
        found = _system(name)
        if found and not (bin_dir / name).exists():
            (bin_dir / name).symlink_to(found)


def _no_network_prefix() -> list[str]:
    """`unshare -rn` (a user and network namespace) where the kernel allows it, else nothing."""
    unshare = shutil.which("unshare", path="/usr/bin:/bin")
    if unshare and run_child([unshare, "-rn", "true"], cwd=Path("/"), env={}, time_limit_s=5).returncode == 0:
        return [unshare, "-rn"]
    return []


def _bwrap_prefix(root: Path) -> list[str]:
    """bubblewrap's read-only view of the whole file system but `root` (a fresh /dev, no network), where
    `bwrap` is installed and allowed to make its namespaces here; else nothing."""
    bwrap = shutil.which("bwrap", path="/usr/bin:/bin")
    if bwrap is None:
        return []
    prefix = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--bind", str(root), str(root)]
    prefix += ["--unshare-net", "--unshare-pid", "--proc", "/proc", "--die-with-parent", "--new-session", "--"]
    probe = run_child([*prefix, "/bin/sh", "-c", "true"], cwd=Path("/"), env={}, time_limit_s=5)
    return prefix if probe.returncode == 0 else []


NOT_CONFINED = (
    "cannot run the script confined to a temporary directory here: this kernel has no Landlock of ABI "
    f"{confine.LEAST_ABI}+ (Linux 6.2+, `landlock` in the kernel's lsm= list) and bubblewrap (`bwrap`) is not "
    "installed or not allowed to make its namespaces; the importer runs no script it cannot confine. Write the "
    "script's overrides one a line into a .txt file and import that, or import on a machine with either"
)


def _confinement(root: Path) -> list[str]:
    """The command prefix that keeps the script from changing any file outside `root`."""
    if confine.abi() >= confine.LEAST_ABI:
        return [*_no_network_prefix(), sys.executable, "-I", "-S", confine.__file__, str(root), "--"]
    if bwrap := _bwrap_prefix(root):
        return bwrap
    raise UserError(NOT_CONFINED)


def _ended(code: int) -> str:
    """How the script ended, in words: an exit code, or the signal that ended it."""
    if code < 0:
        try:
            return f"it was ended by signal {signal.Signals(-code).name}"
        except ValueError:
            return f"it was ended by signal {-code}"
    return f"it exited with {code}"


DENIED = ("Permission denied", "Read-only file system", "Operation not permitted")


RECORD_MAX_BYTES = 8 * 1024 * 1024  # what the stand-in python writes: a command line and an environment


def _split(path: Path, script: Path) -> list[str]:
    """A record the stand-ins wrote, NUL-separated; the script shares the directory, so it may have planted
    a FIFO there (read without blocking: refused) or a flood (read up to a bound: cut)."""
    if not path.exists():
        return []
    try:
        raw = read_bytes(path, RECORD_MAX_BYTES)
    except (NotRegular, OSError):
        raise UserError(
            f"{script}: replaced the importer's record {path.name} with something that is not a plain file; "
            "import a .txt list of overrides instead"
        ) from None
    return raw.decode("utf-8", "replace").split("\0")[:-1]


def run_script(
    script: Path, device: str, time_limit_s: float | None = None, fail_quietly: bool = False
) -> Recorded | None:
    """Run the script as the recording procedure does; a script that never calls main_ppo is refused
    (with `fail_quietly`, None: the other device's run, only asked whether it clears the proxies)."""
    if not script.is_file():
        raise UserError(f"{script}: no such file (give a bash launch script or a .txt list of overrides)")
    bash = shutil.which("bash", path="/usr/bin:/bin")
    if bash is None:
        raise UserError("bash is not installed here; import a .txt list of overrides instead")
    with tempfile.TemporaryDirectory(prefix="verl-qwen35-import-") as tmp:
        root = Path(tmp)
        record, home, work, bin_dir = root / "record", root / "home", root / "work", root / "bin"
        for d in (record, home, work):
            d.mkdir()
        _write_standins(bin_dir, root, bash)
        write_file(root / "hook.sh", MISSING_HOOK)
        given = {
            "PATH": str(bin_dir),
            "HOME": str(home),
            "DEVICE": device,
            "VERL_USE_UV": "0",
            "LANG": "C.UTF-8",
            "IMPORT_RECORD": str(record),
            "BASH_ENV": str(root / "hook.sh"),
            **dict.fromkeys(PROXIES, DUMMY_PROXY),
        }
        time_limit_s = TIME_LIMIT_S if time_limit_s is None else time_limit_s
        argv = [*_confinement(root), bash, str(script.resolve())]
        done = run_child(argv, cwd=work, env=given, time_limit_s=time_limit_s)
        confine_failed = [ln for ln in done.last_lines(20) if ln.startswith("verl-qwen35-confine:")]
        if confine_failed:
            raise UserError(f"{NOT_CONFINED} ({confine_failed[0].split(': ', 1)[1]})")
        if done.returncode is None and not (record / "args").exists():
            if fail_quietly:
                return None
            raise UserError(
                f"{script}: still running after {time_limit_s:g} s without calling {ENTRYPOINT} (stopped); it may "
                "wait for something (a download, a cluster, input): remove that part, or write the overrides one a "
                "line into a .txt file and import that"
            )
        missing, others = _split(record / "missing", script), _split(record / "other_python", script)
        if not (record / "args").exists():
            if fail_quietly:
                return None
            if entry := _split(record / "entrypoint", script):
                raise UserError(
                    f"{script}: it starts {redact(entry[0][:200])}, not {ENTRYPOINT}: this project composes, checks "
                    "and imports main_ppo launches only (another entrypoint reads another config); run that script "
                    "with verl"
                )
            assert done.returncode is not None  # a script stopped at the time limit was answered above
            did = _ended(done.returncode)
            if missing:
                named = ", ".join(redact(m[:100]) for m in sorted(set(missing)))
                did += f"; it called {named}, which the importer does not provide"
            if others:
                shown = redact(others[0][:300])
                did += f"; it ran `{shown}` (the stand-in python3 only records `python3 -m {ENTRYPOINT}`)"
            tail = [redact(line[:500]) for line in done.last_lines(3)]
            if any(d in line for line in done.last_lines(20) for d in DENIED):
                did += (
                    "; a change to a file outside the importer's temporary directory was refused (the script runs "
                    "confined to it: make the script write only below its working directory or $HOME)"
                )
            raise UserError(
                f"{script}: never called `python3 -m {ENTRYPOINT}` ({did}). "
                + (f"Its last output: {' | '.join(tail)}. " if tail else "")
                + "Make the script call main_ppo without those commands (or set what it asks for), "
                "or write the overrides one a line into a .txt file and import that"
            )
        env = dict(kv.split("=", 1) for kv in _split(record / "env", script) if "=" in kv)
        exported = {k: v for k, v in env.items() if k not in BASH_OWN and given.get(k) != v}
        exported.pop("IMPORT_RECORD", None)
        for name in PROXIES:  # a proxy the script set itself is one of its exports
            if env.get(name) == DUMMY_PROXY:
                exported.pop(name, None)
        notes = [
            f"the script called {redact(m[:100])}, which is not available while importing" for m in sorted(set(missing))
        ]
        notes += [
            f"`{redact(o[:300])}` skipped: outside the import's temporary directory (nothing outside it is touched)"
            for o in dict.fromkeys(_split(record / "outside", script))
        ]
        notes += [f"the script ran `{redact(o[:300])}`; the stand-in answered with exit 1" for o in others]
        if done.returncode is None:
            notes.append(
                f"the script was still running {time_limit_s:g} s after it called {ENTRYPOINT} (stopped): "
                "what it does after that is not part of the import"
            )
        unset = not any(env.get(p) == DUMMY_PROXY for p in PROXIES)
        home_read = "${oc.env:HOME}"  # the temporary HOME, read back as the launching user's
        args = [a.replace(str(home), home_read) for a in _split(record / "args", script)]
        exported = {k: v.replace(str(home), home_read) for k, v in exported.items()}
        return Recorded(args, exported, unset_proxies=unset, notes=notes)


def record(source: Path, device: str) -> Recorded:
    """A `.txt` file is a list of overrides; anything else is a launch script."""
    if source.suffix == ".txt":
        if not source.is_file():
            raise UserError(f"{source}: no such file")
        return read_overrides(source)
    return run_script(source, device)
