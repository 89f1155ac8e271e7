"""What torch, megatron-core and verl say while their own code judges the config, held back from the terminal.

Imported on CPU without Transformer Engine, Apex or a device, they warn as they load (fallbacks to Torch kernels,
engines not installed, deprecated defaults of their own) and log INFO lines: about this machine, not the run. The
real validators turn what matters into findings of the verdict; the rest is held back with the standard means
(`warnings.catch_warnings`, a `logging.Filter` on the console handlers), counted in one line, and kept in the
job's log file (Hydra's `<run dir>/<job>.log`). `VERL_QWEN35_VERBOSE=1` holds nothing back. A library's log record
at ERROR or above, and every record of this package, still reaches the terminal.
"""

import logging
import os
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from verl_qwen35.terminal import say

VERBOSE = "VERL_QWEN35_VERBOSE"
WARNINGS_LOGGER = "py.warnings"  # the logger `logging.captureWarnings` writes warnings to


class _ConsoleHold(logging.Filter):
    """Keeps a library's record below ERROR off a console handler; counts each record once."""

    def __init__(self) -> None:
        super().__init__()
        self.held: dict[int, logging.LogRecord] = {}  # by id: each record once (kept, so no id is reused)

    def filter(self, record: logging.LogRecord) -> bool:
        top = record.name.split(".")[0]
        if record.levelno >= logging.ERROR or top == "verl_qwen35":
            return True
        if record.name != WARNINGS_LOGGER:  # the warnings, written to the log file below, are counted apart
            self.held[id(record)] = record
        return False


def _console_handlers() -> list[logging.Handler]:
    """The root logger's handlers that write to a terminal stream (Hydra's `console`), and logging's last resort."""
    found = [h for h in logging.getLogger().handlers if isinstance(h, logging.StreamHandler) and not _is_file(h)]
    return [*found, logging.lastResort] if logging.lastResort is not None else found


def _is_file(handler: logging.Handler) -> bool:
    return hasattr(handler, "baseFilename")  # logging.FileHandler, run/job_log.py NoFollowFileHandler


def _log_files() -> list[str]:
    files = [str(h.baseFilename) for h in logging.getLogger().handlers if _is_file(h)]
    return [f for f in files if os.path.isfile(f)]  # not /dev/null


def _package(filename: str) -> str:
    """The top-level package a warning came from (`.../site-packages/megatron/core/x.py` -> megatron)."""
    parts = Path(filename).parts
    if "site-packages" in parts and parts.index("site-packages") + 1 < len(parts):
        return parts[parts.index("site-packages") + 1].removesuffix(".py")
    return ""


@contextmanager
def held_back() -> Iterator[None]:
    """Run the block with library warnings and log lines held back; then one `library` line says how many."""
    if os.environ.get(VERBOSE, "") not in ("", "0"):
        yield
        return
    hold = _ConsoleHold()
    root = logging.getLogger()
    # Outside Hydra's job logging the root logger has no handler, and `import verl` would add one to stderr
    # (verl/__init__.py set_basic_config: logging.basicConfig, a no-op where the root has a handler): a stderr
    # handler of our own stands in for the block, with the same filter.
    standing_in = None if root.handlers else logging.StreamHandler()
    if standing_in is not None:
        root.addHandler(standing_in)
    handlers = _console_handlers()
    for handler in handlers:
        handler.addFilter(hold)
    try:
        with warnings.catch_warnings(record=True) as caught:  # the filters in force (-W, PYTHONWARNINGS) still apply
            try:
                yield
            finally:
                log = logging.getLogger(WARNINGS_LOGGER)
                for w in caught:  # into the log file; the console's filter keeps them off the terminal
                    log.warning(warnings.formatwarning(w.message, w.category, w.filename, w.lineno, w.line).rstrip())
    finally:
        for handler in handlers:
            handler.removeFilter(hold)
        if standing_in is not None:
            root.removeHandler(standing_in)
    if caught or hold.held:
        sources = sorted(
            ({_package(w.filename) for w in caught} | {r.name.split(".")[0] for r in hold.held.values()}) - {""}
        )
        files = _log_files()
        kept = f"; they are in {', '.join(files)}" if files else ""
        say(
            f"library    {len(caught)} warning(s) and {len(hold.held)} log line(s) of "
            f"{', '.join(sources) or 'libraries'} "
            f"held back (import notices, CPU-only fallbacks, their own defaults' deprecations){kept}; "
            f"{VERBOSE}=1 prints them"
        )
