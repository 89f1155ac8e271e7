"""`verl-qwen35 diff A B`: compare two configs (override sets or YAML files) key by key."""

from collections.abc import Sequence

from verl_qwen35.cli.answers import answered
from verl_qwen35.review.diff import FORMATS, compare_sides, load, mismatches
from verl_qwen35.terminal import SafeParser, say

PROG = "verl-qwen35 diff"


def main(argv: Sequence[str] | None = None) -> int:
    parser = SafeParser(prog=PROG, description=__doc__.splitlines()[0])
    parser.add_argument("a", help='override set, e.g. "device=gpu model=122b", or a YAML file')
    parser.add_argument("b", help="the same, for the other side")
    parser.add_argument("--format", choices=sorted(FORMATS), default="text")
    parser.add_argument("--ignore", action="append", default=[], metavar="GLOB", help="leave out keys matching GLOB")
    args = parser.parse_args(argv)
    with answered(PROG):  # composition, YAML and interpolation errors: one message, exit 2
        diff, a, b = compare_sides(load(args.a), load(args.b), args.ignore)
        notes = {side: found for side, cfg in (("A", a), ("B", b)) if (found := mismatches(cfg))}
        say(FORMATS[args.format](diff, (args.a, args.b), notes), flush=True)
    return 1 if diff else 0
