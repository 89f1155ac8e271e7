"""Shared fixtures: the six shipped combinations, the reference layout table, and `cli` (the entrypoint
run in-process as a user would, for the fault tests)."""

import logging
import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest
from hydra.core.hydra_config import HydraConfig
from hypothesis import settings

from verl_qwen35.cli.main import main
from verl_qwen35.config.choices import presets

COMBOS = presets()

# ../shared/reference/README.md, "Parallel layouts in use":
# (nnodes, devices_per_node, tp, pp, cp, ep, etp, rollout tp, rollout dp, rollout ep)
REFERENCE_LAYOUTS = {
    ("35b", "gpu"): (1, 8, 2, 1, 1, 8, 1, 8, 1, 1),
    ("35b", "npu"): (1, 16, 2, 2, 1, 8, 1, 8, 1, 1),
    # Qwen3.6-35B-A3B: Qwen3.5-35B-A3B's architecture, its layouts (conf/parallel/36_35b_*.yaml).
    ("36_35b", "gpu"): (1, 8, 2, 1, 1, 8, 1, 8, 1, 1),
    ("36_35b", "npu"): (1, 16, 2, 2, 1, 8, 1, 8, 1, 1),
    ("122b", "gpu"): (4, 8, 2, 2, 1, 8, 1, 8, 1, 1),
    ("122b", "npu"): (4, 16, 2, 4, 1, 16, 1, 16, 1, 1),
    ("397b", "gpu"): (16, 8, 2, 2, 1, 64, 1, 8, 16, 128),
    ("397b", "npu"): (16, 16, 2, 4, 1, 64, 1, 16, 16, 256),
}


def pytest_configure(config: pytest.Config) -> None:
    """The suite runs under a home of its own: nothing it starts (Hydra, Ray, pip, verl's imports) writes
    into the user's ~/.cache or ~/.ray; the presets' $HOME/data/geo3k paths point there too."""
    home = Path(tempfile.mkdtemp(prefix="verl_qwen35_tests_home_"))
    os.environ["HOME"] = str(home)
    os.environ.pop("XDG_CACHE_HOME", None)
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The tiers are folders: tests/system/ (real Ray, Slurm stand-ins, the wheel) is marked `system`,
    so `pytest -m "not system"` runs the unit and integration tiers in a few minutes."""
    system = Path(__file__).resolve().parent / "system"
    for item in items:
        if system in Path(str(item.fspath)).resolve().parents:
            item.add_marker(pytest.mark.system)


@pytest.fixture(params=COMBOS, ids=lambda c: f"{c[0]}_{c[1]}")
def combo(request) -> tuple[str, str]:
    return request.param


@dataclass
class Outcome:
    code: int
    out: str
    err: str

    @property
    def said(self) -> str:
        return self.out + self.err


def exit_code(stop: SystemExit) -> int:
    if stop.code is None:
        return 0
    return stop.code if isinstance(stop.code, int) else 1


@pytest.fixture
def cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]):
    """`cli(*argv)` runs `python -m verl_qwen35 ARGV` in tmp_path; an uncaught exception fails the test."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("HYDRA_FULL_ERROR", raising=False)
    monkeypatch.setenv("RAY_ADDRESS", "local")
    # A Hydra run leaves its HydraConfig set; restore it so later tests see no Hydra run.
    monkeypatch.setattr(HydraConfig.instance(), "cfg", HydraConfig.instance().cfg)

    def run(*argv: str) -> Outcome:
        monkeypatch.setattr(sys, "argv", ["verl_qwen35", *argv])
        capfd.readouterr()
        try:
            code = main()
        except SystemExit as stop:
            code = exit_code(stop)
        captured = capfd.readouterr()
        return Outcome(code, captured.out, captured.err)

    # Hydra points logging handlers at this test's captured streams; later tests must not log into them.
    saved = {name: logging.getLogger(name).handlers[:] for name in (None, "hydra")}
    yield run
    for name, handlers in saved.items():
        logging.getLogger(name).handlers[:] = handlers


# Property tests draw the same examples on every run (and every machine): a rule that goes missing
# fails the same case each time instead of now and then. Nothing is read from or written to a database.
settings.register_profile("deterministic", derandomize=True, database=None, deadline=None, print_blob=True)
settings.load_profile("deterministic")


def _job_variable_names() -> frozenset[str]:
    """The variables the job environment sets or clears on any device or logger (conf/config.yaml, conf/device/*,
    conf/logger/*)."""
    from omegaconf import OmegaConf

    from verl_qwen35.installed import conf_dir

    names: set[str] = set()
    groups = [*sorted((conf_dir() / "device").glob("*.yaml")), *sorted((conf_dir() / "logger").glob("*.yaml"))]
    for path in [conf_dir() / "config.yaml", *groups]:
        env = OmegaConf.to_container(OmegaConf.load(path)).get("env") or {}
        names.update(env.get("set") or {}, env.get("unset") or [])
    return frozenset(names)


# What apply_env and the launch write into the driver's environment. (Other variables change when a
# library is first imported, e.g. verl/__init__.py and ray/_private/client_mode_hook.py set some.)
JOB_VARIABLES = _job_variable_names()


@pytest.fixture(autouse=True)
def environment_left_as_found():
    """Every test leaves the job's variables in os.environ as it found them: change them with
    monkeypatch (tests/environ.py `cleared` for ones that may be absent), never directly. A test
    that leaks fails here, and the environment is put back so later tests still start clean."""
    before = {k: os.environ.get(k) for k in JOB_VARIABLES}
    yield
    changed = sorted(k for k in JOB_VARIABLES if os.environ.get(k) != before[k])
    if changed:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        pytest.fail(f"this test changed environment variables and left them changed: {', '.join(changed)}")
