"""What the jobs of one sweep batch share while Hydra composes each of them.

A sweep over values (`parallel.tp=2,4 ...`) composes every job from the same config files with
the same group choices, so two of Hydra's steps give every job the same answer:

- the defaults list: which files, in which order, under which packages. Hydra builds it from the
  group choices and the search path only (value overrides are applied after composition, and
  defaults-list interpolations may read only group choices), so jobs with the same group
  overrides (hydra's own included) and search path get the same list and the same choices;
- the merge of that list (`_compose_config_from_defaults_list`), a function of the list, the
  search path and the files.

Inside `compositions_shared(loader)` each distinct answer is worked out once and served to the
other jobs (the merged config as a fresh unpickled copy, since Hydra then writes into it).
Everything else stays Hydra's, per job: value overrides, `hydra.*` runtime fields, validation.
A step that raises is not remembered, so every job that hits it raises the same. Sweeps run
jobs one after another in one thread; this is only active during the batch check.

Imports only Hydra and OmegaConf: Hydra imports every plugin module in any Hydra app's process.
"""

import pickle
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

from hydra._internal import config_loader_impl
from hydra._internal.defaults_list import DefaultsList, Overrides
from hydra.core.default_element import ResultDefault
from hydra.core.override_parser.types import Override
from omegaconf import DictConfig


def _sources(repo: Any) -> tuple[tuple[str, str], ...]:
    """The search path: the same config path may name another file under another search path."""
    return tuple((s.scheme(), s.path) for s in repo.get_sources())


def _list_key(defaults: list[ResultDefault], repo: Any) -> tuple[Any, ...]:
    listed = tuple((d.config_path, d.parent, d.package, d.is_self, d.primary, d.override_key) for d in defaults)
    return _sources(repo), listed


@contextmanager
def merges_shared(loader: Any) -> Iterator[None]:
    """`loader` merges each distinct defaults list once (this loader object only)."""
    merge: Callable[..., DictConfig] = loader._compose_config_from_defaults_list
    merged: dict[tuple[Any, ...], bytes] = {}

    def compose(defaults: list[ResultDefault], repo: Any) -> DictConfig:
        key = _list_key(defaults, repo)
        if key not in merged:
            merged[key] = pickle.dumps(merge(defaults=defaults, repo=repo), protocol=pickle.HIGHEST_PROTOCOL)
        return pickle.loads(merged[key])

    loader._compose_config_from_defaults_list = compose
    try:
        yield
    finally:
        del loader._compose_config_from_defaults_list


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


@contextmanager
def compositions_shared(loader: Any) -> Iterator[None]:
    with ExitStack() as stack:
        stack.enter_context(defaults_lists_shared())
        stack.enter_context(merges_shared(loader))
        yield
