"""The command line as Hydra reads it: its own argparse parser for flags, its own grammar for overrides.

Parsed once, before Hydra runs, so that a bad override is answered with one message and
so that the checks before Hydra (choices, secrets, --config-dir files) see real Override
objects instead of hand-split strings.
"""

import argparse
from dataclasses import dataclass
from pathlib import Path

from hydra._internal.utils import get_args_parser
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.override_parser.types import Override
from hydra.errors import HydraException, OverrideParseException

from verl_qwen35.errors import GRAMMAR, UserError

INFO_FLAGS = ("--info", "-i")


@dataclass
class CommandLine:
    flags: list[str]  # Hydra's flags, rebuilt from what its parser read
    overrides: list[Override]
    args: argparse.Namespace

    @property
    def config_dirs(self) -> list[Path]:
        return [Path(self.args.config_dir)] if self.args.config_dir else []

    @property
    def multirun(self) -> bool:
        return bool(self.args.multirun)

    def argv(self) -> list[str]:
        """What Hydra's parser gets back: the flags, then every override as typed."""
        return [*self.flags, *(o.input_line for o in self.overrides if o.input_line)]


def _bare_info(argv: list[str], choices: list[str]) -> list[str]:
    """`--info device=npu` means bare --info (show all) followed by an override, as Hydra's docs use it."""
    out = []
    for i, arg in enumerate(argv):
        following = argv[i + 1] if i + 1 < len(argv) else None
        out.append("--info=all" if arg in INFO_FLAGS and following is not None and following not in choices else arg)
    return out


def _flags(parser: argparse.ArgumentParser, args: argparse.Namespace) -> list[str]:
    """The optional arguments Hydra's parser read, written back in their long form."""
    flags = []
    for action in parser._actions:
        if not action.option_strings or action.dest in ("help", "version"):
            continue
        value = getattr(args, action.dest)
        if value == action.default:
            continue
        name = max(action.option_strings, key=len)
        flags.append(name if isinstance(action, argparse._StoreTrueAction) else f"{name}={value}")
    if args.help:
        flags.insert(0, "--help")
    return flags


def parse_overrides(lines: list[str]) -> list[Override]:
    """Hydra's own override grammar; a line it cannot read is named with what to do."""
    parser = OverridesParser.create()
    try:
        return parser.parse_overrides(lines)
    except OverrideParseException:
        pass
    for line in lines:  # name the first line it cannot read
        try:
            parser.parse_override(line)
        except HydraException as err:  # parse_override raises the base class
            why = str(err).splitlines()[0]
            hint = "quote the value: 'key=\"a value\"'" if any(c in line for c in " []{}()'\"") else ""
            if any(ord(c) > 127 for c in line):
                hint = "quote a value with non-ASCII characters: 'key=\"välue\"'"
            raise UserError(
                f"cannot parse the override `{line}` ({why}); {hint + '; ' if hint else ''}see {GRAMMAR}"
            ) from None
    raise AssertionError("unreachable: the batch failed but every override parsed")


def parse_command_line(argv: list[str]) -> CommandLine:
    parser = get_args_parser()
    parser.prog = "python -m verl_qwen35"
    info = next(a for a in parser._actions if a.dest == "info")
    # Intermixed: overrides may come before and after flags (`device=npu --cfg job model=122b`).
    args = parser.parse_intermixed_args(_bare_info(argv, list(info.choices or ())))
    return CommandLine(flags=_flags(parser, args), overrides=parse_overrides(args.overrides), args=args)
