"""Read, from verl's own source, the config keys each function on verl's start-up path reads.

    python scripts/trace_startup.py            # print the trace of the installed verl (YAML)
    python scripts/trace_startup.py --write    # refresh verl_qwen35/data/startup_trace.yaml
    python scripts/trace_startup.py --check    # exit 1 when the data file's keys or lines differ from the source
    python scripts/trace_startup.py --discover # functions of the traced files that read the config, not yet listed

The path (`main_ppo.main` -> `run_ppo` -> `TaskRunnerV1.run` -> the v1 trainer's `__init__`/`init`/`fit`, the
legacy `RayPPOTrainer`, the workers' `init_model` up to the Megatron engine's first device call, the agent-loop
and reward-loop set-up, the first step) is the list of functions in the data file; what each names is read here
by AST: attribute chains from a name that holds a config node (`config.algorithm.kl_ctrl.type`,
`self.config.trainer.x`), `.get("x")`, `["x"]`, `OmegaConf.select(node, "a.b")` and local aliases
(`algo = self.config.algorithm`). Which names hold which node is ROOTS below (a fact of verl's code, read once:
`ActorRolloutRefWorker(config=config.actor_rollout_ref)`, ...). The judgments (`cpu`, `full`, `why_not`) are
written by a person and kept across a refresh; a function new to the list comes with `cpu: null`.
"""

import argparse
import ast
import functools
import importlib.util
import sys
from pathlib import Path

import yaml

LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml where installed: the generated config is long
DATA = Path(__file__).resolve().parents[1] / "verl_qwen35" / "data" / "startup_trace.yaml"
TOP = "config", "self.config"
ACTOR_ENGINE = {
    "self.model_config": "actor_rollout_ref.model",
    "self.engine_config": "actor_rollout_ref.actor.megatron",
    "self.optimizer_config": "actor_rollout_ref.actor.optim",
    "self.checkpoint_config": "actor_rollout_ref.actor.checkpoint",
    "model_config": "actor_rollout_ref.model",
    "engine_config": "actor_rollout_ref.actor.megatron",
    "optimizer_config": "actor_rollout_ref.actor.optim",
}
# file -> scope (a class name, or "*" for every other scope) -> name -> the config node it holds.
ROOTS: dict[str, dict[str, dict[str, str]]] = {
    "trainer/main_ppo.py": {"*": dict.fromkeys(TOP, "")},
    "trainer/main_ppo_v0.py": {"*": dict.fromkeys(TOP, "")},
    "trainer/constants_ppo.py": {"*": dict.fromkeys(TOP, "")},
    "trainer/ppo/utils.py": {
        "*": {**dict.fromkeys(TOP, ""), "data_config": "data"},
        "create_rl_dataset": {"data_config": "data"},
    },
    "trainer/ppo/v1/trainer_base.py": {"*": dict.fromkeys(TOP, "")},
    "trainer/ppo/v1/trainer_sync.py": {"*": dict.fromkeys(TOP, "")},
    "trainer/ppo/v1/agent_loop_tq.py": {"*": dict.fromkeys(TOP, "")},
    "trainer/ppo/v1/utils.py": {"*": {"config": "algorithm"}},
    "trainer/ppo/checkpoint_callback.py": {"*": dict.fromkeys(TOP, "")},
    "trainer/ppo/ray_trainer.py": {
        "*": dict.fromkeys(TOP, ""),
        "compute_advantage": {"config": "algorithm"},
        "apply_kl_penalty": {},
    },
    "trainer/ppo/core_algos.py": {"*": {"kl_ctrl": "algorithm.kl_ctrl", "config": "actor_rollout_ref.actor"}},
    "trainer/ppo/reward.py": {"*": dict.fromkeys(TOP, "")},
    "trainer/ppo/rollout_corr_helper.py": {"*": {"rollout_corr_config": "algorithm.rollout_correction"}},
    "utils/config.py": {"*": dict.fromkeys(TOP, "")},
    "utils/device.py": {"*": dict.fromkeys(TOP, "")},
    "utils/rollout_skip.py": {"*": {"config": "", "self.config": "", "cls.config": ""}},
    "utils/tracking.py": {"*": {}},
    "experimental/reward_loop/reward_loop.py": {"*": dict.fromkeys(TOP, "")},
    "experimental/agent_loop/agent_loop.py": {
        "*": {**dict.fromkeys(TOP, ""), "self.rollout_config": "actor_rollout_ref.rollout"},
    },
    "workers/engine_workers.py": {
        "*": dict.fromkeys(TOP, "actor_rollout_ref"),
        # TrainingWorkerConfig: verl's own object, built from the actor's nodes in init_model
        "TrainingWorker": {
            "self.config.model_config": "actor_rollout_ref.model",
            "self.config.engine_config": "actor_rollout_ref.actor.megatron",
            "self.config.optimizer_config": "actor_rollout_ref.actor.optim",
            "self.config.checkpoint_config": "actor_rollout_ref.actor.checkpoint",
            **ACTOR_ENGINE,
        },
    },
    "workers/engine/megatron/transformer_impl.py": {"*": ACTOR_ENGINE},
}
DICT_METHODS = {"get", "items", "keys", "values", "pop", "setdefault", "copy", "update", "to_container"}


