"""Pytest plugin for scripts/mutation.py: which test runs which line of the package.

Writes {"lines": {"<module>:<line>": [nodeid, ...]}, "spawns": [nodeid, ...], "order": [...]} to
$MUTATION_LINE_OWNERS. A mutant is then run against only the tests that execute its lines,
plus the tests that start a subprocess (their lines are not traced here).
"""

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

_PACKAGE = str(Path(os.environ.get("MUTATION_PACKAGE_DIR", "verl_qwen35")).resolve()) + os.sep
_lines: dict[str, set[str]] = {}
_spawns: set[str] = set()
_current: list[str] = []
_order: list[str] = []
_durations: dict[str, float] = {}


def _tracer(frame, event, arg):
    filename = frame.f_code.co_filename
    if not filename.startswith(_PACKAGE) or not _current:
        return None
    module = filename[len(_PACKAGE) :]
    test = _current[0]

    def local(frame, event, arg):
        if event == "line":
            _lines.setdefault(f"{module}:{frame.f_lineno}", set()).add(test)
        return local

    _lines.setdefault(f"{module}:{frame.f_lineno}", set()).add(test)
    return local


_real_popen_init = subprocess.Popen.__init__


def _popen_init(self, *args, **kwargs):
    if _current:
        _spawns.add(_current[0])
    return _real_popen_init(self, *args, **kwargs)


subprocess.Popen.__init__ = _popen_init


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    _current[:] = [item.nodeid]
    _order.append(item.nodeid)
    started = time.monotonic()
    sys.settrace(_tracer)
    threading.settrace(_tracer)
    try:
        yield
    finally:
        sys.settrace(None)
        threading.settrace(None)
        _current.clear()
        _durations[item.nodeid] = time.monotonic() - started


def pytest_sessionfinish(session, exitstatus):
    out = os.environ.get("MUTATION_LINE_OWNERS")
    if out:
        record = {
            "lines": {k: sorted(v) for k, v in _lines.items()},
            "spawns": sorted(_spawns),
            "order": _order,
            "durations": _durations,
        }
        Path(out).write_text(json.dumps(record))
