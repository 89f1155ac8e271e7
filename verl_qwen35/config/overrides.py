"""Overrides read with Hydra's own grammar (its public parser), a line it cannot read named with what to do."""

from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.override_parser.types import Override
from hydra.errors import HydraException, OverrideParseException

from verl_qwen35.config.errors import unparsable
from verl_qwen35.errors import UserError


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
            raise UserError(unparsable(line, str(err).splitlines()[0])) from None
    raise AssertionError("unreachable: the batch failed but every override parsed")