def verl_root() -> Path:
    spec = importlib.util.find_spec("verl")
    if spec is None or not spec.submodule_search_locations:
        sys.exit("verl is not installed in this Python")
    return Path(next(iter(spec.submodule_search_locations)))


class Reads(ast.NodeVisitor):
    """The dotted config keys one function reads and writes, given the names that hold config nodes."""

    def __init__(self, roots: dict[str, str]) -> None:
        self.aliases = dict(roots)
        self.read: set[str] = set()
        self.optional: set[str] = set()  # read with `.get(name, default)` or `OmegaConf.select`: may be absent
        self.written: set[str] = set()

    def key(self, node: ast.AST) -> str | None:
        """The config key an expression stands for, or None."""
        text = ast.unparse(node)
        if text in self.aliases:
            return self.aliases[text]
        if isinstance(node, ast.Attribute):
            base = self.key(node.value)
            if base is not None and node.attr not in DICT_METHODS:
                return f"{base}.{node.attr}".lstrip(".")
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
            base = self.key(node.value)
            if base is not None and isinstance(node.slice.value, str):
                return f"{base}.{node.slice.value}".lstrip(".")
        if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            name = node.args[0].value
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr == "get" and isinstance(name, str):
                base = self.key(func.value)
                if base is not None:
                    return f"{base}.{name}".lstrip(".")
        if isinstance(node, ast.Call) and ast.unparse(node.func) == "OmegaConf.select" and len(node.args) == 2:
            base, name = self.key(node.args[0]), node.args[1]
            if base is not None and isinstance(name, ast.Constant) and isinstance(name.value, str):
                return f"{base}.{name.value}".lstrip(".")
        return None

    def visit_Assign(self, node: ast.Assign) -> None:
        self.generic_visit(node)
        value = self.key(node.value)
        for target in node.targets:
            if isinstance(target, ast.Name | ast.Attribute) and value is not None:
                self.aliases[ast.unparse(target)] = value
            elif isinstance(target, ast.Attribute | ast.Subscript):
                written = self.key(target)
                if written:
                    self.written.add(written)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self.generic_visit(node)
        if node.value is not None and (value := self.key(node.value)) is not None:
            self.aliases[ast.unparse(node.target)] = value

    def visit_Attribute(self, node: ast.Attribute) -> None:
        self._note(node)

    def visit_Subscript(self, node: ast.Subscript) -> None:
        self._note(node)

    def visit_Call(self, node: ast.Call) -> None:
        if not self._note(node):
            self.generic_visit(node)

    def _note(self, node: ast.AST) -> bool:
        found = self.key(node)
        if found:
            self.read.add(found)
            if isinstance(node, ast.Call):
                self.optional.add(found)  # the arguments of `.get("x", default)` may read more
                for arg in [*node.args[1:], *(k.value for k in node.keywords)]:
                    self.visit(arg)
            return True
        self.generic_visit(node)
        return False


@functools.cache
def verl_keys() -> dict[str, bool]:
    """Every key of verl's generated Megatron trainer config and its legacy reward keys -> whether it is a node."""
    folder = verl_root() / "trainer" / "config"
    tree = yaml.load((folder / "_generated_ppo_megatron_trainer.yaml").read_text(), Loader=LOADER)
    legacy = folder / "legacy_reward_impl.yaml"
    if legacy.is_file():
        tree = {**(yaml.safe_load(legacy.read_text()) or {}), **tree}
    found: dict[str, bool] = {}

    def walk(node: object, prefix: str) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                name = f"{prefix}{key}"
                found[name] = isinstance(value, dict)
                walk(value, f"{name}.")

    walk(tree, "")
    return found


def normalised(key: str, known: dict[str, bool], optional: bool = False) -> str | None:
    """A read as a config key: itself when verl's config has it; its leaf when the rest is a method of the value
    (`trainer.resume_from_path.split`); itself when only its last part is missing from a node (an optional key
    read with `.get`: `rollout.agent.agent_loop_manager_class`); else None (an attribute of verl's own objects)."""
    if key in known:
        return key
    parts = key.split(".")
    for size in range(len(parts) - 1, 0, -1):
        prefix = ".".join(parts[:size])
        if prefix in known:
            if not known[prefix]:
                return prefix
            return key if optional and size == len(parts) - 1 and size > 1 else None
    return None


