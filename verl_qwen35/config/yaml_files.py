"""The one way the package reads a file a user names (YAML, JSON or text), with limits, or says why not in one
message naming it.

Every file: presets and `--config-dir` files (before Hydra parses them), version matrices, a model's
config.json, launch records, sweep verdicts, files to diff, a calibration file, a script to import. `read_limited`
opens only a regular file, without blocking (a FIFO or a device named as a file would wait forever or feed without
end), and refuses one over its limit by the size of the open file, before reading it. PyYAML shares aliased nodes
while parsing, but OmegaConf copies them when it builds a config, so a few lines of nested aliases (a "billion
laughs" file) would expand to billions of nodes and hang. The node graph is measured as it would expand, and its
depth, before anything is built; a JSON document's depth likewise (nested `[[[[` deeper than any config would end
in a RecursionError in whatever walks it next). A file binary or not UTF-8 is refused before it is parsed; a
git-lfs pointer (weights cloned without `git lfs pull`) is named as one.
"""

import json
import os
import re
from pathlib import Path
from typing import Any

import yaml

from verl_qwen35.disk import NotRegular, open_regular
from verl_qwen35.errors import UserError

MAX_BYTES = 32 * 1024 * 1024
MAX_NODES = 100_000  # verl's largest config has ~2,200 nodes; OmegaConf builds only ~10k a second
MAX_DEPTH = 64  # verl's deepest key is 7 levels down; OmegaConf and our walks recurse per level
LFS_POINTER = b"version https://git-lfs.github.com/spec/"  # https://github.com/git-lfs/git-lfs/blob/main/docs/spec.md


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

    def size(n: yaml.Node, depth: int) -> int:
        if depth > MAX_DEPTH:
            raise UserError(f"{path}: nested deeper than {MAX_DEPTH} levels, deeper than any config; not loaded")
        if id(n) in sizes:
            return sizes[id(n)]
        if id(n) in active:
            raise UserError(f"{path}: a YAML alias refers to itself; not a config file")
        active.add(id(n))
        total = 1
        if isinstance(n, yaml.SequenceNode):
            total += sum(size(child, depth + 1) for child in n.value)
        elif isinstance(n, yaml.MappingNode):
            total += sum(size(k, depth + 1) + size(v, depth + 1) for k, v in n.value)
        active.discard(id(n))
        if total > limit:
            raise UserError(
                f"{path}: its aliases expand to more than {limit:,} YAML nodes (an alias bomb?); not loaded"
            )
        sizes[id(n)] = total
        return total

    return size(node, 0)


def check_depth(data: Any, path: Path | str) -> Any:
    """`data` (parsed JSON) when it is nested at most MAX_DEPTH deep; walked without recursion."""
    stack = [(data, 0)]
    while stack:
        item, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise UserError(f"{path}: nested deeper than {MAX_DEPTH} levels, deeper than any config; not loaded")
        if isinstance(item, dict):
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, depth + 1) for v in item)
    return data


def read_limited(path: Path, limit: int = MAX_BYTES, kind: str = "file") -> bytes:
    """The bytes of the regular file `path`, refused (UserError naming it) when missing, not a regular file (a FIFO,
    a device, a directory: never waited on) or over `limit` bytes (by its size, before a byte is read)."""
    path = Path(path)
    try:
        with open_regular(path) as handle:
            size = os.fstat(handle.fileno()).st_size
            if size > limit:
                raise UserError(f"{path}: {size:,} bytes, larger than any {kind} ({limit:,}); not read")
            raw = handle.read(limit + 1)
    except NotRegular:
        raise UserError(f"{path}: not a regular file (a FIFO, a device or a directory); not read") from None
    except FileNotFoundError:
        raise UserError(f"{path}: no such file") from None
    except OSError as err:
        raise UserError(f"{path}: cannot be read ({err.strerror or err})") from None
    if len(raw) > limit:  # grew while read
        raise UserError(f"{path}: larger than any {kind} ({limit:,} bytes); not read")
    return raw


def read_text(path: Path, kind: str = "YAML") -> str:
    """The file's text, refused when missing, not a regular file, larger than MAX_BYTES, binary or not UTF-8."""
    path = Path(path)
    if path.is_dir():
        raise UserError(f"{path}: no such file (a directory)")
    raw = read_limited(path, MAX_BYTES, f"{kind} file")
    if raw.startswith(LFS_POINTER):
        raise UserError(
            f"{path}: a git-lfs pointer, not the file itself; fetch it with `git lfs pull` in its repository"
        )
    try:
        if b"\0" in raw:
            raise UnicodeDecodeError("utf-8", raw, raw.index(b"\0"), raw.index(b"\0") + 1, "NUL byte")
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise UserError(f"{path}: a binary file, not {kind} text") from None


def parse_yaml(text: str, path: Path) -> Any:
    """YAML text as plain data, read the way OmegaConf reads YAML, with the alias limit."""
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
    except RecursionError:  # thousands of nested `[[[[`: deeper than any config
        raise UserError(f"{path}: nested deeper than any config; not loaded") from None
    finally:
        loader.dispose()


def load_yaml(path: Path) -> Any:
    """The file's content as plain data, read the way OmegaConf reads YAML."""
    return parse_yaml(read_text(path), Path(path))


def load_json(path: Path) -> Any:
    """A JSON file's content (no aliases in JSON; the size and text limits apply)."""
    text = read_text(path, "JSON")
    try:
        return check_depth(json.loads(text), path)
    except json.JSONDecodeError as err:
        raise UserError(f"{path} line {err.lineno}, column {err.colno}: not valid JSON: {err.msg}") from None
    except RecursionError:
        raise UserError(f"{path}: nested deeper than any config; not loaded") from None


def load_json_object(path: Path) -> dict[str, Any]:
    """load_json, refusing anything but an object at the top (a list, a number)."""
    data = load_json(path)
    if not isinstance(data, dict):
        raise UserError(f"{path}: holds a JSON {type(data).__name__}, but it should be an object of keys")
    return data


def load_mapping(path: Path) -> dict[str, Any]:
    """load_yaml, refusing an empty file or anything but a mapping at the top."""
    data = load_yaml(path)
    if data is None:
        raise UserError(f"{path}: empty (a config file is a mapping of keys)")
    if not isinstance(data, dict):
        raise UserError(f"{path}: holds a {type(data).__name__}, but a config file is a mapping of keys")
    return data
