"""`verl-qwen35 relaunch RUN_DIR`: launch a run's exact resolved config again (its launch.yaml)."""

import argparse
from pathlib import Path

from verl_qwen35.cli.answers import answered
from verl_qwen35.run.launch_record import LAUNCH_FILE
from verl_qwen35.run.relaunch import relaunch

PROG = "verl-qwen35 relaunch"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", type=Path, help=f"a launched run's output directory (or its {LAUNCH_FILE})")
    args = parser.parse_args(argv)
    with answered(PROG):
        return relaunch(args.run_dir)
