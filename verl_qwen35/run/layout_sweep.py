"""The files `verl-qwen35 plan --sweep DIR` writes and the multirun it starts: one `parallel` option per listed
layout (or one `trial` option per trial), the user's config files beside them, and the command that sweeps them.

Every file goes through the one writer (disk.write_file: no link followed, temp file + rename). `applied` composes
one layout as its sweep job will be, to check that Hydra applies the files' micro-batch values.
"""

import json
import os
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from verl_qwen35.config import compose
from verl_qwen35.config.yaml_files import MAX_BYTES, read_limited
from verl_qwen35.disk import write_file
from verl_qwen35.planner.plan import PROG, UsageError, key_of, name_of
from verl_qwen35.planner.search import FIRST, LAST, ROLLOUT, TRAINING, Candidate
from verl_qwen35.planner.trials import drill_names


def sweep_overrides(
    base: list[str], files_set: Iterable[str] = (), group: str = "parallel", dry: bool = True
) -> list[str]:
    """The user's overrides every job of the sweep gets: not the swept `group` (`parallel`, or `trial`), nor the
    verl keys the layout files set (`files_set`, micro-batch sizes), where a command-line value would win over the
    files'; with `dry`, a dry run unless the user says `dry_run=...`."""
    dropped = {group, *files_set}
    kept = [o for o in base if key_of(o) not in dropped]
    return kept + ([] if not dry or any(key_of(o) == "dry_run" for o in kept) else ["dry_run=true"])


def sweep_command(
    directory: Path,
    base: list[str],
    names: list[str],
    files_set: Iterable[str] = (),
    group: str = "parallel",
    dry: bool = True,
) -> list[str]:
    kept = sweep_overrides(base, files_set, group, dry)
    return [
        sys.executable,
        "-m",
        "verl_qwen35",
        "-m",
        "--config-dir",
        str(directory.resolve()),
        *kept,
        f"{group}={','.join(names)}",
    ]


def batch_keys(listed: list[tuple[str, Candidate]]) -> list[str]:
    """verl's micro-batch keys some listed layout changes: every layout file of a sweep sets them."""
    return list(dict.fromkeys(key for _, c in listed for key, _ in c.batches))


def file_values(c: Candidate, keys: list[str], cfg: DictConfig) -> dict[str, Any]:
    """The micro-batch keys a sweep's layout file sets: this layout's changed values, else the config's."""
    return {key: OmegaConf.select(cfg, key) for key in keys} | dict(c.batches)


def layout_node(c: Candidate, keys: list[str], cfg: DictConfig) -> dict[str, Any]:
    """What a sweep's file sets for one layout: `parallel.*`, uneven stage counts, the micro-batch keys (`keys`)."""
    numbers = {name: getattr(c.layout, name) for name in (*TRAINING, *ROLLOUT)}
    node: dict[str, Any] = {
        "parallel": {"nnodes": c.layout.nnodes, "devices_per_node": c.layout.devices_per_node, **numbers}
    }
    if c.split.first is not None or c.split.last is not None:  # uneven stages live beside the layout
        node["megatron"] = {"override_transformer_config": {FIRST: c.split.first, LAST: c.split.last}}
    for key, value in file_values(c, keys, cfg).items():
        where = node
        *path, last = key.split(".")
        for part in path:
            where = where.setdefault(part, {})
        where[last] = value
    return node


def write_sweep(directory: Path, listed: list[tuple[str, Candidate]], cfg: DictConfig) -> list[str]:
    """DIR/parallel/<name>.yaml per listed layout: `parallel` options a multirun sweeps by name. A layout that
    needs smaller micro-batches carries them in its file (`# @package _global_`), and so does every other layout
    of the sweep (the config's values): the sweep's command line no longer sets those keys for all of them."""
    directory.mkdir(parents=True, exist_ok=True)  # the directory the user named; below it nothing through a link
    names = []
    keys = batch_keys(listed)
    for rank, c in listed:
        name = name_of(int(rank), c.layout, c.split, c.batches)
        node = layout_node(c, keys, cfg)
        # The package line first: Hydra reads it from the file's header (the stage counts sit beside `parallel`).
        header = "# @package _global_\n"
        shown = json.dumps(str(cfg.model.name))  # quoted as data: nothing in a value ends the comment
        header += f"# Layout {rank} of {PROG} for {shown} on {c.layout.nnodes}x{c.layout.devices_per_node}.\n"
        write_file(directory / "parallel" / f"{name}.yaml", header + OmegaConf.to_yaml(node), within=directory)
        names.append(name)
    return names


