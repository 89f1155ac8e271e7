"""The one table of submission backends: each module of verl_qwen35/run/submit/ that exposes `BACKEND`.

A backend is one module (its typed options, its checks, how it writes and submits: run/submit/base.py `Backend`),
one conf option (conf/submit/<name>.yaml) and its docs; adding one edits nothing else (docs/extending.md).

Why the table is here, in the config layer, and loads modules of the run layer: the schema (config/schema.py
registers each backend's typed node before Hydra composes), the preflight (checks/submit.py asks for its checks)
and the job (run/submit/) all need it, and config is the lowest layer all three may import. No module imports a
backend by name; this table loads the run/submit/ package's modules by the package's own listing (pkgutil), the
way a plug-in is loaded, so the import graph keeps pointing down and no name is written twice.
"""

import pkgutil
from functools import cache
from importlib import import_module
from typing import Any

# The package whose modules are the backends (a module without `BACKEND` is a helper: base, wait_for_ray).
PLUGINS = "verl_qwen35.run.submit"


@cache
def backends() -> dict[str, Any]:
    """Every backend by its name (run/submit/base.py `Backend`), in name order; loaded once per process."""
    found = {}
    for module in sorted(m.name for m in pkgutil.iter_modules(import_module(PLUGINS).__path__)):
        backend = getattr(import_module(f"{PLUGINS}.{module}"), "BACKEND", None)
        if backend is None:
            continue
        if backend.name != module or backend.options.backend != module:
            raise RuntimeError(f"{PLUGINS}.{module}: BACKEND.name and its options' `backend` must be {module!r}")
        found[module] = backend
    return found


def named(name: object) -> Any | None:
    """The backend `submit.backend` names, or None for a name no module declares."""
    return backends().get(name) if isinstance(name, str) else None
