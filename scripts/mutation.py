"""Mutation score of verl_qwen35/: small bugs made one at a time; the fast tests must catch each.

    PYTHONPATH=$PWD .venv-verl0.9/bin/python scripts/mutation.py [MODULE_GLOB ...] [--jobs 2]

An AST mutator of our own (no extra dependency): boundary and negated comparisons, and/or
swapped, `not` dropped, arithmetic swapped, numbers moved by one, booleans flipped, config
key strings changed, one element dropped from a literal list/tuple/set/dict, one statement
of a function body replaced by `pass`. Each mutant is written into a private copy of the
tree and the module's own test files run against it in a forked child of a process that
has already imported the heavy libraries (torch, megatron, verl, hydra), so a mutant costs
only its tests. Subprocess-heavy tests are deselected where an in-process test covers the
same code; Ray tests are not run per mutant (see `--ray`, which runs the mutant the issue
names, `runtime_env` stripped from every `ray.init`, against the Ray tests).

Survivors listed in scripts/mutation_equivalent.txt (`<mutant id> | <why it is equivalent>`)
are reported as equivalent; the score is killed / (total - equivalent) per module.
`--sample N` runs at most N mutants per module, drawn with a fixed seed (`--seed`, default 0) so a
rerun draws the same ones; the table then labels the score "sampled n/N" and it is an estimate.

Exit 1 when any non-equivalent mutant survives in a module listed in TARGET_MODULES below
under 90%, so the script can gate a release.
"""

import argparse
import ast
import fnmatch
import hashlib
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "verl_qwen35"
EQUIVALENT_FILE = ROOT / "scripts" / "mutation_equivalent.txt"
TARGET_MODULES = ("checks/*", "environment.py", "sweep.py", "diff.py", "relaunch.py")
TARGET_SCORE = 0.90
MAX_EXAMPLES = 100  # per property test and mutant; see _cap_hypothesis
UNCAPPED = ("tests.test_differential",)  # asserts how many draws it compared

