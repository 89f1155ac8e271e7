"""The built wheel carries conf/ inside the package and runs from a venv that never sees this source tree.

The wheel goes into a new venv with --no-deps; verl, hydra and omegaconf come from the running
interpreter's site-packages, made visible by a .pth line. A directory added by a .pth line does not
get its own .pth files processed, so the editable install's .pth (which points at this checkout) stays
out: every check below asserts that the code and conf/ used are the wheel's.
"""

import json
import os
import re
import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
CONF = REPO / "conf"

# Builds the wheel (hatchling in an isolated env) and installs it: ~5-15 s. Still in the default run.
pytestmark = pytest.mark.slow

_DRY_RUN_OK = re.compile(r"^verdict\s+OK\b.*nothing launched", re.MULTILINE)

_PROBE = """
import json, sys
import verl_qwen35
from verl_qwen35.paths import conf_dir, verl_config_dir
print(json.dumps({"package": verl_qwen35.__file__, "conf": str(conf_dir()),
                  "verl_config": str(verl_config_dir()), "sys_path": sys.path}))
"""


def _env() -> dict[str, str]:
    """This environment without anything that would put the source tree or another venv on sys.path."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    env["PYTHONNOUSERSITE"] = "1"
    return env


def _run(cmd: list[str | Path], cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([str(c) for c in cmd], cwd=cwd, env=_env(), capture_output=True, text=True, timeout=timeout)
    command = " ".join(map(str, cmd))
    assert done.returncode == 0, (
        f"{command} exited {done.returncode}\n--- stdout\n{done.stdout}\n--- stderr\n{done.stderr}"
    )
    return done


@pytest.fixture(scope="module")
def outside(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A working directory outside the source tree."""
    path = tmp_path_factory.mktemp("outside")
    assert not path.resolve().is_relative_to(REPO)
    return path


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    try:
        import build  # noqa: F401
    except ImportError:
        pytest.fail("`build` is missing: it is in the test extra, pip install -e '.[test]'")
    out = tmp_path_factory.mktemp("dist")
    _run([sys.executable, "-m", "build", "--wheel", "--outdir", out, REPO], cwd=out, timeout=300)
    wheels = sorted(out.glob("verl_qwen35-*.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0]


@pytest.fixture(scope="module")
def new_venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(bin dir, site-packages) of a new venv holding only the wheel, plus our site-packages via .pth."""
    root = tmp_path_factory.mktemp("venv") / "venv"
    venv.EnvBuilder(with_pip=False).create(root)
    python = root / "bin" / "python"
    purelib = _run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], cwd=root)
    site = Path(purelib.stdout.strip())
    _run(
        [sys.executable, "-m", "pip", "--python", python, "install", "--quiet", "--no-deps", "--no-index", wheel],
        cwd=root,
    )
    ours = dict.fromkeys(sysconfig.get_paths()[key] for key in ("purelib", "platlib"))
    assert all(Path(p).resolve() != REPO for p in ours)
    (site / "_outer_site_packages.pth").write_text("".join(f"{p}\n" for p in ours))
    return root / "bin", site


def test_wheel_holds_every_conf_file(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "verl_qwen35/conf/config.yaml" in names
    conf_files = sorted(p.relative_to(CONF).as_posix() for p in CONF.rglob("*.yaml"))
    groups = {Path(f).parent.as_posix() for f in conf_files} - {"."}
    assert {"device", "model", "parallel", "tuning", "verl_schema", "submit"} <= groups
    missing = [f for f in conf_files if f"verl_qwen35/conf/{f}" not in names]
    assert not missing, f"conf files missing from {wheel.name}: {missing}"
    modules = sorted(p.relative_to(REPO).as_posix() for p in (REPO / "verl_qwen35").rglob("*.py"))
    assert not [m for m in modules if m not in names]
    assert "verl_qwen35/submit/job.sbatch" in names  # the body of every submit=slurm script
    assert "hydra_plugins/verl_qwen35_sweeper/__init__.py" in names  # the sweeper conf/config.yaml selects
    assert {"verl_qwen35/matrix/gpu.yaml", "verl_qwen35/matrix/npu.yaml"} <= names  # the doctor's version data
    entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    assert "verl-qwen35 = verl_qwen35.__main__:main" in zipfile.ZipFile(wheel).read(entry_points).decode()


def test_installed_wheel_uses_its_own_conf(new_venv: tuple[Path, Path], outside: Path) -> None:
    bin_dir, site = new_venv
    probe = json.loads(_run([bin_dir / "python", "-c", _PROBE], cwd=outside).stdout)
    assert Path(probe["package"]).resolve() == (site / "verl_qwen35" / "__init__.py").resolve()
    assert Path(probe["conf"]).resolve() == (site / "verl_qwen35" / "conf").resolve()
    assert not Path(probe["conf"]).resolve().is_relative_to(REPO)
    # The editable install's .pth was not processed: the checkout is nowhere on sys.path.
    assert REPO not in {(outside / p).resolve() for p in probe["sys_path"]}, probe["sys_path"]
    # verl itself came through the .pth line.
    assert Path(probe["verl_config"]).is_relative_to(Path(sysconfig.get_paths()["purelib"]))


def test_installed_wheel_dry_runs(new_venv: tuple[Path, Path], outside: Path) -> None:
    bin_dir, _ = new_venv
    out = _run(
        [bin_dir / "python", "-m", "verl_qwen35", "device=npu", "model=122b", "dry_run=true"], cwd=outside
    ).stdout
    assert "tp=2 pp=4" in out, out
    assert _DRY_RUN_OK.search(out), out


def test_console_script_runs(new_venv: tuple[Path, Path], outside: Path) -> None:
    bin_dir, _ = new_venv
    script = bin_dir / "verl-qwen35"
    assert script.read_text().startswith(f"#!{bin_dir / 'python'}")
    out = _run([script, "device=gpu", "model=35b", "dry_run=true"], cwd=outside).stdout
    assert "35b" in out, out
    assert _DRY_RUN_OK.search(out), out


def test_installed_wheel_sweeps_with_its_sweeper(new_venv: tuple[Path, Path], outside: Path) -> None:
    bin_dir, _ = new_venv
    sweep = outside / "wheel_sweep"
    out = _run(
        [
            bin_dir / "python",
            "-m",
            "verl_qwen35",
            "-m",
            "device=gpu",
            "model=35b",
            "parallel.tp=2,4",
            "dry_run=true",
            f"hydra.sweep.dir={sweep}",
        ],
        cwd=outside,
    ).stdout
    assert "sweep: 2 job(s), 2 valid, 0 refused" in out, out
    assert "ComposeOnceSweeper" in (sweep / "multirun.yaml").read_text()
