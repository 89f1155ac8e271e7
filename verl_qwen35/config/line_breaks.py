"""A value holding a line break is refused, naming its key, before anything is written from it.

Every file the package writes from a value writes it as data (YAML, JSON, a shell word quoted), but a line
break is where a line-based reader (a YAML comment, a shell script's comment, a log, a pasted command, a
terminal) can be made to see two lines where one was meant: a value of `model.name` or `trainer.experiment_name`
with a newline could end a comment in a layout file `plan` writes and start a key of its own. No setting of
verl or of this package needs one, but a chat template (a Jinja text, multi-line by nature), so every other
string value of the config, from the command line, a `--config-dir` file or an imported script, is refused
with one (line feed, carriage return, vertical tab, form feed, the file, group and record separators, NEL,
and Unicode's line and paragraph separators: what Python's `str.splitlines` splits on).
"""

import re
from collections.abc import Iterator, Sequence
from typing import Any

from hydra.core.override_parser.types import ChoiceSweep, Override, QuotedString
from omegaconf import DictConfig, OmegaConf

from verl_qwen35.errors import UserError

LINE_BREAK = re.compile("[\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029]")
# The keys whose value is a multi-line text by nature (verl's workers/config/model.py HFModelConfig).
MULTI_LINE = ("custom_chat_template",)


def _multi_line(path: str) -> bool:
    return path.rsplit(".", 1)[-1] in MULTI_LINE


def line_break_keys(value: Any, path: str = "") -> Iterator[str]:
    """The keys (dotted, `[i]` for list items) below `path` whose string value or key holds a line break."""
    if isinstance(value, QuotedString):  # a sweep's quoted choice, as Hydra's grammar keeps it
        value = value.text
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(key, str) and LINE_BREAK.search(key):
                yield f"{path}.{key!r}" if path else repr(key)
                continue
            yield from line_break_keys(item, f"{path}.{key}" if path else str(key))
    elif isinstance(value, list | tuple):
        for i, item in enumerate(value):
            yield from line_break_keys(item, f"{path}[{i}]")
    elif isinstance(value, str) and LINE_BREAK.search(value) and not _multi_line(path):
        yield path


def refusal(key: str) -> UserError:
    return UserError(
        f"{key}: its value holds a line break; no setting here takes one (files written from values, logs and "
        f"pasted commands read lines). Write the value on one line (a list as [a,b], not one item a line)"
    )


def check_override_line_breaks(overrides: Sequence[Override]) -> None:
    """Each override's value (a sweep's values too), before Hydra writes .hydra/overrides.yaml."""
    for override in overrides:
        if override.is_delete() or override.value_type is None:
            continue
        given = override.value()
        key = override.key_or_group  # a sweep's choices each; its range or interval holds numbers, a glob names keys
        for value in given.list if isinstance(given, ChoiceSweep) else [given]:
            for found in line_break_keys(value, key):
                raise refusal(found)


def check_line_breaks(cfg: DictConfig, leave_out: Sequence[str] = ("hydra",)) -> None:
    """Every value of a composed config, as written (nothing resolved), but the top-level `leave_out` nodes."""
    raw = OmegaConf.to_container(cfg, resolve=False)
    for key in line_break_keys({k: v for k, v in raw.items() if k not in leave_out}):
        raise refusal(key)