# Test files per module (first match wins), fastest and most specific first; pytest runs them
# with -x, so a killed mutant stops at its first failing test.
TESTS = {
    "checks/layout.py": [
        "test_rules.py",
        "test_layout_rules.py",
        "test_differential.py",
        "test_preflight.py",
        "test_estimate.py",  # Layout is the estimate's and the planner's input too
        "test_layouts.py",
    ],
    "checks/pipeline.py": [
        "test_pipeline_grid.py",
        "test_rules.py",
        "test_layout_rules.py",
        "test_differential.py",
        "test_override_rules.py",
    ],
    "checks/rollout.py": ["test_rules.py", "test_layout_rules.py", "test_preflight.py"],
    "checks/parity.py": ["test_parity_every_key.py", "test_parity.py", "test_preflight.py", "test_composition.py"],
    "checks/megatron_keys.py": ["test_rules.py", "test_megatron_keys.py", "test_preflight.py"],
    "checks/files.py": ["test_rules.py", "test_machine_checks.py"],
    "checks/machine.py": ["test_launch_checks.py"],
    "checks/submit.py": ["test_rules.py", "test_new_command_faults.py"],  # the latter: one case per submit.* rule
    "checks/transformer.py": [
        "test_transformer_table.py",  # every rule, both sides, exact problems; the real TransformerConfig
        "test_rules.py",
        "test_override_rules.py",
        "test_differential.py",
        "test_megatron_keys.py",
        "test_preflight.py",
        "test_parity_every_key.py",
        "test_layout_rules.py",
    ],
    "checks/*": [
        "test_rules.py",
        "test_layout_rules.py",
        "test_parity_every_key.py",
        "test_parity.py",
        "test_megatron_keys.py",
        "test_preflight.py",
        "test_override_rules.py",
        "test_differential.py",
    ],
    "environment.py": ["test_env_rules.py", "test_environment.py", "test_secrets.py"],
    "secret_scan.py": ["test_secrets.py", "test_environment.py"],
    "sweep.py": ["test_sweep_rules.py", "test_sweep.py"],
    "relaunch.py": ["test_relaunch_rules.py", "test_relaunch.py"],
    "launch_record.py": ["test_relaunch_rules.py", "test_relaunch.py"],
    "diff.py": ["test_diff_sections.py", "test_diff.py"],
    "app.py": ["test_sweep_rules.py", "test_relaunch_rules.py", "test_machine_checks.py", "test_preflight.py"],
    "choices.py": ["test_device_detection.py", "test_choices.py"],
    "__main__.py": ["test_entrypoint_args.py", "test_choices.py"],
    "data.py": ["test_data_command.py"],
    "flat.py": ["test_composition.py", "test_diff.py"],
    "compose.py": ["test_composition.py"],
    "paths.py": ["test_composition.py"],
    "versions.py": ["test_diff.py", "test_golden.py"],
    "verl_check.py": ["test_machine_checks.py"],
    "plan.py": ["test_machine_checks.py"],
}
# Tests that start Ray, build wheels or take >5 s in a subprocess where an in-process test covers
# the same code. They stay in the suite; they are only not rerun for every mutant.
NEVER_PER_MUTANT = ("test_forwarding.py", "test_env_delivery.py", "test_wheel.py")
DESELECT = (
    "tests/test_machine_checks.py::test_full_dry_run_runs_verls_validate_config",
    "tests/test_sweep.py::test_all_valid_sweep_exits_0_and_jobs_get_their_own_checkpoint_dirs",
    # SIGINT to a real multirun; waits on other jobs' timing, so on a loaded machine it fails unmutated.
    # test_sweep_rules.py::test_ctrl_c_marks_this_sweeps_running_jobs_interrupted_... covers the code in-process.
    "tests/test_sweep.py::test_ctrl_c_writes_the_summary_of_finished_jobs_and_marks_the_rest",
)
# Imported once by the parent; a forked child then pays only for its tests.
HEAVY = (
    "omegaconf",
    "hydra",
    "hydra.compose",
    "hydra.core.global_hydra",
    "hydra.experimental.callback",
    "pytest",
    "hypothesis",
    "pyarrow.parquet",
    "torch",
    "megatron.core",
    "megatron.core.transformer.transformer_config",
    "verl",
    "verl.utils.config",
    "verl.trainer.ppo.utils",
)


@dataclass(frozen=True)
class Mutant:
    module: str  # path relative to the package, e.g. checks/layout.py
    line: int
    kind: str
    before: str
    after: str
    start: tuple[int, int]
    end: tuple[int, int]
    replacement: str
    ident: str = ""

    def describe(self) -> str:
        return f"{self.module}:{self.line} {self.kind}: {self.before!r} -> {self.after!r}"


# --- making mutants ----------------------------------------------------------------------------------

COMPARE_SWAP = {
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
}
BINOP_SWAP = {
    ast.Add: ast.Sub,
    ast.Sub: ast.Add,
    ast.Mult: ast.Add,
    ast.FloorDiv: ast.Mult,
    ast.Div: ast.Mult,
    ast.Mod: ast.FloorDiv,
}
KEY_LIKE = re.compile(r"^[A-Za-z_][A-Za-z0-9_.]{1,60}$")
SKIPPED_CALLS = {"print", "warn", "ArgumentParser", "add_argument"}  # text for people


def _short(text: str, limit: int = 70) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


