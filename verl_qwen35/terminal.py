"""What reaches a terminal: any text that may hold someone else's characters, shown as characters, never obeyed.

A file, an override value, an imported script's output, a log line `report` reads or an error quoting one of
them may hold an escape sequence (ESC [ ... : recolour, move the cursor, rewrite the window title, on some
terminals answer back into the input) or a carriage return that overwrites what was printed before it on the
line (a refusal printed as `OK`). So every print path of such text goes through `safe`: each control character
(C0 but newline and tab, DEL, C1) and each character that reorders what is shown (the bidirectional overrides
and isolates of "Trojan Source", CVE-2021-42574) is written as its escape (`\\x1b`, `\\r`, `\\u202e`), so the
reader sees that it was there. `say` is `print` through `safe`; `SafeFormatter` is the same for the log lines
Hydra and the job's logging print.
"""

import argparse
import logging
import re
import sys
from typing import Any, NoReturn, TextIO

# C0 controls but \t and \n, DEL, C1 controls, and the characters that reorder or hide text: the bidi
# embeddings, overrides and isolates, the marks, and the line and paragraph separators.
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_NAMED = {"\r": "\\r", "\x0b": "\\v", "\x0c": "\\f", "\b": "\\b", "\a": "\\a", "\x00": "\\0"}


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    if char in _NAMED:
        return _NAMED[char]
    return f"\\x{ord(char):02x}" if ord(char) < 0x100 else f"\\u{ord(char):04x}"


def safe(text: object) -> str:
    """`text` as a terminal shows it harmlessly: every control character and reordering mark escaped; newlines
    and tabs kept (they move to the next line or column, nothing else)."""
    shown = text if isinstance(text, str) else str(text)
    return _UNSAFE.sub(_escape, shown) if _UNSAFE.search(shown) else shown


def one_line(text: object) -> str:
    """`safe`, with newlines and tabs escaped too: a value quoted inside a line stays on that line."""
    return safe(text).replace("\n", "\\n").replace("\t", "\\t")


def say(*values: Any, sep: str = " ", end: str = "\n", file: TextIO | None = None, flush: bool = False) -> None:
    """`print`, each value made `safe`."""
    print(*(safe(v) for v in values), sep=sep, end=end, file=file if file is not None else sys.stdout, flush=flush)


class SafeFormatter(logging.Formatter):
    """A log line (its message, arguments and traceback) made `safe` after formatting."""

    def format(self, record: logging.LogRecord) -> str:
        return safe(super().format(record))


class SafeParser(argparse.ArgumentParser):
    """argparse's parser, its error message (which quotes the argument given) made `safe`."""

    def exit(self, status: int = 0, message: str | None = None) -> NoReturn:
        super().exit(status, safe(message) if message else None)
