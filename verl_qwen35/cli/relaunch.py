"""`verl-qwen35 relaunch RUN_DIR`: launch a run's exact resolved config again (its launch.yaml)."""

from pathlib import Path

from verl_qwen35.cli.answers import answered
from verl_qwen35.records.launch import LAUNCH_FILE
from verl_qwen35.run.relaunch import relaunch
from verl_qwen35.terminal import SafeParser

PROG = "verl-qwen35 relaunch"


def main(argv: list[str] | None = None) -> int:
    parser = SafeParser(prog=PROG, description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", type=Path, help=f"a launched run's output directory (or its {LAUNCH_FILE})")
    parser.add_argument(
        "--trust-shared",
        action="store_true",
        help="relaunch a record (or run directory) that other users can write, with a warning instead of a refusal",
    )
    parser.add_argument(
        "--digest",
        metavar="SHA256",
        help="refuse the record unless its sha256 is this (the Slurm job passes the one pinned at submission)",
    )
    args = parser.parse_args(argv)
    with answered(PROG):
        return relaunch(args.run_dir, trust_shared=args.trust_shared, expected_digest=args.digest)