class _Finder(ast.NodeVisitor):
    def __init__(self, source: str, module: str) -> None:
        self.source = source
        self.module = module
        self.found: list[tuple[str, Mutant]] = []
        self.scope: list[str] = []
        self.skip_depth = 0  # inside an f-string, an annotation, a docstring or a text-only call

    # scope names make mutant ids stable when unrelated lines move
    def _scoped(self, node: ast.AST) -> None:
        self.scope.append(node.name)  # type: ignore[attr-defined]
        for default in [*node.args.defaults, *node.args.kw_defaults] if hasattr(node, "args") else []:
            if default is not None:
                self.visit(default)
        self._body(node.body, in_function=isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef))
        for decorator in node.decorator_list:  # type: ignore[attr-defined]
            self.visit(decorator)
        self.scope.pop()

    visit_FunctionDef = visit_AsyncFunctionDef = visit_ClassDef = _scoped

    def visit_Module(self, node: ast.Module) -> None:
        self._body(node.body, in_function=False)

    def _body(self, body: list[ast.stmt], in_function: bool) -> None:
        for index, stmt in enumerate(body):
            is_docstring = index == 0 and isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)
            if is_docstring:
                continue
            if isinstance(stmt, ast.If) and _is_main_guard(stmt):
                continue
            if in_function and not isinstance(stmt, ast.Pass | ast.FunctionDef | ast.ClassDef | ast.Global):
                self._add(stmt, "statement removed", "pass", before=_short(ast.unparse(stmt).split("\n")[0]))
            self.visit(stmt)

    def generic_visit(self, node: ast.AST) -> None:
        for name, value in ast.iter_fields(node):
            nested_block = name in ("body", "orelse", "finalbody") and isinstance(value, list) and value
            if nested_block and isinstance(value[0], ast.stmt) and self.scope:  # a block inside a function
                self._body(value, in_function=True)
                continue
            if isinstance(value, list):
                for item in value:
                    if isinstance(item, ast.AST):
                        self.visit(item)
            elif isinstance(value, ast.AST) and name not in ("annotation", "returns"):
                self.visit(value)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is not None:
            self.visit(node.value)

    def visit_arg(self, node: ast.arg) -> None:
        return

    def visit_JoinedStr(self, node: ast.JoinedStr) -> None:
        return  # messages: the targeted tests assert reasons, but mutating prose is noise

    def visit_Call(self, node: ast.Call) -> None:
        name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        if name in SKIPPED_CALLS:
            return
        self.generic_visit(node)

    def visit_Compare(self, node: ast.Compare) -> None:
        for i, op in enumerate(node.ops):
            if type(op) in COMPARE_SWAP:
                ops = [*node.ops]
                ops[i] = COMPARE_SWAP[type(op)]()
                self._expr(node, ast.Compare(node.left, ops, node.comparators), "comparison")
        self.generic_visit(node)

    def visit_BoolOp(self, node: ast.BoolOp) -> None:
        other = ast.Or() if isinstance(node.op, ast.And) else ast.And()
        self._expr(node, ast.BoolOp(other, node.values), "and/or")
        self.generic_visit(node)

    def visit_UnaryOp(self, node: ast.UnaryOp) -> None:
        if isinstance(node.op, ast.Not):
            self._expr(node, node.operand, "not dropped")
        elif isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant):
            self._expr(node, node.operand, "sign dropped")
            return
        self.generic_visit(node)

    def visit_BinOp(self, node: ast.BinOp) -> None:
        if type(node.op) in BINOP_SWAP and not _is_text(node):
            self._expr(node, ast.BinOp(node.left, BINOP_SWAP[type(node.op)](), node.right), "arithmetic")
        self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        value = node.value
        if isinstance(value, bool):
            self._expr(node, ast.Constant(not value), "boolean")
        elif isinstance(value, int):
            self._expr(node, ast.Constant(value + 1), "number")
        elif isinstance(value, str) and KEY_LIKE.match(value):
            self._expr(node, ast.Constant(value + "_X"), "key string")

    def _collection(self, node: ast.List | ast.Tuple | ast.Set) -> None:
        if not isinstance(getattr(node, "ctx", ast.Load()), ast.Load):
            return
        if 1 <= len(node.elts) <= 30 and not any(isinstance(e, ast.Starred) for e in node.elts):
            for i, element in enumerate(node.elts):
                rest = [e for j, e in enumerate(node.elts) if j != i]
                smaller = type(node)(rest, ast.Load()) if not isinstance(node, ast.Set) else ast.Set(rest)
                if isinstance(node, ast.Set) and not rest:
                    smaller = ast.Call(ast.Name("set", ast.Load()), [], [])
                self._expr(node, smaller, f"element dropped ({_short(ast.unparse(element), 40)})")
        self.generic_visit(node)

    visit_List = visit_Tuple = visit_Set = _collection

    def visit_Dict(self, node: ast.Dict) -> None:
        if 1 <= len(node.keys) <= 30 and all(k is not None for k in node.keys):
            for i, key in enumerate(node.keys):
                keys = [k for j, k in enumerate(node.keys) if j != i]
                values = [v for j, v in enumerate(node.values) if j != i]
                self._expr(node, ast.Dict(keys, values), f"entry dropped ({_short(ast.unparse(key), 40)})")
        self.generic_visit(node)

    def _expr(self, node: ast.expr, new: ast.expr, kind: str) -> None:
        self._add(node, kind, f"({ast.unparse(new)})", before=_short(ast.unparse(node)), after=ast.unparse(new))

    def _add(self, node: ast.AST, kind: str, replacement: str, before: str, after: str = "pass") -> None:
        scope = ".".join(self.scope) or "<module>"
        mutant = Mutant(
            module=self.module,
            line=node.lineno,  # type: ignore[attr-defined]
            kind=kind,
            before=before,
            after=_short(after),
            start=(node.lineno, node.col_offset),  # type: ignore[attr-defined]
            end=(node.end_lineno, node.end_col_offset),  # type: ignore[attr-defined]
            replacement=replacement,
        )
        self.found.append((f"{self.module}::{scope}::{kind}: {mutant.before} -> {mutant.after}", mutant))


