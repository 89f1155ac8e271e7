"""Regenerate verl_qwen35/data/upstream/megatron_core_<major.minor>.json from the installed megatron-core.

The fast preflight checks `override_transformer_config` keys and value types against this file, so it
never has to import megatron-core (and torch). tests/test_megatron_fields.py compares the shipped file
with the installed dataclass. Run: python scripts/megatron_fields.py
"""

import dataclasses
import enum
import json
import sys
import types
import typing
from importlib.metadata import version
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "verl_qwen35" / "data" / "upstream"
SIMPLE = {bool: "bool", int: "int", float: "float", str: "str", list: "list", dict: "dict", type(None): "null"}


def kinds(annotation: object) -> tuple[set[str], list | None]:
    """The value kinds a field accepts ("any" when a YAML value cannot be checked) and its choices."""
    origin = typing.get_origin(annotation)
    if annotation in SIMPLE:
        return {SIMPLE[annotation]}, None
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return {"str"}, sorted(annotation.__members__)  # verl maps names: AttnBackend[value]
    if origin is typing.Literal:
        values = list(typing.get_args(annotation))
        return {SIMPLE[type(v)] for v in values}, values
    if origin in (list, tuple) or annotation in (list, tuple):
        return {"list"}, None
    if origin in (typing.Union, types.UnionType):
        found: set[str] = set()
        choices: list | None = []
        for arg in typing.get_args(annotation):
            arg_kinds, arg_choices = kinds(arg)
            found |= arg_kinds
            if arg_choices is None and arg_kinds - {"null"}:
                choices = None
            elif choices is not None and arg_choices:
                choices += arg_choices
        return found, (choices or None)
    return {"any"}, None


def field_kinds(dataclass: type) -> dict[str, dict]:
    hints = typing.get_type_hints(dataclass)
    fields = {}
    for field in sorted(dataclasses.fields(dataclass), key=lambda f: f.name):
        accepted, choices = kinds(hints[field.name])
        fields[field.name] = {"kinds": sorted(accepted), **({"choices": choices} if choices else {})}
    return fields


def describe() -> dict:
    from megatron.core.distributed.distributed_data_parallel_config import DistributedDataParallelConfig
    from megatron.core.optimizer.optimizer_config import OptimizerConfig
    from megatron.core.transformer.transformer_config import TransformerConfig

    return {
        "megatron_core": version("megatron-core"),
        "source": "megatron/core/transformer/transformer_config.py + model_parallel_config.py (dataclass fields); "
        "ddp_fields: megatron/core/distributed/distributed_data_parallel_config.py; "
        "optimizer_fields: megatron/core/optimizer/optimizer_config.py",
        "generated_by": "scripts/megatron_fields.py",
        "fields": field_kinds(TransformerConfig),
        "ddp_fields": field_kinds(DistributedDataParallelConfig),
        "optimizer_fields": field_kinds(OptimizerConfig),
    }


def main() -> None:
    """Write the file; with --check, exit 1 if the shipped file differs from the installed megatron-core."""
    data = describe()
    minor = ".".join(data["megatron_core"].split(".")[:2])
    path = OUT / f"megatron_core_{minor}.json"
    text = json.dumps(data, indent=1, sort_keys=False) + "\n"
    if "--check" in sys.argv:
        current = path.read_text() if path.is_file() else ""
        shipped = json.loads(current or "{}")
        if any(shipped.get(k) != data[k] for k in ("fields", "ddp_fields", "optimizer_fields")):
            print(f"{path} is stale: run python scripts/megatron_fields.py")
            sys.exit(1)
        return
    path.write_text(text)
    print(f"wrote {path} ({len(data['fields'])} fields)")


if __name__ == "__main__":
    main()
