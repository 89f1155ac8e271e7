"""`import SCRIPT` runs someone else's script confined (issue 42; docs/security.md): whatever utility it calls and
however (an absolute path, an option form, a redirection, a Python one-liner, a hard link into its own directory),
no file outside the importer's temporary directory changes, not its content, mode or times; the script is ended
with its whole process group and the temporary directory removed, on Ctrl-C too; a refusal neither quotes a
secret nor gives a reason that is not the script's. Real scripts through the real command."""

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.commands import REPO, started
from verl_qwen35.imports import confine

pytestmark = pytest.mark.skipif(
    confine.abi() < confine.LEAST_ABI and not shutil.which("bwrap"), reason="no confinement on this machine"
)
SECRET = "hf_abcdefghijklmnopqrstuvwxyz0123"
CALL = "python3 -m verl.trainer.main_ppo actor_rollout_ref.model.path=Qwen/Qwen3.5-35B-A3B model_engine=megatron\n"


def _tool(name: str) -> str | None:
    return shutil.which(name, path="/usr/bin:/bin")


def attempts(out: Path) -> list[str]:
    """Lines that each try to change a file or directory under `out` (which holds `file`)."""
    f = out / "file"
    lines = [
        f"cp /etc/hostname {out}/cp",
        f"/bin/cp /etc/hostname {out}/cp2",
        f"/bin/cp --target-directory={out} /etc/hostname",
        f"echo x | tee {out}/tee",
        f"echo x | {_tool('tee')} -a {f}",
        f"{_tool('dd')} if=/dev/zero of={out}/dd count=1",
        f"echo x | {_tool('dd')} of={f} conv=notrunc",
        f"{_tool('sed')} -i s/keep/gone/ {f}",
        f"{_tool('sed')} --in-place=.bak s/keep/gone/ {f}",
        f"touch {out}/touched",
        f"{_tool('touch')} {f}",
        f"{_tool('touch')} -d 2001-01-01 {f}",
        f"mkdir -p {out}/dir/sub",
        f"{_tool('mkdir')} {out}/dir2",
        f"ln -s /etc {out}/link",
        f"{_tool('ln')} -s /etc {out}/link2",
        f"{_tool('ln')} {f} hard && echo pwned >> hard",
        f"{sys.executable} -c \"open('{out}/py', 'w').write('x')\"",
        f"{sys.executable} -c \"import os; os.chmod('{f}', 0o777); os.utime('{f}', (0, 0))\"",
        f"echo x > {out}/redirect",
        f"echo x >> {f}",
        f"exec 3>{out}/fd3",
        f"{_tool('install')} -m 644 /etc/hostname {out}/installed",
        f"{_tool('install')} -d {out}/install_dir",
        f"{_tool('truncate')} -s 0 {f}",
        f"{_tool('mv')} {f} moved",
        f"{_tool('rm')} -f {f}",
        f"{_tool('chmod')} 000 {f}",
        f"cd {out} && echo x > relative; cd - >/dev/null",
        f"{_tool('mkfifo')} {out}/fifo",
    ]
    for name, line in (("rsync", f"rsync /etc/hostname {out}/rsync"), ("perl", f"perl -e 'open F, \">{f}\"'")):
        if _tool(name):
            lines.append(f"{_tool(name)}{line[len(name) :]}")
    return lines


def snapshot(root: Path) -> dict[str, tuple]:
    """Every entry below root with its kind, mode, owner, times and content."""
    found = {}
    for path in [root, *sorted(root.rglob("*"))]:
        st = path.lstat()
        data = path.read_bytes() if path.is_file() and not path.is_symlink() else b""
        found[str(path)] = (st.st_mode, st.st_uid, st.st_mtime_ns, st.st_size, data)
    return found


def run(cwd: Path, *argv: str, tmpdir: Path | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("HYDRA_FULL_ERROR", None)
    if tmpdir is not None:
        env["TMPDIR"] = str(tmpdir)
    return subprocess.run(
        [sys.executable, "-m", "verl_qwen35", "import", *argv],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_no_utility_and_no_option_form_changes_a_file_outside(tmp_path):
    out = tmp_path / "outside"
    out.mkdir()
    (out / "file").write_text("keep\n")
    os.utime(out / "file", ns=(10**18, 10**18))
    before = snapshot(out)
    script = tmp_path / "run.sh"
    script.write_text("\n".join([*attempts(out), CALL]))
    done = run(tmp_path, str(script), "--out", str(tmp_path / "preset"))
    assert done.returncode == 0, done.stderr[-3000:]
    assert snapshot(out) == before
    assert "actor_rollout_ref.model.path" not in done.stderr


def test_a_script_stopped_at_a_write_outside_is_told_so(tmp_path):
    script = tmp_path / "run.sh"
    script.write_text(f"set -e\n/bin/cp /etc/hostname {tmp_path}/copy\n{CALL}")
    done = run(tmp_path, str(script))
    assert done.returncode == 2 and "outside the importer's temporary directory was refused" in done.stderr
    assert not (tmp_path / "copy").exists()


def test_a_refusal_quotes_no_secret(tmp_path):
    script = tmp_path / "run.sh"
    script.write_text(f"python3 -c 'import x' --token={SECRET}\nHF_TOKEN={SECRET} hf_{SECRET}\nexit 3\n")
    done = run(tmp_path, str(script))
    assert done.returncode == 2 and "never called" in done.stderr and "exited with 3" in done.stderr
    assert SECRET not in done.stdout + done.stderr


def test_a_script_that_called_main_ppo_and_then_waits_is_imported(tmp_path, monkeypatch):
    script = tmp_path / "run.sh"
    script.write_text(f"{CALL}sleep 100\n")
    monkeypatch.setattr("verl_qwen35.imports.script.TIME_LIMIT_S", 2)
    from verl_qwen35.imports.script import run_script

    recorded = run_script(script, "gpu", time_limit_s=2)
    assert recorded.overrides[0] == "actor_rollout_ref.model.path=Qwen/Qwen3.5-35B-A3B"
    assert any("still running" in n for n in recorded.notes)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_a_stopped_import_leaves_no_process_and_no_temporary_file(tmp_path, signum):
    temp = tmp_path / "temp"
    temp.mkdir()
    marker = f"{os.getpid()}.{signum}{time.monotonic_ns() % 1000}"
    script = tmp_path / "run.sh"
    # It ignores the stop signals it can, starts a child in the background, and waits.
    script.write_text(f"trap '' INT TERM HUP\nsleep {marker} &\nsleep {marker}\n")
    env = {**os.environ, "PYTHONPATH": str(REPO), "TMPDIR": str(temp)}
    proc = started([sys.executable, "-m", "verl_qwen35", "import", str(script)], tmp_path, env)
    deadline = time.monotonic() + 60
    while not _running(marker) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _running(marker), "the script never started"
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 128 + signum and "Traceback" not in err, err
    time.sleep(0.5)
    assert not _running(marker)
    assert list(temp.iterdir()) == []


def _running(marker: str) -> bool:
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if marker.encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
                return True
        except OSError:
            continue
    return False