def _is_main_guard(stmt: ast.If) -> bool:
    return "__name__" in ast.unparse(stmt.test)


def _is_text(node: ast.BinOp) -> bool:
    return any(
        isinstance(side, ast.Constant | ast.JoinedStr) and isinstance(getattr(side, "value", ""), str)
        for side in (node.left, node.right)
    )


def mutants_of(path: Path, module: str) -> list[Mutant]:
    source = path.read_text()
    finder = _Finder(source, module)
    finder.visit(ast.parse(source))
    seen: dict[str, int] = {}
    result = []
    for ident, mutant in finder.found:
        count = seen.get(ident, 0)
        seen[ident] = count + 1
        unique = ident if count == 0 else f"{ident} #{count + 1}"
        mutated = apply(source, mutant)
        try:
            compile(mutated, str(path), "exec")
        except SyntaxError:
            continue
        result.append(Mutant(**{**mutant.__dict__, "ident": unique}))
    return result


def apply(source: str, mutant: Mutant) -> str:
    lines = source.splitlines(keepends=True)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line.encode()))
    raw = source.encode()
    start = offsets[mutant.start[0] - 1] + mutant.start[1]
    end = offsets[mutant.end[0] - 1] + mutant.end[1]
    return (raw[:start] + mutant.replacement.encode() + raw[end:]).decode()


# --- running them -------------------------------------------------------------------------------------


def tests_for(module: str) -> list[str]:
    """The module's test files from TESTS (first matching pattern), else the test files naming it."""
    files = next((files for pattern, files in TESTS.items() if fnmatch.fnmatch(module, pattern)), None)
    if files is None:
        dotted = f"{PACKAGE}.{module.removesuffix('.py').replace('/', '.')}"
        files = [p.name for p in sorted((ROOT / "tests").glob("test_*.py")) if dotted in p.read_text()]
    return [f"tests/{f}" for f in files if (ROOT / "tests" / f).is_file() and f not in NEVER_PER_MUTANT]


def make_copy(index: int) -> Path:
    """A private tree per worker; bytecode is never written, so a mutant is always recompiled."""
    copy = Path(tempfile.mkdtemp(prefix=f"mut{index}_", dir="/tmp"))
    for name in ("verl_qwen35", "hydra_plugins", "conf", "tests", "golden", "scripts", "pyproject.toml", "README.md"):
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, copy / name, ignore=shutil.ignore_patterns("__pycache__", ".hypothesis"))
        elif source.exists():
            shutil.copy2(source, copy / name)
    return copy


