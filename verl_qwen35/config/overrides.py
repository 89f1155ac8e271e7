"""Overrides read with Hydra's own grammar (its public parser), a line it cannot read named with what to do, and
the overrides of our typed nodes checked against their schema all at once."""

from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.override_parser.types import Override
from hydra.errors import HydraException, OverrideParseException
from omegaconf import OmegaConf
from omegaconf.errors import OmegaConfBaseException

from verl_qwen35.config.errors import refusal, unparsable
from verl_qwen35.config.schema import NODES
from verl_qwen35.errors import UserError

MAX_DEPTH = 32  # brackets nested in one override value; verl's deepest key is 7 levels down
MAX_CHARS = 1 << 20  # one override line (the kernel caps an argument at 128 KiB; a file of overrides does not)
_OPEN, _CLOSE, _QUOTES = "[{(", "]})", "'\""


def check_bounds(lines: list[str]) -> None:
    """Refuse, before any parser sees it, an override nested deeper than MAX_DEPTH or longer than MAX_CHARS:
    Hydra's grammar (ANTLR) and OmegaConf recurse per level, so `x=[[[[...]]]]` 10,000 deep ends in a
    RecursionError traceback and a few hundred deep in a megabyte of error text. One linear scan a line."""
    for line in lines:
        if len(line) > MAX_CHARS:
            raise UserError(
                f"an override of {len(line):,} characters (`{line[:40]}...`): longer than any value "
                f"({MAX_CHARS:,}); move the value into a --config-dir file"
            )
        depth, quote, escaped = 0, "", False
        for char in line:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif quote:
                quote = "" if char == quote else quote
            elif char in _QUOTES:
                quote = char
            elif char in _OPEN:
                depth += 1
                if depth > MAX_DEPTH:
                    key = line.partition("=")[0][:80]
                    raise UserError(
                        f"{key}: its value nests brackets deeper than {MAX_DEPTH} levels, deeper than any config; "
                        "give a flatter value"
                    )
            elif char in _CLOSE:
                depth = max(0, depth - 1)


def parse_overrides(lines: list[str]) -> list[Override]:
    """Hydra's own override grammar; a line it cannot read is named with what to do."""
    check_bounds(lines)
    parser = OverridesParser.create()
    try:
        return parser.parse_overrides(lines)
    except OverrideParseException:
        pass
    for line in lines:  # name the first line it cannot read
        try:
            parser.parse_override(line)
        except HydraException as err:  # parse_override raises the base class
            raise UserError(unparsable(line, str(err).splitlines()[0])) from None
    raise AssertionError("unreachable: the batch failed but every override parsed")


def typed_override_errors(overrides: list[Override]) -> list[tuple[str, str]]:
    """(override, why) for each plain `node.key=value` of our typed nodes (config/schema.py NODES) that the node's
    schema refuses, by the same OmegaConf update Hydra applies; Hydra stops at the first, so a second would wait
    for the next try. Sweeps are left to the sweeper (a bad value there is its job's refusal), `+`/`~` and
    interpolations to Hydra."""
    found = []
    for override in overrides:
        node, _, leaf = override.key_or_group.partition(".")
        if node not in NODES or not leaf or override.is_sweep_override():
            continue
        if override.is_add() or override.is_force_add() or override.is_delete():
            continue
        value = override.value()
        if isinstance(value, str) and "${" in value:
            continue
        typed = OmegaConf.create({node: OmegaConf.structured(NODES[node])})  # its dict fields take new keys
        try:
            OmegaConf.update(typed, override.key_or_group, value, merge=True)
        except OmegaConfBaseException as err:
            found.append((override.input_line or override.key_or_group, refusal(err, value)))
    return found


def refused_together(reasons: list[str]) -> UserError:
    """Every refusal in one message, one line each, naming its key."""
    if len(reasons) == 1:
        return UserError(reasons[0])
    lines = "\n".join(f"  {line}" for line in reasons)
    return UserError(f"{len(reasons)} overrides do not fit the config:\n{lines}")
