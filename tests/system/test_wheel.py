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
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import pytest

from verl_qwen35.cli.main import SUBCOMMANDS

REPO = Path(__file__).resolve().parents[2]
CONF = REPO / "conf"

# Builds the wheel (hatchling in an isolated env) and installs it: ~5-15 s. Still in the default run.
pytestmark = pytest.mark.slow

_DRY_RUN_OK = re.compile(r"^verdict\s+OK\b.*nothing launched", re.MULTILINE)

_PROBE = """
import json, sys
import verl_qwen35
from verl_qwen35.installed import conf_dir, verl_config_dir
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
    package = [
        p.relative_to(REPO).as_posix()
        for p in (REPO / "verl_qwen35").rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    ]
    assert not [f for f in package if f not in names], "every module and data file of the package ships"
    assert "verl_qwen35/run/submit/job.sbatch" in names  # the body of every submit=slurm script
    assert {"verl_qwen35/data/matrix/gpu.yaml", "verl_qwen35/data/matrix/npu.yaml"} <= names  # the doctor's data
    assert "verl_qwen35/data/upstream/megatron_core_0.16.json" in names  # megatron-core's fields, for the checks
    # The one Hydra plugin: the sweeper that refuses a job Hydra cannot compose and runs the others.
    assert {n for n in names if n.startswith("hydra_plugins/") and n.endswith(".py")} == {
        "hydra_plugins/verl_qwen35_sweeper/__init__.py",
        "hydra_plugins/verl_qwen35_sweeper/job_sweeper.py",
    }
    dist_info = next(n for n in names if n.endswith(".dist-info/METADATA")).rsplit("/", 1)[0]
    entry_points = zipfile.ZipFile(wheel).read(f"{dist_info}/entry_points.txt").decode()
    assert [line for line in entry_points.splitlines() if "=" in line] == ["verl-qwen35 = verl_qwen35.__main__:entry"]
    requires = [
        line.split(":", 1)[1].strip()
        for line in zipfile.ZipFile(wheel).read(f"{dist_info}/METADATA").decode().splitlines()
        if line.startswith("Requires-Dist:") and "extra ==" not in line
    ]
    assert {r.split(">")[0].split("<")[0].split("=")[0].strip() for r in requires} == {
        "hydra-core",
        "omegaconf",
        "packaging",
        "tabulate",
    }


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


def test_installed_wheel_sweeps_with_its_own_sweeper(new_venv: tuple[Path, Path], outside: Path) -> None:
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
    assert "_target_: hydra_plugins.verl_qwen35_sweeper.job_sweeper.JobSweeper" in (sweep / "multirun.yaml").read_text()


# ---- The README's config-only install: no torch, Ray or vLLM, verl's YAML present -----------------

_RUNTIME = {"torch", "ray", "vllm"}
_LIGHT_LIMIT_MB = 150


@dataclass(frozen=True)
class Light:
    bin: Path
    before_verl: subprocess.CompletedProcess[str]  # a dry run before verl was installed


def _light_run(light: Light, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """`verl-qwen35 ARGS` (the console script) in the config-only venv."""
    return subprocess.run(
        [str(light.bin / "verl-qwen35"), *args], cwd=cwd, env=_env(), capture_output=True, text=True, timeout=120
    )


def _light_module(light: Light, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """`python -m verl_qwen35 ARGS` in the config-only venv."""
    return subprocess.run(
        [str(light.bin / "python"), "-m", "verl_qwen35", *args],
        cwd=cwd,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture(scope="module")
def light(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Light:
    """A new venv with the package and its dependencies, then verl without its own (README, Set up)."""
    root = tmp_path_factory.mktemp("light") / "venv"
    venv.EnvBuilder(with_pip=False).create(root)
    pip = [sys.executable, "-m", "pip", "--python", root / "bin" / "python", "install", "--quiet"]
    _run([*pip, wheel], cwd=root, timeout=300)
    before = subprocess.run(
        [str(root / "bin" / "verl-qwen35"), "dry_run=true"], cwd=root, env=_env(), capture_output=True, text=True
    )
    # The verl this suite runs against, as the README's `pip install --no-deps 'verl==0.9.1'` does.
    _run([*pip, "--no-deps", f"verl=={metadata.version('verl')}"], cwd=root, timeout=300)
    return Light(root / "bin", before)


def test_light_install_has_verl_configs_and_no_runtime(light: Light, outside: Path) -> None:
    listed = _run([sys.executable, "-m", "pip", "--python", light.bin / "python", "list", "--format=json"], cwd=outside)
    names = {p["name"].lower() for p in json.loads(listed.stdout)}
    assert {"verl", "verl-qwen35", "hydra-core", "omegaconf", "packaging", "tabulate"} <= names
    assert not names & _RUNTIME, f"a config-only install holds {names & _RUNTIME}"
    probe = _run([light.bin / "python", "-c", _PROBE], cwd=outside)
    assert (Path(json.loads(probe.stdout)["verl_config"]) / "ppo_trainer.yaml").is_file()
    size = sum(f.stat().st_size for f in light.bin.parent.rglob("*") if f.is_file() and not f.is_symlink())
    assert size < _LIGHT_LIMIT_MB * 2**20, f"config-only venv is {size / 2**20:.0f} MB"


def test_light_install_without_verl_says_what_to_install(light: Light) -> None:
    assert light.before_verl.returncode == 2
    assert "Traceback" not in light.before_verl.stderr
    assert "verl is not installed" in light.before_verl.stderr
    assert "pip install --no-deps 'verl==" in light.before_verl.stderr and "[launch]" in light.before_verl.stderr


def test_light_install_dry_runs_prints_sweeps_and_diffs(light: Light, tmp_path: Path) -> None:
    done = _light_run(light, "device=npu", "model=122b", "dry_run=true", cwd=tmp_path)
    assert done.returncode == 0 and _DRY_RUN_OK.search(done.stdout), done.stdout + done.stderr
    assert "tp=2 pp=4" in done.stdout
    printed = _light_run(light, "device=npu", "model=122b", "--cfg", "job", "--resolve", "-p", "parallel", cwd=tmp_path)
    assert printed.returncode == 0 and "devices_per_node: 16" in printed.stdout, printed.stderr
    sweep = _light_run(light, "-m", "device=npu,gpu", "model=35b", "dry_run=true", cwd=tmp_path)
    assert sweep.returncode == 0 and "2 valid, 0 refused" in sweep.stdout, sweep.stdout + sweep.stderr
    diff = _light_run(light, "diff", "device=gpu model=122b", "device=npu model=122b", cwd=tmp_path)
    assert diff.returncode == 1 and "trainer.n_gpus_per_node" in diff.stdout, diff.stderr
    presets = _light_run(light, "--presets", cwd=tmp_path)
    assert presets.returncode == 0 and "122b_npu" in presets.stdout


def test_light_install_checks_data_files_it_cannot_read(light: Light, tmp_path: Path) -> None:
    import pandas as pd

    data = tmp_path / "train.parquet"
    pd.DataFrame({"prompt": ["x"]}).to_parquet(data)
    done = _light_run(light, "dry_run=true", f"data.train_files={data}", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert f"WARNING [data.train_files] pyarrow is not installed here: the columns of {data} are not checked" in (
        done.stderr
    )


@pytest.mark.parametrize("mode", ["full", "false"])
def test_light_install_refuses_what_needs_verl_runtime(light: Light, tmp_path: Path, mode: str) -> None:
    done = _light_run(light, "device=gpu", "model=35b", f"dry_run={mode}", cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    refusal = next(line for line in done.stderr.splitlines() if line.startswith("ERROR   [dry_run]"))
    assert "config-only install" in refusal and "[launch]'" in refusal and "dry_run=true" in refusal
    assert not list(tmp_path.rglob("launch.yaml"))


def test_readme_config_only_command_is_the_one_tested_here() -> None:
    """The README's first set-up command is this file's light install: the package, then verl alone."""
    from verl_qwen35.installed import CONFIG_ONLY_VERL

    first = next(line for line in (REPO / "README.md").read_text().splitlines() if "-m venv" in line)
    assert f"pip install -e . && {CONFIG_ONLY_VERL} && verl-qwen35 " in first and "dry_run=true" in first


@pytest.mark.parametrize("subcommand", sorted(SUBCOMMANDS))
def test_light_install_runs_every_subcommand_without_the_runtime(light: Light, tmp_path: Path, subcommand: str) -> None:
    """Each subcommand imports and answers --help without torch, Ray or verl's runtime, in both forms."""
    for done in (
        _light_run(light, subcommand, "--help", cwd=tmp_path),
        _light_module(light, subcommand, "--help", cwd=tmp_path),
    ):
        assert done.returncode == 0 and "Traceback" not in done.stderr, f"{subcommand}: {done.stderr}"
        assert "usage:" in done.stdout, done.stdout