def run_child(copy: Path, args: list[str], log: Path, env: dict[str, str] | None = None) -> None:
    """In the forked child: run pytest `args` against the tree in `copy`; exit with pytest's code."""
    sys.dont_write_bytecode = True
    os.chdir(copy)
    os.environ.update(env or {})
    os.environ["PYTHONPATH"] = str(copy)  # subprocess tests run the mutant too
    os.environ["PYTHONDONTWRITEBYTECODE"] = "1"
    os.environ["RAY_ADDRESS"] = "local"
    sys.path[:] = [str(copy), str(copy / "scripts"), *[p for p in sys.path if Path(p or ".").resolve() != ROOT]]
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    _cap_hypothesis(MAX_EXAMPLES)
    import pytest

    code = pytest.main(["-q", "-p", "no:cacheprovider", "--rootdir", str(copy), *args])
    sys.stdout.flush()
    os._exit(int(code))


def child(copy: Path, args: list[str], log: Path, env: dict[str, str] | None = None) -> None:
    """The forked child's whole life: it never returns into the parent's frames (their `finally`
    blocks would delete the parent's tree copies); any failure of its own is exit code 70."""
    try:
        os.setpgid(0, 0)
        run_child(copy, args, log, env)
    except BaseException:
        import traceback

        with open(log, "a") as out:
            traceback.print_exc(file=out)
    finally:
        os._exit(70)


def _cap_hypothesis(limit: int) -> None:
    """Property tests draw at most `limit` examples per mutant (their explicit @examples all run):
    a rule a mutant breaks is caught by its example; thousands of draws per mutant would cost hours."""
    import hypothesis

    original = hypothesis.settings.__init__

    def capped(self, *args, **kwargs):
        caller = sys._getframe(1).f_globals.get("__name__", "")
        if isinstance(kwargs.get("max_examples"), int) and caller not in UNCAPPED:
            kwargs["max_examples"] = min(kwargs["max_examples"], limit)
        original(self, *args, **kwargs)

    hypothesis.settings.__init__ = capped


@dataclass
class Slot:
    copy: Path
    pid: int = 0
    mutant: Mutant | None = None
    started: float = 0.0
    original: str = ""
    log: Path = Path()


def run_all(mutants: list[Mutant], jobs: int, owners: "Owners", timeout: float, logs: Path, record) -> dict[str, str]:
    """Mutant id -> 'killed' | 'survived' | 'timeout'."""
    slots = [Slot(make_copy(i)) for i in range(jobs)]
    pending = list(mutants)
    result: dict[str, str] = {}
    done = 0
    try:
        while pending or any(s.pid for s in slots):
            for slot in slots:
                if slot.pid or not pending:
                    continue
                mutant = pending.pop(0)
                target = slot.copy / PACKAGE / mutant.module
                slot.original = target.read_text()
                target.write_text(apply(slot.original, mutant))
                slot.mutant, slot.started = mutant, time.monotonic()
                slot.log = logs / f"{abs(hash(mutant.ident))}.log"
                pid = os.fork()
                if pid == 0:
                    child(slot.copy, ["-x", *owners.tests_of(mutant)], slot.log)
                slot.pid = pid
            time.sleep(0.05)
            for slot in slots:
                if not slot.pid:
                    continue
                pid, status = os.waitpid(slot.pid, os.WNOHANG)
                mutant = slot.mutant
                assert mutant is not None
                if pid == 0:
                    if time.monotonic() - slot.started < timeout:
                        continue
                    os.killpg(slot.pid, signal.SIGKILL)
                    os.waitpid(slot.pid, 0)
                    verdict = "timeout"
                else:
                    # pytest: 0 all passed, 1 a test failed, 2 collection failed (the mutant broke an import)
                    code = os.waitstatus_to_exitcode(status)
                    verdict = {0: "survived", 1: "killed", 2: "killed"}.get(code, f"error (exit {code})")
                    if code == 4 and "ERROR collecting" in slot.log.read_text(errors="replace"):
                        verdict = "killed"  # exit 4: the test ids were not found, their file failed to import
                (slot.copy / PACKAGE / mutant.module).write_text(slot.original)
                result[mutant.ident] = verdict
                record(mutant, verdict)
                slot.pid = 0
                done += 1
                mark = {"killed": ".", "timeout": "T", "survived": "S"}.get(verdict, "E")
                print(mark, end="" if done % 80 else f" {done}/{len(mutants)}\n", flush=True)
                if verdict == "survived":
                    print(f"\n  survived: {mutant.describe()}", flush=True)
    finally:
        for slot in slots:
            if slot.pid:
                os.killpg(slot.pid, signal.SIGKILL)
            shutil.rmtree(slot.copy, ignore_errors=True)
    print()
    return result


