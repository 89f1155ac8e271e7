"""Helpers for tests that change os.environ and must leave it as they found it."""

import pytest


def cleared(monkeypatch: pytest.MonkeyPatch, names) -> None:
    """Remove `names` from os.environ for this test; after it, each is put back or removed again.

    `monkeypatch.delenv(name, raising=False)` records nothing for a name that is not set, so a
    variable the code under test then sets would outlive the test; setting it first records its
    absence.
    """
    for name in names:
        monkeypatch.setenv(name, "")
        monkeypatch.delenv(name)
