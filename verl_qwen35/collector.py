"""Garbage-collector settings for composing and checking configs (not for training).

OmegaConf nodes point at their parents, so a composed config is a web of reference cycles
that only the cyclic collector frees, and one sweep job allocates ~10^5 such objects (Hydra
deep-copies each job's config twice). With Python's default first-generation threshold (700
allocations) the collector runs hundreds of times per job and keeps re-walking everything the
imports created. Freezing what exists after the imports, and collecting the young generation
every 50,000 allocations instead, costs a few MB and saves ~10% of a sweep job
(scripts/benchmark.py). verl's trainer gets Python's own settings back before it starts.
"""

import gc

PYTHON_DEFAULT = gc.get_threshold()
COMPOSING = (50_000, 20, 100)


def tune_for_composing() -> None:
    gc.freeze()  # the imports: alive until exit, never worth walking again
    gc.set_threshold(*COMPOSING)


def restore_python_defaults() -> None:
    """Before verl runs: a long-lived trainer keeps Python's own collector settings."""
    gc.unfreeze()
    gc.set_threshold(*PYTHON_DEFAULT)
