"""Hydra's, OmegaConf's and YAML's errors as one line naming the key or file to change.

Hydra prints its own errors and exits 1 (`hydra/_internal/utils.py` run_and_report); the command
sets HYDRA_FULL_ERROR so that they propagate to `explain`. Anything `explain` does not recognise
is a bug and keeps its traceback.
"""

import difflib
from collections.abc import Iterator

import yaml
from hydra.errors import (
    ConfigCompositionException,
    HydraException,
    MissingConfigException,
    OverrideParseException,
)
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import (
    ConfigAttributeError,
    ConfigKeyError,
    InterpolationResolutionError,
    OmegaConfBaseException,
)

from verl_qwen35.config.choices import missing_choice
from verl_qwen35.config.schema import ACTOR, LAYOUT_FEEDS, PARALLEL_KEYS, REF
from verl_qwen35.errors import UserError

GRAMMAR = "https://hydra.cc/docs/advanced/override_grammar/basic/"


def unparsable(line: str, why: str) -> str:
    """An override Hydra's grammar cannot read, named with what to do."""
    hint = "quote the value: 'key=\"a value\"'" if any(c in line for c in " []{}()'\"") else ""
    if any(ord(c) > 127 for c in line):
        hint = "quote a value with non-ASCII characters: 'key=\"välue\"'"
    return f"cannot parse the override `{line}` ({why}); {hint + '; ' if hint else ''}see {GRAMMAR}"


def did_you_mean(cause: ConfigAttributeError | ConfigKeyError, value: object = None) -> str:
    """`Key 'x' is not in struct` as: no such key, the closest existing ones, and the `parallel.*` shorthand."""
    parent = cause.parent_node
    key = str(cause.key)
    full_key = cause.full_key or key
    prefix = full_key[: -len(key)] if full_key.endswith(key) else ""
    siblings = [str(k) for k in parent] if OmegaConf.is_dict(parent) else []
    close = difflib.get_close_matches(key, siblings, n=3, cutoff=0.6)
    where = f"under {prefix.rstrip('.')}" if prefix else "at the top level"
    message = f"{full_key}: no such key {where}"
    if OmegaConf.is_dict(parent) and key == parent.get("backend"):  # submit.slurm.chain for submit.chain
        message += f"; the options of {prefix.rstrip('.')}={key} sit directly under {prefix.rstrip('.')}"
        message += f" (write {prefix}<option>=...; options: {', '.join(sorted(siblings))})"
        return message
    if close:
        message += f"; did you mean {', '.join(f'`{prefix}{c}`' for c in close)}?"
        # The verl keys a `parallel.*` key feeds (checks/parity.py): the layout is set there, once.
        shorthand = PARALLEL_KEYS.get(close[0]) if prefix.rstrip(".") in (ACTOR, REF) else None
        shorthand = shorthand or LAYOUT_FEEDS.get(f"{prefix}{close[0]}")
        if shorthand:
            message += f" Set the layout with its shorthand {shorthand}" + (f"={value}" if value is not None else "")
            message += " (the verl keys follow it)."
    else:
        message += f" (keys there: {', '.join(sorted(siblings)[:12])}{', ...' if len(siblings) > 12 else ''})"
    return message + f" To add a new key on purpose, write +{full_key}=..."


def refusal(err: OmegaConfBaseException, value: object = None) -> str:
    """OmegaConf's refusal of one value as one line naming its key: a key that is not there, with the close ones."""
    if isinstance(err, ConfigAttributeError | ConfigKeyError) and err.parent_node is not None:
        return did_you_mean(err, value)
    return _omegaconf_message(err)


def _yaml_message(err: yaml.YAMLError) -> str:
    mark = getattr(err, "problem_mark", None) or getattr(err, "context_mark", None)
    problem = getattr(err, "problem", None) or str(err).splitlines()[0]
    if mark is None:
        return f"YAML error: {problem}"
    return f"{mark.name} line {mark.line + 1}, column {mark.column + 1}: YAML syntax error: {problem}"


def _omegaconf_message(err: OmegaConfBaseException, key: str | None = None) -> str:
    full_key = key or getattr(err, "full_key", None)
    text = str(err).split("\n    full_key:")[0].strip()
    if isinstance(err, InterpolationResolutionError) and "Environment variable" in text:
        name = text.split("Environment variable '")[-1].split("'")[0]
        return (
            f"{full_key}: reads the environment variable {name}, which is not set; export {name}=... "
            f"or set {full_key}=<value> on the command line"
        )
    return f"{full_key}: {text}" if full_key else text


def resolve_naming_key(cfg: DictConfig) -> None:
    """OmegaConf.resolve, but an interpolation that fails is named by its key (resolve alone names none)."""
    try:
        OmegaConf.resolve(cfg)
    except OmegaConfBaseException as err:
        if getattr(err, "full_key", None):
            raise
        raw = OmegaConf.to_container(cfg, resolve=False)
        failing: dict[str, tuple[str, OmegaConfBaseException]] = {}
        for key, text in _interpolated_keys(raw):
            try:
                OmegaConf.select(cfg, key, throw_on_resolution_failure=True)
            except OmegaConfBaseException as at_key:
                failing[key] = (text, at_key)
        # Name the key where the bad interpolation is written, not the keys that merely point at it.
        for key, (text, at_key) in failing.items():
            if not any(f"${{{other}}}" in text for other in failing):
                raise UserError(_omegaconf_message(at_key, key)) from None
        raise


def _interpolated_keys(tree: object, prefix: str = "") -> Iterator[tuple[str, str]]:
    if isinstance(tree, dict):
        for key, value in tree.items():
            yield from _interpolated_keys(value, f"{prefix}{key}.")
    elif isinstance(tree, list):
        for i, value in enumerate(tree):
            yield from _interpolated_keys(value, f"{prefix}{i}.")
    elif isinstance(tree, str) and "${" in tree:
        yield prefix.rstrip("."), tree


def explain(err: BaseException) -> str | None:
    """The one-line answer to a user mistake, or None for anything that is not one (a bug)."""
    if isinstance(err, UserError):
        return str(err)
    if isinstance(err, OverrideParseException):
        return unparsable(err.override, str(err).splitlines()[0])
    if isinstance(err, yaml.YAMLError):
        return _yaml_message(err)
    if isinstance(err, MissingConfigException):  # before its base class, ConfigCompositionException
        if err.missing_cfg_file and (ours := missing_choice(err.missing_cfg_file, err.options or ())):
            return ours
        return "\n".join(line for line in str(err).splitlines() if line.strip() and "provider=" not in line)
    if isinstance(err, ConfigCompositionException):
        cause = err.__cause__
        if isinstance(cause, ConfigAttributeError | ConfigKeyError) and cause.parent_node is not None:
            # Hydra's message ends "To append to your config use +KEY=VALUE": the value the user typed.
            typed = str(err).rsplit(f"+{cause.full_key}=", 1)
            return did_you_mean(cause, typed[1].strip() if len(typed) == 2 else None)
        if isinstance(cause, yaml.YAMLError):
            return _yaml_message(cause)
        if isinstance(cause, OmegaConfBaseException):
            return f"{' '.join(str(err).split())} {_omegaconf_message(cause)}"
        return " ".join(str(err).split())
    if isinstance(err, OmegaConfBaseException):
        return _omegaconf_message(err)
    if isinstance(err, HydraException):
        return " ".join(str(err).split())
    if isinstance(err, OSError) and err.filename:  # an output or config path this machine refuses
        return f"{err.filename}: {err.strerror or err}; choose another path (e.g. hydra.run.dir=...)"
    return None
