"""A command imports what it uses: a user waits for every import before each dry run and `--cfg job`."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
HEAVY = ("pyarrow", "tabulate", "matplotlib", "packaging.requirements", "torch", "ray", "verl.")
RULES = ("verl_qwen35.checks.verdict", "verl_qwen35.planner", "verl_qwen35.run.job", "verl_qwen35.model")


def _imported(tmp_path: Path, *argv: str) -> set[str]:
    """The modules loaded once `verl-qwen35 ARGV` is done, in a fresh interpreter."""
    code = (
        "import sys\n"
        "from verl_qwen35.cli.main import main\n"
        f"sys.argv = ['verl-qwen35', *{list(argv)!r}]\n"
        "try:\n    main()\nexcept SystemExit as stop:\n    assert not stop.code, stop.code\n"
        "print('MODULES', ' '.join(sorted(sys.modules)))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return set(done.stdout.rsplit("MODULES ", 1)[1].split())


def _named(modules: set[str], prefixes: tuple[str, ...]) -> list[str]:
    return sorted(m for m in modules if m.startswith(prefixes) or f"{m}." in prefixes)


@pytest.mark.parametrize(
    ("argv", "absent"),
    [
        # no parquet file here (the preset's data is not prepared): nothing reads one, pyarrow stays out
        (("model=35b", "device=gpu", "dry_run=true"), HEAVY),
        # Hydra prints the config: no rule, planner or job module is needed for that
        (("model=35b", "device=gpu", "--cfg", "job", "--resolve"), HEAVY + RULES),
    ],
    ids=["dry-run", "cfg-job"],
)
def test_a_command_imports_no_module_it_does_not_use(tmp_path, argv, absent):
    assert _named(_imported(tmp_path, *argv), absent) == []