def leaves(keys: set[str]) -> list[str]:
    """Drop a key another key extends (`algorithm` when `algorithm.kl_ctrl` is read) and the root itself."""
    return sorted(k for k in keys if k and not any(o.startswith(k + ".") for o in keys))


def functions(tree: ast.Module):
    """(qualified name, node) of each function, methods as Class.method."""
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            yield node.name, None, node
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                    yield f"{node.name}.{item.name}", node, item


def class_roots(cls: ast.ClassDef, roots: dict[str, str]) -> dict[str, str]:
    """`self.x = <config node>` anywhere in the class holds that node in every method."""
    found = dict(roots)
    for _ in range(2):  # an alias made from an alias
        for item in ast.walk(cls):
            if isinstance(item, ast.Assign) and len(item.targets) == 1:
                target = ast.unparse(item.targets[0])
                if target.startswith("self.") and target not in found:
                    value = Reads(found).key(item.value)
                    if value is not None:
                        found[target] = value
    return found


def trace_file(relative: str) -> dict[str, dict]:
    """function -> {line, keys, writes} for each function of one verl file that reads the config."""
    scopes = ROOTS[relative]
    tree = ast.parse((verl_root() / relative).read_text())
    found: dict[str, dict] = {}
    by_class: dict[tuple[str, str], dict[str, str]] = {}
    for name, cls, node in functions(tree):
        scope = next((s for s in (name.split(".")[0], name.split(".")[-1]) if s in scopes), "*")
        roots = dict(scopes[scope])  # a class's own roots replace the file's
        if cls is not None:
            if (cls.name, scope) not in by_class:
                by_class[(cls.name, scope)] = class_roots(cls, roots)
            roots = by_class[(cls.name, scope)]
        reads = Reads(roots)
        for statement in node.body:
            reads.visit(statement)
        known = verl_keys()
        keys = leaves({n for k in reads.read if (n := normalised(k, known, k in reads.optional))})
        written = {n for k in reads.written if (n := normalised(k, known))}
        if keys or written:
            found[name] = {"line": node.lineno, "keys": keys, "writes": sorted(written)}
    return found


def traced() -> dict[tuple[str, str], dict]:
    out = {}
    for relative in ROOTS:
        if (verl_root() / relative).is_file():
            for name, entry in trace_file(relative).items():
                out[(f"verl/{relative}", name)] = entry
    return out


def load() -> dict:
    return yaml.safe_load(DATA.read_text()) if DATA.is_file() else {"functions": []}


def refreshed(data: dict, found: dict[tuple[str, str], dict]) -> tuple[dict, list[str]]:
    """The data file with keys and lines read from the source; what changed, as lines of text."""
    changes = []
    for entry in data["functions"]:
        now = found.get((entry["verl_file"], entry["function"]))
        if now is None:
            changes.append(f"{entry['verl_file']} {entry['function']}: no longer reads the config (or is gone)")
            continue
        for field in ("line", "keys", "writes"):
            if entry.get(field, []) != now[field] and not (field == "writes" and not now[field]):
                changes.append(f"{entry['verl_file']}:{now['line']} {entry['function']} {field}: {now[field]}")
            entry[field] = now[field]
        if not entry["writes"]:
            entry.pop("writes")
    return data, changes


def dump(data: dict) -> str:
    return yaml.safe_dump(data, sort_keys=False, width=118, allow_unicode=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    action = parser.add_mutually_exclusive_group()
    action.add_argument("--write", action="store_true")
    action.add_argument("--check", action="store_true")
    action.add_argument("--discover", action="store_true")
    args = parser.parse_args()
    found = traced()
    data = load()
    if args.discover:
        listed = {(e["verl_file"], e["function"]) for e in data["functions"]}
        for (file, name), entry in sorted(found.items()):
            if (file, name) not in listed:
                print(f"{file}:{entry['line']} {name}: {', '.join(entry['keys'])}")
        return 0
    data, changes = refreshed(data, found)
    if args.check:
        print("\n".join(changes) or "the trace matches the installed verl")
        return 1 if changes else 0
    if args.write:
        DATA.write_text(_keep_comments(DATA.read_text(), dump(data)) if DATA.is_file() else dump(data))
        print("\n".join(changes) or "unchanged")
        return 0
    print(dump(data))
    return 0


def _keep_comments(old: str, new: str) -> str:
    """The data file's leading comment block stays above the refreshed data."""
    lines = old.splitlines(keepends=True)
    comments = "".join(lines[: next((i for i, x in enumerate(lines) if not x.startswith("#")), 0)])
    return comments + new


if __name__ == "__main__":
    sys.exit(main())
