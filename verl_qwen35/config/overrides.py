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
