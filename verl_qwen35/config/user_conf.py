"""The files a user adds to Hydra's search path (`--config-dir`, `--config-path`, a `file://` entry of
`hydra.searchpath`): every one of them is read with limits and scanned for secrets before Hydra
parses any, because Hydra copies whatever it composes into `.hydra/` and `multirun.yaml`.

Every `.yaml` file under such a directory counts, not only the chosen ones: a group that is not
ours (`+extra=creds`), a file a preset pulls in through its `defaults:` at any depth, a swept
choice. Hydra reads no other extension (`hydra/plugins/config_source.py` _normalize_file_name).
Their types and missing keys are the schema's.
"""

import itertools
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path

from hydra.core.override_parser.types import Override

from verl_qwen35.config.choices import DEFAULT_MODEL, OUR_GROUPS, values
from verl_qwen35.config.secrets import ADVICE, findings, shell_secrets
from verl_qwen35.config.yaml_files import parse_yaml, read_text
from verl_qwen35.errors import UserError

FILE_SCHEME = "file://"
# The directories already scanned in this command (None: no command is scanning once, each call scans).
_SCANNED: ContextVar[set[Path] | None] = ContextVar("verl_qwen35_scanned_config_dirs", default=None)


@contextmanager
def scanned_once() -> Iterator[None]:
    """Within it, a directory's files are scanned once: the command scans them before Hydra parses any, and
    Hydra's pre-write callback (config/prewrite.py) would otherwise scan the same files again."""
    token = _SCANNED.set(set())
    try:
        yield
    finally:
        _SCANNED.reset(token)


def searchpath_dirs(overrides: Sequence[Override]) -> list[Path]:
    """The `file://` directories a `hydra.searchpath=[...]` override adds (`pkg://` ones are installed code)."""
    found = []
    for override in overrides:
        if override.key_or_group.lstrip("+") != "hydra.searchpath" or override.is_delete():
            continue
        entries = override.value()
        for entry in entries if isinstance(entries, list) else [entries]:
            if isinstance(entry, str) and entry.startswith(FILE_SCHEME):
                found.append(Path(entry.removeprefix(FILE_SCHEME)))
    return found


def _package(path: Path, root: Path, text: str) -> str:
    """Where the file's keys land: its `# @package` header, else its group (`a/b/c.yaml` -> `a.b`)."""
    group = ".".join(path.relative_to(root).parent.parts)
    for line in text.splitlines()[:5]:
        if line.startswith("# @package"):
            package = line.split("@package", 1)[1].strip()
            return "" if package == "_global_" else package.replace("_group_", group)
    return group


# Hydra's own settings a file in a --config-dir may not carry (docs/security.md): callbacks (our pre-write checks
# are one: a preset could switch them off, or name code to run), where the run writes and from where it runs, and
# the launcher/sweeper plugins (code named by `_target_`). Typed on the command line, they are the user's own.
HYDRA_REFUSED = ("callbacks", "run", "sweep", "output_subdir", "job.chdir", "searchpath", "launcher", "sweeper")
HYDRA_GROUPS_REFUSED = ("callbacks", "launcher", "sweeper")


def _refused_hydra_key(node: object, prefix: str) -> str | None:
    """The first key under Hydra's node that a preset may not set, or any `_target_` under it."""
    if not isinstance(node, dict):
        return None
    for key, value in node.items():
        path = f"{prefix}.{key}"
        inner = path.removeprefix("hydra.")
        if key == "_target_" or any(inner == r or inner.startswith(f"{r}.") for r in HYDRA_REFUSED):
            return path
        if found := _refused_hydra_key(value, path):
            return found
    return None


def hydra_setting(path: Path, root: Path, package: str, content: object) -> str | None:
    """The key of Hydra's own settings (HYDRA_REFUSED) a --config-dir file sets, or None: a file of Hydra's
    groups (`hydra/...`), a `hydra:` node of a global file, a `hydra/callbacks|launcher|sweeper` default."""
    relative = path.relative_to(root)
    if relative.parts[0] == "hydra" and len(relative.parts) > 1:
        return "/".join(relative.with_suffix("").parts)
    if isinstance(content, dict):
        for entry in content.get("defaults") or []:
            for name in entry if isinstance(entry, dict) else [entry]:
                group = str(name).removeprefix("override ").strip().lstrip("/")
                if any(group.startswith(f"hydra/{g}") for g in HYDRA_GROUPS_REFUSED):
                    return f"defaults: {group}"
    if package == "" and isinstance(content, dict):
        return _refused_hydra_key(content.get("hydra"), "hydra")
    if package == "hydra" or package.startswith("hydra."):
        return _refused_hydra_key(content, package)
    return None


def check_user_files(config_dirs: Sequence[Path]) -> None:
    """Every `.yaml` file under the directories: within the loader's limits and free of secrets."""
    for root in config_dirs:
        if not Path(root).is_dir():
            raise UserError(f"--config-dir {root}: no such directory (it should hold group folders like parallel/)")
    scanned = _SCANNED.get()
    todo = [Path(root) for root in config_dirs if scanned is None or Path(root).resolve() not in scanned]
    shell = shell_secrets() if todo else {}
    for root in todo:
        for path in sorted(root.rglob("*.yaml")):
            text = read_text(path)
            content = parse_yaml(text, path)
            if key := hydra_setting(path, root, _package(path, root, text), content):
                raise UserError(
                    f"{path}: {key}: Hydra's own setting is not taken from a --config-dir: callbacks, launcher and "
                    "sweeper plugins, `_target_`s and where a run writes (hydra.run.dir, hydra.sweep.dir, job.chdir, "
                    "output_subdir) could switch off the checks or run code (docs/security.md); remove it from the "
                    "file, and give it on the command line if you mean it"
                )
            if isinstance(content, dict):
                content = {k: v for k, v in content.items() if k != "defaults"}  # group choices, not values
            for key, why in findings(_package(path, root, text), content, shell):
                raise UserError(f"{path}: {key}: {why}; refused before anything was written. Instead, {ADVICE}.")
        if scanned is not None:
            scanned.add(root.resolve())


def _chosen(overrides: Sequence[Override]) -> dict[str, list[str]]:
    chosen = {o.key_or_group: values(o) for o in overrides if o.package is None and o.key_or_group in OUR_GROUPS}
    pairs = list(itertools.product(chosen.get("model", [DEFAULT_MODEL]), chosen.get("device", ["gpu"])))
    chosen.setdefault("parallel", [f"{m}_{d}" for m, d in pairs])
    chosen.setdefault("tuning", [f"{m}_{d}" for m, d in pairs])
    return chosen


def check_config_dirs(overrides: Sequence[Override], config_dirs: Sequence[Path]) -> None:
    """`check_user_files` over the `--config-dir`s and search path entries, and the chosen presets of
    our groups mappings (Hydra's own message for a list names no file)."""
    dirs = [*config_dirs, *searchpath_dirs(overrides)]
    check_user_files(dirs)
    for group, names in _chosen(overrides).items():
        for root, name in itertools.product(dirs, names):
            path = Path(root) / group / f"{name}.yaml"
            if not path.is_file():
                continue
            content = parse_yaml(read_text(path), path)
            if content is not None and not isinstance(content, dict):
                raise UserError(
                    f"{path}: holds a {type(content).__name__}, but a config file must be a mapping of keys"
                )
