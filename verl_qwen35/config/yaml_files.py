"""Read a YAML file someone hands us (a run's launch.yaml, a file to diff) with limits, or say why not.

PyYAML shares aliased nodes while parsing, but OmegaConf copies them when it builds a config,
so a few lines of nested aliases (a "billion laughs" file) would expand to billions of nodes
and hang. The node graph is measured as it would expand before anything is built.
"""

import re
from pathlib import Path
from typing import Any

import yaml

from verl_qwen35.errors import UserError

MAX_BYTES = 32 * 1024 * 1024
MAX_NODES = 2_000_000  # a resolved verl config has ~2,000


class ConfigLoader(yaml.SafeLoader):
    """YAML as OmegaConf reads it: PyYAML's safe loader with YAML 1.2 floats (`1e-6` is a float, not text)."""


# YAML 1.2's float: an exponent needs no dot (OmegaConf's loader uses the same pattern).
ConfigLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(
        r"""^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+]?[0-9]+)?
        |[-+]?(?:[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)
        |\.[0-9_]+(?:[eE][-+][0-9]+)?
        |[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*
        |[-+]?\.(?:inf|Inf|INF)
        |\.(?:nan|NaN|NAN))$""",
        re.X,
    ),
    list("-+0123456789."),
)


def _expanded_size(node: yaml.Node, limit: int, path: Path) -> int:
    sizes: dict[int, int] = {}
    active: set[int] = set()

    def size(n: yaml.Node) -> int:
        if id(n) in sizes:
            return sizes[id(n)]
        if id(n) in active:
            raise UserError(f"{path}: a YAML alias refers to itself; not a config file")
        active.add(id(n))
        total = 1
        if isinstance(n, yaml.SequenceNode):
            total += sum(size(child) for child in n.value)
        elif isinstance(n, yaml.MappingNode):
            total += sum(size(k) + size(v) for k, v in n.value)
        active.discard(id(n))
        if total > limit:
            raise UserError(
                f"{path}: its aliases expand to more than {limit:,} YAML nodes (an alias bomb?); not loaded"
            )
        sizes[id(n)] = total
        return total

    return size(node)


def load_yaml(path: Path) -> Any:
    """The file's content as plain data, read the way OmegaConf reads YAML."""
    path = Path(path)
    if not path.is_file():
        raise UserError(f"{path}: no such file")
    if path.stat().st_size > MAX_BYTES:
        raise UserError(f"{path}: {path.stat().st_size:,} bytes, larger than any config ({MAX_BYTES:,}); not loaded")
    raw = path.read_bytes()
    try:
        if b"\0" in raw:
            raise UnicodeDecodeError("utf-8", raw, raw.index(b"\0"), raw.index(b"\0") + 1, "NUL byte")
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise UserError(f"{path}: a binary file, not YAML text") from None
    loader = ConfigLoader(text)
    loader.name = str(path)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _expanded_size(node, MAX_NODES, path)
        return loader.construct_document(node)
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        where = f" line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise UserError(f"{path}{where}: YAML syntax error: {err.problem or err.context}") from None
    except yaml.YAMLError as err:
        raise UserError(f"{path}: not valid YAML: {err}") from None
    finally:
        loader.dispose()


def load_mapping(path: Path) -> dict[str, Any]:
    """load_yaml, refusing an empty file or anything but a mapping at the top."""
    data = load_yaml(path)
    if data is None:
        raise UserError(f"{path}: empty (a config file is a mapping of keys)")
    if not isinstance(data, dict):
        raise UserError(f"{path}: holds a {type(data).__name__}, but a config file is a mapping of keys")
    return data


def check_config_dir(directory: Path) -> None:
    """Every YAML file of a `--config-dir` loads within the limits (Hydra would hang on an alias bomb)."""
    directory = Path(directory)
    if not directory.is_dir():
        raise UserError(f"--config-dir {directory}: no such directory (it should hold group folders like parallel/)")
    for path in sorted(directory.rglob("*.y*ml")):
        load_yaml(path)
