"""A problem found before launch: which keys to change, at what level, and why."""

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

Level = Literal["error", "warning"]


@dataclass(frozen=True)
class Problem:
    level: Level
    keys: tuple[str, ...]
    message: str

    def __str__(self) -> str:
        return f"{self.level.upper():7} [{', '.join(self.keys)}] {self.message}"


def error(keys: str | tuple[str, ...], message: str) -> Problem:
    return Problem("error", (keys,) if isinstance(keys, str) else keys, message)


def warning(keys: str | tuple[str, ...], message: str) -> Problem:
    return Problem("warning", (keys,) if isinstance(keys, str) else keys, message)


def one_of(name: str, values: Sequence[object], why_none: str) -> str:
    """`NAME may be one of [..]`, or, when nothing fits, that nothing does and why: never an empty list."""
    if values:
        return f"{name} may be one of {list(values)}"
    return f"no {name} fits: {why_none}"