@dataclass
class Owners:
    """From the unmutated run: the tests that execute each line, and those that start subprocesses."""

    lines: dict[str, list[str]]
    spawns: list[str]
    order: list[str]
    seconds: float
    seconds_of: dict[str, float] = field(default_factory=dict)  # per test, in the unmutated run

    def tests_of(self, mutant: Mutant) -> list[str]:
        """Tests executing the mutated lines, plus the mapped subprocess tests; else all mapped files."""
        files = tests_for(mutant.module)
        if "::<module>::" in mutant.ident:  # a constant: other modules import it, their tests may reach it
            return [*files, *(f"--deselect={d}" for d in DESELECT)]
        mapped = [t for t in self.order if t.split("::")[0] in files]
        lines = range(mutant.start[0], mutant.end[0] + 1)
        running = {t for line in lines for t in self.lines.get(f"{mutant.module}:{line}", [])}
        if not running:
            return [*files, *(f"--deselect={d}" for d in DESELECT)]
        chosen = running | {t for t in self.spawns if t in mapped}
        # Fastest first (the unmutated run's time; else the TESTS order), so a killed mutant stops early.
        rank = {f: i for i, f in enumerate(files)}
        return sorted(
            chosen,
            key=lambda t: (self.seconds_of.get(t, 0.0), rank.get(t.split("::")[0], len(rank)), self.order.index(t)),
        )


def baseline(modules: list[str], logs: Path) -> Owners:
    """The modules' tests pass unmutated (else every mutant would count as killed); who runs what."""
    files = list(dict.fromkeys(f for module in modules for f in tests_for(module)))
    sources = sorted((ROOT / PACKAGE).rglob("*.py")) + sorted((ROOT / "tests").rglob("*.py"))
    digest = hashlib.sha256(b"".join(p.read_bytes() for p in sources) + " ".join(sorted(files)).encode()).hexdigest()
    cache = ROOT / ".mutation-owners.json"
    if cache.is_file() and (cached := json.loads(cache.read_text())).get("digest") == digest:
        print(f"baseline: reused ({len(cached['order'])} tests, unchanged sources)", flush=True)
        return Owners(
            cached["lines"], cached["spawns"], cached["order"], cached["seconds"], cached.get("durations", {})
        )
    copy = make_copy(99)
    out = logs / "owners.json"
    started = time.monotonic()
    try:
        pid = os.fork()
        if pid == 0:
            env = {"MUTATION_LINE_OWNERS": str(out), "MUTATION_PACKAGE_DIR": str(copy / PACKAGE)}
            child(
                copy,
                ["-p", "pytest_line_owners", *files, *(f"--deselect={d}" for d in DESELECT)],
                logs / "baseline.log",
                env,
            )
        _, status = os.waitpid(pid, 0)
        if os.waitstatus_to_exitcode(status) != 0:
            sys.exit(f"baseline: {' '.join(files)} fail without any mutant; see {logs / 'baseline.log'}")
    finally:
        shutil.rmtree(copy, ignore_errors=True)
    record = json.loads(out.read_text())
    seconds = time.monotonic() - started
    cache.write_text(json.dumps({**record, "digest": digest, "seconds": seconds}))
    print(f"baseline: {len(record['order'])} tests in {len(files)} files, {seconds:.0f}s", flush=True)
    return Owners(record["lines"], record["spawns"], record["order"], seconds, record.get("durations", {}))


def equivalents() -> dict[str, str]:
    if not EQUIVALENT_FILE.is_file():
        return {}
    entries = {}
    for line in EQUIVALENT_FILE.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            ident, _, reason = line.rpartition(" | ")
            entries[ident.strip()] = reason.strip()
    return entries


