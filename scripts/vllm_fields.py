"""Regenerate verl_qwen35/data/upstream/vllm_<version>.json: the arguments `vllm serve` accepts.

verl's vLLM server turns `rollout.*` and `rollout.engine_kwargs.vllm.*` into `vllm serve` flags
(verl/workers/rollout/vllm_rollout/utils.py `build_cli_args_from_config`) and parses them with vLLM's own
serve parser (vllm_async_server.py `launch_server`): a key the parser does not know stops the server.
vLLM cannot be installed here, so its source is read without importing it: a wheel (`pip download
vllm==X --no-deps`) or an unpacked source tree. Names are the dataclass fields of `EngineArgs`,
`AsyncEngineArgs` and the frontend arguments, plus every `--flag` their `add_cli_args` / `make_arg_parser`
register (underscores, as verl writes them; vLLM's FlexibleArgumentParser takes both spellings).

    python scripts/vllm_fields.py vllm-0.24.0-cp38-abi3-manylinux_2_28_x86_64.whl
"""

import argparse
import ast
import json
import re
import sys
import zipfile
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "verl_qwen35" / "data" / "upstream"
FILES = ("vllm/engine/arg_utils.py", "vllm/entrypoints/openai/cli_args.py")
CLASSES = {"EngineArgs", "AsyncEngineArgs", "BaseFrontendArgs", "FrontendArgs"}


def read_sources(where: Path) -> dict[str, str]:
    """The files named in FILES plus vllm/_version.py, from a wheel or a source tree."""
    wanted = (*FILES, "vllm/_version.py")
    if where.is_file():
        with zipfile.ZipFile(where) as wheel:
            return {name: wheel.read(name).decode() for name in wanted if name in wheel.namelist()}
    return {name: (where / name).read_text() for name in wanted if (where / name).is_file()}


def serve_arg_names(sources: dict[str, str]) -> list[str]:
    names: set[str] = set()
    for name in FILES:
        tree = ast.parse(sources[name])
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "add_argument":
                flags = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
                names |= {f[2:].replace("-", "_") for f in flags if f.startswith("--")}
            if isinstance(node, ast.ClassDef) and node.name in CLASSES:
                for item in node.body:
                    named = isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name)
                    if named and not item.target.id.startswith("_"):
                        names.add(item.target.id)
    return sorted(names)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("source", type=Path, help="a vLLM wheel or an unpacked vLLM source tree")
    args = parser.parse_args(argv)
    sources = read_sources(args.source)
    missing = [name for name in FILES if name not in sources]
    if missing:
        print(f"{args.source}: no {', '.join(missing)}", file=sys.stderr)
        return 2
    found = re.search(r"__version__\s*=\s*version\s*=\s*'([^']+)'", sources.get("vllm/_version.py", ""))
    if not found:
        print(f"{args.source}: no vllm/_version.py with a release version", file=sys.stderr)
        return 2
    data = {
        "vllm": found.group(1),
        "source": "vllm-project/vllm at this release: "
        + ", ".join(FILES)
        + f" (fields of {', '.join(sorted(CLASSES))}; flags of add_cli_args and make_arg_parser)",
        "generated_by": "scripts/vllm_fields.py",
        "serve_args": serve_arg_names(sources),
    }
    out = OUT / f"vllm_{data['vllm']}.json"
    out.write_text(json.dumps(data, indent=1) + "\n")
    print(f"{out}: {len(data['serve_args'])} serve arguments")
    return 0


if __name__ == "__main__":
    sys.exit(main())
