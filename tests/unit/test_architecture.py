"""The package's shape, read from its imports: layers by stage, no circle, no private API, no pickle.

Data flows one way (argv -> config -> checks -> plan / run); a module may import its own layer and the
layers below it, never one above.
"""

import ast
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "verl_qwen35"
# Lowest first. A module's layer is its subpackage's (top-level modules by name).
LAYERS = [
    {"errors", "installed", "verl_release", "shell", "data", "disk", "terminal"},
    {"config"},
    {"records"},  # the run records' formats (launch.yaml, verdict.json, the sweep summary, metrics files)
    {"model"},
    {"checks"},
    {"builder"},  # the one builder of a Run: the job, the API and every planner candidate
    {"planner", "validators"},
    {"run"},  # writes the records (records/) and never draws
    {"review"},  # reads those records (records/), never run/: diff, report, plots, the layout picture
    {"imports"},
    {"cli"},
    {"__init__", "__main__"},
]
# Layers that may not import one another although one sits above the other: what review/ reads of a run is
# its records (records/), never the code that ran it.
APART = {"review": "run"}
PRIVATE = ("hydra._internal", "omegaconf._utils", "omegaconf.grammar_parser", "ray._private", "yaml._yaml")


def _layer(part: str) -> int:
    return next(i for i, names in enumerate(LAYERS) if part in names)


def _modules() -> dict[str, ast.Module]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE).with_suffix("").parts
        name = ".".join(("verl_qwen35", *parts)).removesuffix(".__init__")
        found[name] = ast.parse(path.read_text(), filename=str(path))
    return found


def _imports(tree: ast.Module) -> list[tuple[str, int]]:
    """(module, line) of every import, at any depth."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            out.append((node.module, node.lineno))
            if node.module == "verl_qwen35":  # `from verl_qwen35 import x` names a module or the API
                out += [(f"verl_qwen35.{alias.name}", node.lineno) for alias in node.names]
    return out


MODULES = _modules()


def _top(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


@pytest.mark.parametrize("name", sorted(MODULES))
def test_no_module_imports_a_layer_above_its_own(name):
    own = _layer(_top(name)) if name != "verl_qwen35" else _layer("__init__")
    upward = [
        f"line {line}: {module}"
        for module, line in _imports(MODULES[name])
        if module.startswith("verl_qwen35.") and _top(module) != _top(name) and _layer(_top(module)) > own
    ]
    assert not upward, f"{name} imports upward: {upward}"


@pytest.mark.parametrize(("layer", "apart"), sorted(APART.items()))
def test_review_imports_no_run_module(layer, apart):
    """review/ reads a run through records/ (launch.yaml, verdict.json, the sweep summary, the metrics files)."""
    found = [
        f"{name} line {line}: {module}"
        for name, tree in MODULES.items()
        if name != "verl_qwen35" and _top(name) == layer
        for module, line in _imports(tree)
        if module.startswith("verl_qwen35.") and _top(module) == apart
    ]
    assert not found, f"{layer}/ imports {apart}/: {found}"


@pytest.mark.parametrize("name", sorted(MODULES))
def test_no_private_api_and_no_pickle(name):
    bad = [
        f"line {line}: {module}"
        for module, line in _imports(MODULES[name])
        if module.startswith(PRIVATE) or module in ("pickle", "cPickle", "dill", "marshal")
    ]
    assert not bad, f"{name}: {bad}"


def test_no_import_circle():
    graph = {
        name: {m for m, _ in _imports(tree) if m in MODULES and m != name}
        for name, tree in MODULES.items()
        if name != "verl_qwen35"  # the public API imports the layers; nothing imports it back
    }
    seen: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(node: str, path: list[str]) -> None:
        seen[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if seen.get(nxt) == 1:
                cycle = [*path[path.index(nxt) :], nxt] if nxt in path else [node, nxt]
                pytest.fail(f"import circle: {' -> '.join(cycle)}")
            if nxt not in seen:
                visit(nxt, [*path, nxt])
        seen[node] = 2

    for start in sorted(graph):
        if start not in seen:
            visit(start, [start])


def test_importing_the_package_changes_nothing_outside_it(tmp_path):
    """Hydra's, OmegaConf's, PyYAML's and the collector's state is the same before and after the import."""
    import subprocess

    probe = tmp_path / "probe.py"
    probe.write_text(
        "import gc, yaml, hydra, omegaconf\n"
        "from hydra.core.config_store import ConfigStore\n"
        "from hydra.core.plugins import Plugins\n"
        "from omegaconf import OmegaConf\n"
        "def state():\n"
        "    mods = [m for m in list(__import__('sys').modules.values())\n"
        "            if getattr(m, '__name__', '').split('.')[0] in ('hydra', 'omegaconf', 'yaml')]\n"
        "    attrs = {(m.__name__, k): id(v) for m in mods for k, v in list(vars(m).items()) if callable(v)}\n"
        "    return attrs, repr(ConfigStore.instance().repo), gc.get_threshold(), gc.isenabled()\n"
        "before = state()\n"
        "import verl_qwen35\n"
        "after = state()\n"
        "changed = sorted(k for k in before[0] if k in after[0] and before[0][k] != after[0][k])\n"
        "assert not changed, changed\n"
        "assert before[1:] == after[1:], 'ConfigStore, gc or OmegaConf changed'\n"
        "for name in ('verl_qwen35.verl_config_dir', 'verl_qwen35.run_id'):\n"
        "    assert not OmegaConf.has_resolver(name), name\n"
        "print('unchanged')\n"
    )
    done = subprocess.run([sys.executable, str(probe)], capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 0 and "unchanged" in done.stdout, done.stderr