TRIAL_GROUP = "trial"


DRILL_DIR = "resume_drill"


def trial_file(option: str, c: Candidate, keys: list[str], cfg: DictConfig, header: str, drill: Path | None) -> str:
    """One trial job's option of the `trial` group: the trial (conf/trial/<option>.yaml) with this layout. The trial
    group comes after the layout and tuning groups, so the layout and micro-batch keys here are the ones applied."""
    node = {"defaults": [option, "_self_"], **layout_node(c, keys, cfg)}
    if drill is not None:
        node["trial"] = {"checkpoint_dir": str(drill)}
    return "# @package _global_\n" + header + OmegaConf.to_yaml(node)


def write_trials(
    directory: Path, named: list[tuple[str, int, Candidate]], cfg: DictConfig, drill: bool
) -> tuple[list[str], Path | None]:
    """DIR/trial/<name>.yaml per chosen layout (`trial=short`), the last as the resume drill's two jobs
    (`_save`, `_resume`, both with trial.checkpoint_dir = DIR/resume_drill, absolute): the options a multirun
    sweeps, in the order it runs them. Returns the option names and the drill's checkpoint folder."""
    directory.mkdir(parents=True, exist_ok=True)
    keys = batch_keys([(str(rank), c) for _, rank, c in named])
    folder = (directory / DRILL_DIR).resolve() if drill else None
    names: list[str] = []
    for i, (name, rank, c) in enumerate(named):
        header = (
            f"# Trial {i + 1} of {len(named)} of {PROG} --trial for {cfg.model.name} on {c.layout.nnodes}x"
            f"{c.layout.devices_per_node}: layout {rank} of tier 1.\n"
        )
        jobs = [(name, "short", None)]
        if drill and i == len(named) - 1:
            save, resume = drill_names(name)
            jobs = [(save, "drill_save", folder), (resume, "drill_resume", folder)]
        for job, option, where in jobs:
            text = trial_file(option, c, keys, cfg, header, where)
            write_file(directory / TRIAL_GROUP / f"{job}.yaml", text, within=directory)
            names.append(job)
    return names, folder


def applied(
    directory: Path, overrides: list[str], listed: list[tuple[str, Candidate]], names: list[str], resolved: DictConfig
) -> None:
    """Hydra merges a `parallel` option before the groups after it (tuning, submit): a layout file's micro-batch
    key is overridden when one of them sets it too. Every file sets the same keys (`batch_keys`) at the same
    place of the defaults list, so one layout composed as its sweep job will be tells for all; a UsageError
    names the key when Hydra would not apply a file's value."""
    rank, c = next((rank, c) for rank, c in listed if c.batches)
    name = names[[r for r, _ in listed].index(rank)]
    cfg = compose([*overrides, f"parallel={name}"], config_dirs=[directory])
    for key, value in file_values(c, batch_keys(listed), resolved).items():
        if OmegaConf.select(cfg, key) != value:
            raise UsageError(
                f"--sweep: the layout files set {key} ({directory}/parallel/{name}.yaml: {value}, what layout {rank} "
                f"fits with), but a config group after `parallel` (tuning or submit) sets {key} again and Hydra "
                "applies that one in every job; run the layouts whose override lines hold the key alone, or drop "
                "the key from that group"
            )


def copy_tree(source: Path, target: Path) -> None:
    """The user's config files into --sweep DIR by the one writer: a link already in DIR is replaced, not followed."""
    target.mkdir(parents=True, exist_ok=True)
    for path in sorted(source.rglob("*")):
        if path.is_file():
            write_file(target / path.relative_to(source), read_limited(path, MAX_BYTES, "config file"), within=target)


def writable_dir(directory: Path) -> None:
    """--sweep DIR must be a directory this user can create or write into; checked before any search."""
    existing = next(p for p in (directory.absolute(), *directory.absolute().parents) if p.exists())
    if existing == directory.absolute() and not existing.is_dir():
        raise UsageError(f"--sweep {directory}: is a file, not a directory; give a new or existing directory")
    if not existing.is_dir() or not os.access(existing, os.W_OK | os.X_OK):
        raise UsageError(f"--sweep {directory}: {existing} is not a writable directory; choose another DIR")