def sample(mutants: list[Mutant], size: int, seed: int) -> list[Mutant]:
    """At most `size` mutants per module, the same ones for the same seed and source."""
    chosen = []
    for module in dict.fromkeys(m.module for m in mutants):
        mine = [m for m in mutants if m.module == module]
        if len(mine) > size:
            picked = set(random.Random(f"{seed}:{module}").sample(range(len(mine)), size))
            mine = [m for i, m in enumerate(mine) if i in picked]
        chosen += mine
    return chosen


def report(
    mutants: list[Mutant], result: dict[str, str], allowed: dict[str, str], totals: dict[str, int] | None = None
) -> bool:
    """Per-module table; survivors and equivalents listed; True when the target modules reach the score."""
    ok = True
    totals = totals or {}
    print(f"\n{'module':28} {'killed':>6} {'total':>6} {'equiv':>6} {'score':>7}")
    modules = sorted({m.module for m in mutants})
    rows = []
    for module in modules:
        mine = [m for m in mutants if m.module == module]
        killed = sum(result.get(m.ident) in ("killed", "timeout") for m in mine)
        equivalent = [m for m in mine if result.get(m.ident) == "survived" and m.ident in allowed]
        scored = len(mine) - len(equivalent)
        score = killed / scored if scored else 1.0
        target = any(fnmatch.fnmatch(module, t) for t in TARGET_MODULES)
        if target and score < TARGET_SCORE:
            ok = False
        rows.append((module, killed, len(mine), len(equivalent), score))
        of_all = totals.get(module, len(mine))
        label = f"  sampled {len(mine)}/{of_all}" if of_all > len(mine) else ""  # or only n/N decided
        print(f"{module:28} {killed:6} {len(mine):6} {len(equivalent):6} {score:7.1%}{' *' if target else ''}{label}")
    survivors = [m for m in mutants if result.get(m.ident) == "survived" and m.ident not in allowed]
    equivalent = [m for m in mutants if result.get(m.ident) == "survived" and m.ident in allowed]
    print("(* target modules: at least 90% of non-equivalent mutants killed)")
    if any(totals.get(m, 0) > sum(x.module == m for x in mutants) for m in modules):
        print("(sampled n/N: n of the module's N mutants run, drawn with --seed; the score is an estimate)")
    if equivalent:
        print(f"\nequivalent ({len(equivalent)}), from {EQUIVALENT_FILE.name}:")
        for m in equivalent:
            print(f"  {m.describe()}\n      {allowed[m.ident]}")
    if survivors:
        print(f"\nsurvivors ({len(survivors)}):")
        for m in survivors:
            print(f"  {m.describe()}\n      id: {m.ident}")
    broken = [m for m in mutants if str(result.get(m.ident, "")).startswith("error")]
    if broken:
        print(f"\nnot decided, the run itself failed ({len(broken)}; rerun them):")
        for m in broken:
            print(f"  {m.describe()}: {result[m.ident]}")
    run_modules = {m.module for m in mutants}  # entries of modules not run this time are not judged
    stale = {i for i in allowed if i.split("::")[0] in run_modules} - {m.ident for m in mutants}
    if any(totals.get(m, 0) > sum(x.module == m for x in mutants) for m in run_modules):
        stale = set()  # a sample leaves mutants out: an entry not drawn is not stale
    if stale:
        print(f"\nstale entries in {EQUIVALENT_FILE.name} (no such mutant any more):")
        for ident in sorted(stale):
            print(f"  {ident}")
    return ok


