"""The files a `--config-dir` adds that the command line chooses: mappings, and no secrets (which
Hydra would copy into `.hydra/config.yaml`). Their types and missing keys are the schema's."""

import itertools
from pathlib import Path

from hydra.core.override_parser.types import Override

from verl_qwen35.config.choices import DEFAULT_MODEL, OUR_GROUPS, values
from verl_qwen35.config.secrets import ADVICE, findings, shell_secrets
from verl_qwen35.config.yaml_files import load_yaml
from verl_qwen35.errors import UserError


def _chosen(overrides: list[Override]) -> dict[str, list[str]]:
    chosen = {o.key_or_group: values(o) for o in overrides if o.package is None and o.key_or_group in OUR_GROUPS}
    pairs = list(itertools.product(chosen.get("model", [DEFAULT_MODEL]), chosen.get("device", ["gpu"])))
    chosen.setdefault("parallel", [f"{m}_{d}" for m, d in pairs])
    chosen.setdefault("tuning", [f"{m}_{d}" for m, d in pairs])
    return chosen


def _package(path: Path, group: str, text: str) -> str:
    """Where the file's keys land: `# @package _global_` at the root, else under its group."""
    for line in text.splitlines()[:5]:
        if line.startswith("# @package"):
            package = line.split("@package", 1)[1].strip()
            return "" if package == "_global_" else package.replace("_group_", group)
    return group


def _load(path: Path) -> tuple[str, object]:
    content = load_yaml(path)  # syntax errors named with file and line; binary files refused
    return path.read_text(encoding="utf-8"), content


def check_config_dirs(overrides: list[Override], config_dirs: list[Path]) -> None:
    for root in config_dirs:
        if not root.is_dir():
            raise UserError(f"--config-dir {root}: no such directory (it should hold group folders like parallel/)")
    if not config_dirs:
        return
    shell = shell_secrets()
    for group, names in _chosen(overrides).items():
        for root, name in itertools.product(config_dirs, names):
            path = root / group / f"{name}.yaml"
            if not path.is_file():
                continue
            text, content = _load(path)
            if content is not None and not isinstance(content, dict):
                raise UserError(
                    f"{path}: holds a {type(content).__name__}, but a config file must be a mapping of keys"
                )
            content = content or {}
            for key, why in findings(_package(path, group, text), content, shell):
                raise UserError(f"{path}: {key}: {why}. Instead, {ADVICE}.")