def test_light_install_lists_every_subcommand_in_its_help(light: Light, tmp_path: Path) -> None:
    done = _light_run(light, "--help", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert [name for name in SUBCOMMANDS if f"verl-qwen35 {name} " not in done.stdout] == []


def test_light_install_data_command_names_its_missing_client(light: Light, tmp_path: Path) -> None:
    done = _light_module(light, "data", "--out", str(tmp_path / "geo3k"), cwd=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert "huggingface_hub is not installed here: pip install huggingface_hub" in done.stderr
    assert not (tmp_path / "geo3k").exists(), "a failed fetch leaves nothing behind"


def test_light_install_estimates_memory_and_plans_layouts(light: Light, tmp_path: Path) -> None:
    estimate = _light_module(light, "estimate", "device=gpu", "model=35b", cwd=tmp_path)
    assert estimate.returncode == 0, estimate.stderr
    assert estimate.stdout.startswith("params ") and "fits: yes" in estimate.stdout
    as_json = _light_run(light, "estimate", "device=gpu", "model=35b", "--json", cwd=tmp_path)
    assert as_json.returncode == 0 and json.loads(as_json.stdout)["fits"] is True, as_json.stderr
    layouts = _light_module(light, "plan", "device=gpu", "model=35b", "--top", "2", cwd=tmp_path)
    assert layouts.returncode == 0, layouts.stderr
    # The config's own layout: a row of its own, or "current: the config's own layout is rank N" when listed.
    assert "\n1 " in layouts.stdout and "\ncurrent" in layouts.stdout