def strip_runtime_env_mutant() -> int:
    """The issue's mutant: `runtime_env` stripped from every `ray.init`; the Ray tests must fail."""
    env = {**os.environ, "PYTHONPATH": f"{ROOT}:{ROOT / 'scripts'}"}
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "pytest_strip_runtime_env"]
    command += ["tests/test_env_delivery.py"]
    run = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    summary = run.stdout.strip().splitlines()[-1] if run.stdout.strip() else run.stderr[-500:]
    verdict = "killed" if run.returncode != 0 else "SURVIVED"
    print(f"runtime_env stripped from every ray.init: {verdict} ({summary})")
    return 0 if run.returncode != 0 else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("modules", nargs="*", default=["*"], help="globs relative to verl_qwen35/ (default: all)")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--list", action="store_true", help="list the mutants and exit")
    parser.add_argument("--ray", action="store_true", help="also run the runtime_env-stripped mutant (Ray)")
    parser.add_argument(
        "--results", default=str(ROOT / ".mutation.json"), help="verdicts kept between runs (per module source)"
    )
    parser.add_argument("--sample", type=int, default=0, help="at most N mutants per module, fixed seed")
    parser.add_argument("--seed", type=int, default=0, help="seed of --sample (same seed, same mutants)")
    parser.add_argument(
        "--saved-only", action="store_true", help="run nothing; report the mutants with a saved verdict (n/N run)"
    )
    parser.add_argument("--rerun-survivors", action="store_true", help="run the recorded survivors again")
    args = parser.parse_args()

    package = ROOT / PACKAGE
    modules = sorted(
        str(p.relative_to(package))
        for p in package.rglob("*.py")
        if any(fnmatch.fnmatch(str(p.relative_to(package)), g) for g in args.modules)
    )
    mutants = [m for module in modules for m in mutants_of(package / module, module)]
    totals = {module: sum(m.module == module for m in mutants) for module in modules}
    if args.sample:
        mutants = sample(mutants, args.sample, args.seed)
    if args.list:
        for m in mutants:
            print(f"{m.describe()}\n    {m.ident}")
        print(f"{len(mutants)} mutants in {len(modules)} modules")
        return 0
    untested = sorted({m.module for m in mutants if not tests_for(m.module)})
    if untested:  # pytest given no files would run the whole suite, Ray and all
        print(f"no fast tests map to {', '.join(untested)}: their mutants are not run (counted as survivors)")
    runnable = [m for m in mutants if m.module not in untested]
    results_file = Path(args.results)
    saved = json.loads(results_file.read_text()) if results_file.is_file() else {}
    digests = {m: hashlib.sha256((package / m).read_bytes()).hexdigest()[:16] for m in modules}

    def key(mutant: Mutant) -> str:  # a verdict holds while the module's source is unchanged
        return f"{digests[mutant.module]} {mutant.ident}"

    def record(mutant: Mutant, verdict: str) -> None:
        saved[key(mutant)] = verdict
        # Another run (other modules) may have written since: keep its verdicts too, not only ours.
        on_disk = json.loads(results_file.read_text()) if results_file.is_file() else {}
        results_file.write_text(json.dumps({**on_disk, **saved}, indent=0, sort_keys=True))

    if args.saved_only:  # an interrupted run: score what was decided, labelled as part of the module
        mutants = [m for m in mutants if key(m) in saved and not saved[key(m)].startswith("error")]
        runnable = [m for m in runnable if m in mutants]
    rerun = {"survived"} if args.rerun_survivors else set()
    allowed = equivalents()  # an equivalent mutant survives any test: rerunning it only costs its tests' time

    def again(m: Mutant) -> bool:
        verdict = saved[key(m)]
        return (verdict in rerun and m.ident not in allowed) or verdict.startswith("error")

    todo = [m for m in runnable if key(m) not in saved or again(m)]
    result = {m.ident: saved[key(m)] for m in runnable if key(m) in saved}
    started = time.monotonic()
    print(f"{len(mutants)} mutants in {len(modules)} modules; {len(todo)} to run, {args.jobs} jobs", flush=True)
    if todo:
        for name in HEAVY:
            __import__(name)
        logs = Path(tempfile.mkdtemp(prefix="mutlogs_", dir="/tmp"))
        print(f"child logs in {logs}", flush=True)
        owners = baseline(sorted({m.module for m in todo}), logs)
        result |= run_all(todo, args.jobs, owners, max(120.0, 2 * owners.seconds), logs, record)
    ok = report(mutants, result, allowed, totals)
    print(f"\n{len(todo)} mutants run in {time.monotonic() - started:.0f}s")
    if args.ray and strip_runtime_env_mutant():
        ok = False
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
