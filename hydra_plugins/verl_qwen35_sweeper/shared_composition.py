"""The defaults list the jobs of one sweep batch share while Hydra composes each of them.

A sweep over values (`parallel.tp=2,4 ...`) composes every job with the same group choices.
Hydra builds the defaults list (which configs, in which order, under which packages) from the
group choices and the search path only: value overrides are applied after composition, and
defaults-list interpolations may read only group choices. So jobs with the same group overrides
(hydra's own included) and search path get the same list and the same choices, and inside
`defaults_lists_shared()` each distinct list is built once. Each job still gets its own
value overrides, `hydra.*` runtime fields and validation from Hydra. A list that fails to build
is not remembered, so every job that hits it raises the same. Sweeps run jobs one after another
in one thread; this is only active during the batch check. (The merge of the list is reused by
verl_qwen35.merge_cache, in sweeps and single runs alike.)

Imports only Hydra: Hydra imports every plugin module in any Hydra app's process.
"""

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from hydra._internal import config_loader_impl
from hydra._internal.defaults_list import DefaultsList, Overrides
from hydra.core.override_parser.types import Override


def _sources(repo: Any) -> tuple[tuple[str, str], ...]:
    """The search path: the same config path may name another file under another search path."""
    return tuple((s.scheme(), s.path) for s in repo.get_sources())


def _defaults_key(repo: Any, config_name: str | None, overrides: list[Override], job: Overrides) -> tuple[Any, ...]:
    """What Hydra's defaults list depends on: everything but the value overrides of the app's config."""
    values = {id(o) for o in job.config_overrides}
    shaping = tuple(o.input_line for o in overrides if id(o) not in values)
    return config_name, _sources(repo), shaping


@contextmanager
def defaults_lists_shared() -> Iterator[None]:
    """Hydra's config loader builds each distinct defaults list once (module function, restored after)."""
    build = config_loader_impl.create_defaults_list
    built: dict[tuple[Any, ...], DefaultsList] = {}

    def create_defaults_list(
        repo: Any, config_name: str | None, overrides_list: list[Override], prepend_hydra: bool, skip_missing: bool
    ) -> DefaultsList:
        job = Overrides(repo=repo, overrides_list=overrides_list)  # classifies; raises as Hydra's would
        key = (prepend_hydra, skip_missing, *_defaults_key(repo, config_name, overrides_list, job))
        if key not in built:
            built[key] = build(
                repo=repo,
                config_name=config_name,
                overrides_list=overrides_list,
                prepend_hydra=prepend_hydra,
                skip_missing=skip_missing,
            )
        first = built[key]
        job.known_choices = dict(first.overrides.known_choices)
        job.known_choices_per_group = {g: set(c) for g, c in first.overrides.known_choices_per_group.items()}
        return DefaultsList(
            defaults=list(first.defaults),
            defaults_tree=first.defaults_tree,
            config_overrides=job.config_overrides,  # this job's own value overrides
            overrides=job,
        )

    config_loader_impl.create_defaults_list = create_defaults_list
    try:
        yield
    finally:
        config_loader_impl.create_defaults_list = build
