"""Preflight: every check is a pure function of the resolved config (and, for files, of this machine).

`preflight` (checks/verdict.py) runs them all. Its names are imported on first use, so a module that needs one
topic (`checks.problem`, `checks.memory`) imports that topic only: `--cfg job` imports no rule at all.
"""

from importlib import import_module
from typing import Any

__all__ = ["Problem", "device_of", "error", "preflight", "transformer_config_fields"]


def __getattr__(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(name)
    return getattr(import_module("verl_qwen35.checks.verdict"), name)
