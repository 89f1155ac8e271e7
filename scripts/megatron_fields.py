"""Write verl_qwen35/data/upstream/megatron_core_<major.minor>.json: megatron-core's config fields, from its source.

The fast preflight checks `override_transformer_config` (and the DDP and optimizer overrides) against this file,
so it never imports megatron-core (and torch). The fields of TransformerConfig (with ModelParallelConfig),
DistributedDataParallelConfig and OptimizerConfig are parsed with `ast` and their annotations read into value
kinds, so one reader serves the installed release and a wheel of one that does not install here (megatron-core
0.17 and later install only on Python 3.12, and importing them imports torch). tests/unit/test_megatron_keys.py
compares the shipped file with the installed live dataclasses.

Run: python scripts/megatron_fields.py            # the installed megatron-core (--check: only compare)
     pip download --no-deps megatron-core==0.18.0 --python-version 3.12 --only-binary=:all: -d /tmp/w
     python scripts/megatron_fields.py /tmp/w/megatron_core-0.18.0-*.whl
"""

import ast
import importlib.util
import json
import sys
import zipfile
from importlib.metadata import version
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "verl_qwen35" / "data" / "upstream"
SIMPLE = {"bool": "bool", "int": "int", "float": "float", "str": "str", "list": "list", "dict": "dict", "None": "null"}
SEQUENCES = {"list", "List", "tuple", "Tuple", "Sequence"}
MAPPINGS = {"dict", "Dict", "Mapping"}
CLASSES = {
    "fields": ("megatron/core/transformer/transformer_config.py", "TransformerConfig"),
    "ddp_fields": ("megatron/core/distributed/distributed_data_parallel_config.py", "DistributedDataParallelConfig"),
    "optimizer_fields": ("megatron/core/optimizer/optimizer_config.py", "OptimizerConfig"),
}
BASES = {"ModelParallelConfig": "megatron/core/model_parallel_config.py"}


class Source:
    """megatron/core/*.py of a wheel or an installed tree, parsed on demand; the Enum classes defined there."""

    def __init__(self, read: "dict[str, str]") -> None:
        """`read`: path under the wheel's root -> text; only the config modules and those defining an Enum
        are parsed."""
        needed = {path for path, _ in CLASSES.values()} | set(BASES.values())
        self.trees = {path: ast.parse(text) for path, text in read.items() if path in needed or "Enum)" in text}
        self.enums = {
            node.name: [
                t.id for s in node.body if isinstance(s, ast.Assign) for t in s.targets if isinstance(t, ast.Name)
            ]
            for tree in self.trees.values()
            for node in ast.walk(tree)
            if isinstance(node, ast.ClassDef) and any("Enum" in ast.unparse(b) for b in node.bases)
        }

    def fields(self, path: str, name: str) -> dict[str, ast.expr]:
        cls = next(n for n in ast.walk(self.trees[path]) if isinstance(n, ast.ClassDef) and n.name == name)
        found: dict[str, ast.expr] = {}
        for base in cls.bases:
            if isinstance(base, ast.Name) and base.id in BASES:
                found |= self.fields(BASES[base.id], base.id)
        for stmt in cls.body:
            if (
                isinstance(stmt, ast.AnnAssign)
                and isinstance(stmt.target, ast.Name)
                and not ast.unparse(stmt.annotation).startswith(("ClassVar", "InitVar", "typing.ClassVar"))
            ):
                found[stmt.target.id] = stmt.annotation
        return found

    def kinds(self, node: ast.expr) -> "tuple[set[str], list | None]":
        """The value kinds an annotation accepts ("any" when a YAML value cannot be checked) and its choices."""
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return self.kinds(ast.parse(node.value, mode="eval").body)  # a forward reference
        if isinstance(node, ast.Constant) and node.value is None:
            return {"null"}, None
        name = ast.unparse(node).removeprefix("typing.")
        if name in SIMPLE:
            return {SIMPLE[name]}, None
        if name in SEQUENCES:
            return {"list"}, None
        if name in MAPPINGS:
            return {"dict"}, None
        if name in self.enums:
            return {"str"}, sorted(self.enums[name])
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
            return self._union([node.left, node.right])
        if isinstance(node, ast.Subscript):
            outer = ast.unparse(node.value).removeprefix("typing.")
            args = list(node.slice.elts) if isinstance(node.slice, ast.Tuple) else [node.slice]
            if outer == "Optional":
                return self._union([args[0], ast.Constant(None)])
            if outer == "Union":
                return self._union(args)
            if outer == "Literal":
                values = [a.value for a in args if isinstance(a, ast.Constant)]
                return {SIMPLE[type(v).__name__ if v is not None else "None"] for v in values}, values
            if outer in SEQUENCES:
                return {"list"}, None
            if outer in MAPPINGS:
                return {"dict"}, None
        return {"any"}, None

    def _union(self, args: "list[ast.expr]") -> "tuple[set[str], list | None]":
        found: set[str] = set()
        choices: list | None = []
        for arg in args:
            arg_kinds, arg_choices = self.kinds(arg)
            found |= arg_kinds
            if arg_choices is None and arg_kinds - {"null"}:
                choices = None
            elif choices is not None and arg_choices:
                choices += arg_choices
        return found, (choices or None)


