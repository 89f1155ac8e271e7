"""override_transformer_config keys against megatron-core's TransformerConfig, read without importing it.

Importing megatron-core imports torch (seconds); the dataclass fields are plain annotated
assignments, so the installed source is parsed instead. tests/ compare the result with
`dataclasses.fields` of the real class.
"""

import ast
import difflib
import importlib.util
from functools import cache
from pathlib import Path

from omegaconf import DictConfig

from verl_qwen35.checks.problem import Problem, error, warning

# Keys MindSpeed adds on Ascend; stock megatron-core's TransformerConfig has none of them.
MINDSPEED_KEYS = frozenset(
    {
        "use_flash_attn",
        "use_naive_l2norm",
        "use_ascend_gdn",
        "use_triton_gdn",
        "use_fused_rmsnorm",
        "context_parallel_algo",
    }
)
_SOURCES = {
    "TransformerConfig": "transformer/transformer_config.py",
    "ModelParallelConfig": "model_parallel_config.py",
}


def _core_dir() -> Path | None:
    spec = importlib.util.find_spec("megatron")
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        core = Path(location) / "core"
        if (core / _SOURCES["TransformerConfig"]).is_file():
            return core
    return None


def _class_fields(source: Path, name: str) -> tuple[set[str], list[str]]:
    for node in ast.parse(source.read_text()).body:
        if isinstance(node, ast.ClassDef) and node.name == name:
            fields = {s.target.id for s in node.body if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)}
            bases = [b.id for b in node.bases if isinstance(b, ast.Name)]
            return fields, bases
    raise LookupError(f"class {name} not found in {source}")


@cache
def transformer_config_fields() -> frozenset[str] | None:
    """Field names of TransformerConfig and its dataclass bases, or None without megatron-core."""
    core = _core_dir()
    if core is None:
        return None
    fields: set[str] = set()
    pending = ["TransformerConfig"]
    while pending:
        name = pending.pop()
        own, bases = _class_fields(core / _SOURCES[name], name)
        fields |= own
        pending += [b for b in bases if b in _SOURCES]
    return frozenset(fields)


def override_key_problems(cfg: DictConfig, device: str, fields: frozenset[str] | None) -> list[Problem]:
    key = "megatron.override_transformer_config"
    overrides = list(cfg.megatron.override_transformer_config)
    if fields is None:
        return [warning(key, "megatron-core is not installed here; override_transformer_config keys not checked")]
    valid = fields | MINDSPEED_KEYS if device == "npu" else fields
    found = []
    for name in overrides:
        if name in valid:
            continue
        if name in MINDSPEED_KEYS:
            found.append(
                error(
                    f"{key}.{name}",
                    f"is a MindSpeed (Ascend) key; stock megatron-core on {device} rejects it. "
                    f"Remove it with ~{key}.{name} or use device=npu",
                )
            )
            continue
        close = difflib.get_close_matches(name, sorted(valid), n=1, cutoff=0.6)
        hint = f"; did you mean {close[0]}?" if close else ""
        found.append(error(f"{key}.{name}", f"is not a field of megatron-core's TransformerConfig{hint}"))
    return found


DTYPES = ("bfloat16", "float16")


def patch_value_problems(cfg: DictConfig) -> list[Problem]:
    found = []
    if not cfg.megatron.use_mbridge:
        found.append(
            error("megatron.use_mbridge", "must be true: verl's Megatron engine builds Qwen3.5 through mbridge")
        )
    if cfg.megatron.dtype not in DTYPES:
        found.append(error("megatron.dtype", f"={cfg.megatron.dtype!r}: verl's Megatron engine takes one of {DTYPES}"))
    return found
