"""Shared fixtures: the six shipped combinations, the reference layout table, and `cli` (the entrypoint
run in-process as a user would, for the fault tests)."""

import logging
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from hydra.core.hydra_config import HydraConfig

from verl_qwen35 import __main__ as entrypoint

COMBOS = [("35b", "gpu"), ("35b", "npu"), ("122b", "gpu"), ("122b", "npu"), ("397b", "gpu"), ("397b", "npu")]

# ../shared/reference/README.md, "Parallel layouts in use":
# (nnodes, devices_per_node, tp, pp, cp, ep, etp, rollout tp, rollout dp, rollout ep)
REFERENCE_LAYOUTS = {
    ("35b", "gpu"): (1, 8, 2, 1, 1, 8, 1, 8, 1, 1),
    ("35b", "npu"): (1, 16, 2, 2, 1, 8, 1, 8, 1, 1),
    ("122b", "gpu"): (4, 8, 2, 2, 1, 8, 1, 8, 1, 1),
    ("122b", "npu"): (4, 16, 2, 4, 1, 16, 1, 16, 1, 1),
    ("397b", "gpu"): (16, 8, 2, 2, 1, 64, 1, 8, 16, 128),
    ("397b", "npu"): (16, 16, 2, 4, 1, 64, 1, 16, 16, 256),
}


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
            entrypoint.main()
            code = 0
        except SystemExit as stop:
            code = exit_code(stop)
        captured = capfd.readouterr()
        return Outcome(code, captured.out, captured.err)

    # Hydra points logging handlers at this test's captured streams; later tests must not log into them.
    saved = {name: logging.getLogger(name).handlers[:] for name in (None, "hydra")}
    yield run
    for name, handlers in saved.items():
        logging.getLogger(name).handlers[:] = handlers
