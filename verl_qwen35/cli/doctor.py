"""`verl-qwen35 doctor [device=gpu|npu]`: is the software stack here fit to launch?

Lists every component the launch path needs with its installed and required versions and a
verdict, from the version matrix `verl_qwen35/data/matrix/<device>.yaml` (sources inside it).
Exit 0 when everything fits, 2 otherwise. Imports nothing it checks (see verl_qwen35.run.stack).
"""

import json
import sys
from dataclasses import asdict
from pathlib import Path

from tabulate import tabulate

from verl_qwen35.checks.known_issues import KnownIssue, installed_issues, known_issues, trigger_text
from verl_qwen35.checks.versions import rules_line
from verl_qwen35.cli.answers import answered
from verl_qwen35.data import MATRIX_DIR
from verl_qwen35.installed import VerlNotInstalled, detect_device
from verl_qwen35.run.stack import MatrixError, Stack, Verdict, installed_version, known_stacks, stack_verdicts
from verl_qwen35.terminal import SafeParser, say

DEVICES = sorted(p.stem for p in MATRIX_DIR.glob("*.yaml"))


def table(verdicts: list[Verdict]) -> str:
    rows = [
        (v.name, v.installed, v.required, ("ok" if v.ok else "FAIL") + (f": {v.note}" if v.note else ""))
        for v in verdicts
    ]
    return tabulate(rows, headers=("component", "installed", "required", "verdict"), tablefmt="plain")


def stacks_table(stacks: list[Stack]) -> str:
    """verl's pinned stacks side by side, with what is installed here."""
    names = list(dict.fromkeys(name for s in stacks for name in s.pins))
    rows = [(name, installed_version(name), *(s.pins.get(name, "-") for s in stacks)) for name in names]
    return tabulate(rows, headers=("component", "installed", *(s.name for s in stacks)), tablefmt="plain")


def issue_lines(found: list[tuple[KnownIssue, dict[str, str]]]) -> list[str]:
    """The known upstream issues the installed packages are in range of, each with what triggers it."""
    lines = []
    for issue, versions in found:
        stack = ", ".join(f"{n} {v}" for n, v in versions.items())
        lines.append(f"  {issue.id} ({issue.level}, {stack}): {issue.title}")
        lines.append(f"    when {trigger_text(issue)}; workaround: {issue.workaround} ({issue.link})")
    return lines


def rules_or_why_not(device: str) -> str:
    """The versions a dry run's rules follow here; none without verl (the verl row says what to install)."""
    try:
        return rules_line(device)
    except VerlNotInstalled:
        return "rules      none: verl is not installed here (the verl row says what to install)"


def main(argv: list[str] | None = None) -> int:
    parser = SafeParser(prog="verl-qwen35 doctor", description=__doc__.splitlines()[0])
    parser.add_argument("device", nargs="?", default=None, help="device=gpu|npu (detected when omitted)")
    parser.add_argument("--format", choices=("text", "json"), default="text")
    parser.add_argument("--json", dest="format", action="store_const", const="json", help="the same as --format json")
    parser.add_argument("--matrix", type=Path, help="a version matrix of your own instead of matrix/<device>.yaml")
    parser.add_argument(
        "--config-dir", type=Path, action="append", default=[], help="a directory whose known_issues.yaml adds entries"
    )
    args = parser.parse_args(argv)
    device = args.device.removeprefix("device=") if args.device else detect_device()
    if device not in DEVICES:
        say(f"doctor: device={device} is not one of {', '.join(DEVICES)}", file=sys.stderr)
        return 2
    matrix = args.matrix or MATRIX_DIR / f"{device}.yaml"
    if not matrix.is_file():
        say(f"doctor: --matrix {matrix} does not exist", file=sys.stderr)
        return 2
    try:
        verdicts = stack_verdicts(matrix)
        stacks = known_stacks(matrix)
    except MatrixError as err:
        say(f"doctor: --matrix {err}", file=sys.stderr)
        return 2
    failing = [v for v in verdicts if not v.ok]
    issues = installed_issues(known_issues(args.config_dir), device)  # a bad team file: exit 2 naming it
    if args.format == "json":
        shown = {"device": device, "ok": not failing, "components": [asdict(v) for v in verdicts]}
        shown["rules"] = rules_or_why_not(device)
        shown["known_issues"] = [
            {"id": i.id, "level": i.level, "link": i.link, "title": i.title, "installed": v, "when": trigger_text(i)}
            for i, v in issues
        ]
        say(json.dumps(shown | {"stacks": [asdict(s) for s in stacks]}, indent=2))
    else:
        say(f"device={device}; matrix {matrix}")
        say(table(verdicts))
        verdict = "ready to launch" if not failing else f"NOT ready: {', '.join(v.name for v in failing)}"
        say(rules_or_why_not(device))  # the versions a dry run's rules follow, as it prints them
        say(f"verdict: {verdict}")
        if issues:  # said, not failed: each bites only with the settings it names (the dry run checks those)
            say("\nknown upstream issues of the installed versions (the dry run checks their settings):")
            say("\n".join(issue_lines(issues)))
        if stacks:
            say("\nstacks verl pins (shown, not enforced):")
            say(stacks_table(stacks))
    return 2 if failing else 0


if __name__ == "__main__":
    with answered("verl-qwen35 doctor"):  # `| head` ends quietly
        code = main()
        sys.stdout.flush()
    sys.exit(code)
