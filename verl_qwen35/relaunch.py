"""`python -m verl_qwen35.relaunch RUN_DIR`: launch a run's exact resolved config again.

The run directory's launch.yaml is the resolved config that was launched, so later edits
to conf/ do not change it; the same checkpoint directory means verl resumes from it.
"""

import argparse
import sys
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from verl_qwen35.app import LAUNCH_FILE, launch_now
from verl_qwen35.checks import preflight
from verl_qwen35.checks.machine import launch_problems
from verl_qwen35.install import runtime_problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m verl_qwen35.relaunch", description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", type=Path, help="a launched run's output directory (holds launch.yaml)")
    args = parser.parse_args(argv)
    path = args.run_dir / LAUNCH_FILE
    if not path.is_file():
        print(f"relaunch: {path} does not exist (only launched runs write it)", file=sys.stderr)
        return 2
    cfg = OmegaConf.load(path)
    assert isinstance(cfg, DictConfig)
    errors = [p for p in preflight(cfg) + runtime_problems("launch") if p.level == "error"]
    errors = errors or [p for p in launch_problems(cfg) if p.level == "error"]
    for problem in errors:
        print(problem, file=sys.stderr)
    if errors:
        return 2
    launch_now(cfg)
    return 0


if __name__ == "__main__":
    sys.exit(main())