def describe(source: Source, release: str) -> dict:
    data: dict = {
        "megatron_core": release,
        "source": "megatron/core/transformer/transformer_config.py + model_parallel_config.py (dataclass fields); "
        "ddp_fields: megatron/core/distributed/distributed_data_parallel_config.py; "
        "optimizer_fields: megatron/core/optimizer/optimizer_config.py",
        "generated_by": "scripts/megatron_fields.py (megatron-core's source, read with ast: no torch)",
    }
    for key, (path, name) in CLASSES.items():
        fields = {}
        for field, annotation in sorted(source.fields(path, name).items()):
            accepted, choices = source.kinds(annotation)
            fields[field] = {"kinds": sorted(accepted), **({"choices": choices} if choices else {})}
        data[key] = fields
    return data


def from_wheel(wheel: Path) -> "tuple[Source, str]":
    with zipfile.ZipFile(wheel) as z:
        read = {n: z.read(n).decode() for n in z.namelist() if n.startswith("megatron/core/") and n.endswith(".py")}
    return Source(read), wheel.name.split("-")[1]


def from_tree(root: Path) -> Source:
    """An installed megatron/core (its parent directory is `root`)."""
    return Source({str(p.relative_to(root)): p.read_text() for p in (root / "megatron" / "core").rglob("*.py")})


def installed() -> "tuple[Source, str]":
    """The installed megatron-core's source (found, not imported: no torch) and its release."""
    spec = importlib.util.find_spec("megatron.core")
    if spec is None or not spec.submodule_search_locations:
        sys.exit("megatron-core is not installed here; name a wheel: python scripts/megatron_fields.py WHEEL")
    return from_tree(Path(spec.submodule_search_locations[0]).parents[1]), version("megatron-core")


def main(argv: "list[str]") -> int:
    """Write the file; with --check, 1 when the shipped file's fields differ from what the source says."""
    check = "--check" in argv
    wheels = [a for a in argv if a != "--check"]
    source, release = from_wheel(Path(wheels[0])) if wheels else installed()
    data = describe(source, release)
    minor = ".".join(release.split(".")[:2])
    path = OUT / f"megatron_core_{minor}.json"
    if check:
        shipped = json.loads(path.read_text()) if path.is_file() else {}
        if any(shipped.get(k) != data[k] for k in CLASSES):
            print(f"{path} is stale: run python scripts/megatron_fields.py {' '.join(wheels)}".rstrip())
            return 1
        return 0
    path.write_text(json.dumps(data, indent=1, sort_keys=False) + "\n")
    print(f"wrote {path} ({len(data['fields'])} fields)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
