"""Write docs/coverage.md: for every config key verl's start-up path reads, what the dry runs judge, measured.

    python scripts/coverage.py                   # measure, write docs/coverage.md, print the summary (~10 min, 2 cores)
    python scripts/coverage.py --fast-only       # dry_run=true only (no torch import; the full column says so)
    python scripts/coverage.py --keys a.b,c.d --out /tmp/page.md    # a few keys, for a look at one rule

The keys are the ones verl_qwen35/data/startup_trace.yaml lists (verl's start-up functions and the keys each
reads); without that file, the leaf keys of the composed preset stand in, and the page says so. Nothing is
declared: each key's value is replaced by a few hostile values chosen by its type (0, -1, a huge number, an
empty or unknown string, a flipped bool, null; then a value of another type) and the function the dry run
calls (`verl_qwen35.run.job.problems`) judges the config, first as `dry_run=true`, then, for keys the fast rules
let through, as `dry_run=full` (verl's, megatron-core's and vLLM's own code on CPU). A key is judged when a new
problem names it; the rule is the module and function that made the problem (seen with `sys.setprofile`, a
profiler hook: nothing is patched). Rules are read as they are when this runs: nothing here lists them.
"""

import argparse
import contextlib
import inspect
import io
import logging
import re
import sys
import tempfile
import time
import warnings
from collections.abc import Iterator, Mapping, Sequence
from copy import deepcopy
from pathlib import Path
from types import FrameType
from typing import NamedTuple

import yaml
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import ValidationError

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the package and tests/tiny_data.py from a clean clone, as scripts/calibrate.py

from tests.tiny_data import write_geo3k_stub  # noqa: E402
from verl_qwen35.builder.build import build_run  # noqa: E402
from verl_qwen35.checks.problem import Problem  # noqa: E402
from verl_qwen35.config import compose  # noqa: E402
from verl_qwen35.config.errors import explain  # noqa: E402
from verl_qwen35.config.patch import link_patch  # noqa: E402
from verl_qwen35.config.schema import ACTOR, REF  # noqa: E402
from verl_qwen35.run.job import problems  # noqa: E402  (the dry run's own verdict: fast rules, then full)

TRACE = ROOT / "verl_qwen35" / "data" / "startup_trace.yaml"
CONTEXTS = ROOT / "scripts" / "coverage_contexts.yaml"
PAGE = ROOT / "docs" / "coverage.md"
PRESET = ("device=gpu", "model=35b")
PACKAGE = ROOT / "verl_qwen35"
HUGE = 2**40
UNKNOWN = "zzz_unknown"
UPSTREAM_FILE = re.compile(r"\b((?:verl|megatron|vllm|mbridge|mindspeed|transformers|torch)/[\w/.]*?\.py)\b")
# `${a.b}`, `${oc.select:a.b,default}`, `${..sibling}`: what an interpolation reads (resolver names excluded).
REFERENCE = re.compile(r"\$\{(?:oc\.select:|oc\.decode:)?(\.*[A-Za-z_][\w.\-]*)(?=[},])")
ALIAS = re.compile(r"^\$\{(?:oc\.select:)?(\.*[A-Za-z_][\w.\-]*)(?:,[^${}]*)?\}$")
# Keys whose name says what they hold: a label verl passes on as given (no value of it is wrong), a path.
LABEL = re.compile(r"^(project_name|experiment_name|run_name|tags?|notes?|group|job_name)$")
PATH = re.compile(r"(^|_)(path|paths|dir|files)$")
MISSING = object()


class Reader(NamedTuple):
    """One verl function on the start-up path that reads a key (an entry of the trace)."""

    function: str
    where: str  # verl/...py:line
    cpu: bool | None
    full: str | None  # what runs it in dry_run=full; None: not run there
    why_not: str | None
    writes: tuple[str, ...] = ()  # keys it rewrites (verl's `auto_set_device` sets trainer.device)


class Verdict(NamedTuple):
    """How one depth of the dry run judged a key: `kind` is value | type | warns | none | crash | unmeasured."""

    kind: str
    value: str = ""  # the hostile value, as written on the command line
    rules: tuple[str, ...] = ()  # "checks/values.py value_problems", "typed schema", ...
    cites: str = ""  # the upstream file the problem or its rule names
    crash: str = ""  # an exception the dry run raised (a traceback for the user), when one did

    @property
    def judged(self) -> bool:
        return self.kind in ("value", "type", "warns")


class Row(NamedTuple):
    key: str
    target: str  # the key a user sets for it (its interpolation source), or the key itself
    readers: tuple[Reader, ...]
    fast: Verdict
    full: Verdict
    reason: str  # why neither depth judges it; empty when one does
    rewritten: tuple[str, ...] = ()  # start-up functions that rewrite it before it is used
    context: tuple[str, ...] = ()  # the overrides under which verl reads it (measured with them)


class Context(NamedTuple):
    """Overrides under which verl reads some keys at all (the KL controller only with the KL in the reward):
    those keys are measured on the preset plus these overrides, as a user who sets them runs it."""

    overrides: tuple[str, ...]
    why: str
    keys: tuple[str, ...]  # keys, or nodes whose every key it covers

    def covers(self, key: str) -> bool:
        return any(key == k or key.startswith(k + ".") for k in self.keys)


def load_contexts(path: Path) -> list[Context]:
    """The measurement contexts (plain YAML data: a list of {when, why, keys})."""
    if not path.is_file():
        return []
    return [
        Context(tuple(map(str, e["when"])), str(e.get("why", "")), tuple(map(str, e["keys"])))
        for e in yaml.safe_load(path.read_text()) or []
    ]


def context_of(key: str, contexts: Sequence[Context]) -> Context | None:
    """The context a key is measured in: the one naming the longest key or node above it."""
    found = [(max(len(k) for k in c.keys if key == k or key.startswith(k + ".")), c) for c in contexts if c.covers(key)]
    return max(found, key=lambda pair: pair[0])[1] if found else None


# ---------------------------------------------------------------------------------------------------- keys


def load_trace(path: Path) -> dict[str, tuple[Reader, ...]]:
    """key -> the start-up functions that read it, from the trace file (plain YAML data: a list of functions,
    or a mapping whose `functions` is that list)."""
    data = yaml.safe_load(path.read_text()) or []
    entries = (data.get("functions") or []) if isinstance(data, dict) else data
    readers: dict[str, list[Reader]] = {}
    for entry in entries:
        reader = Reader(
            function=str(entry.get("function")),
            where=f"{entry.get('verl_file')}:{entry.get('line')}",
            cpu=entry.get("cpu"),
            full=entry.get("full"),
            why_not=entry.get("why_not"),
            writes=tuple(map(str, entry.get("writes") or ())),
        )
        for key in entry.get("keys") or ():
            readers.setdefault(str(key), []).append(reader)
    return {key: tuple(found) for key, found in sorted(readers.items())}


def rewriters(readers: Mapping[str, Sequence[Reader]]) -> dict[str, tuple[str, ...]]:
    """key -> the start-up functions that rewrite it (the dry run should judge it as verl will run it)."""
    out: dict[str, set[str]] = {}
    for reader in {r for found in readers.values() for r in found}:
        for key in reader.writes:
            out.setdefault(key, set()).add(reader.function)
    return {key: tuple(sorted(names)) for key, names in out.items()}


def leaves(tree: object, prefix: str = "") -> Iterator[tuple[str, object]]:
    """(dotted key, value) of every leaf; a list of plain values is one leaf, an empty mapping too."""
    if isinstance(tree, dict) and tree:
        for key, value in tree.items():
            yield from leaves(value, f"{prefix}{key}.")
    elif isinstance(tree, list) and any(isinstance(v, dict | list) for v in tree):
        for i, value in enumerate(tree):
            yield from leaves(value, f"{prefix}{i}.")
    else:
        yield prefix.rstrip("."), tree


def absolute(reference: str, at: str) -> str:
    """An interpolation's reference made absolute: `..x` read at `a.b.c` is `a.x`."""
    dots = len(reference) - len(reference.lstrip("."))
    if not dots:
        return reference
    parent = at.split(".")[:-1]
    return ".".join([*parent[: len(parent) - dots + 1], reference[dots:]])


class Interpolations(NamedTuple):
    """What the composed config's interpolations read: aliases (`k: ${src}`) and every key read by one."""

    aliases: Mapping[str, str]
    read: frozenset[str]

    @classmethod
    def of(cls, composed: DictConfig) -> "Interpolations":
        aliases, read = {}, set()
        for key, raw in leaves(OmegaConf.to_container(composed, resolve=False)):
            if not isinstance(raw, str) or "${" not in raw:
                continue
            read.update(absolute(ref, key) for ref in REFERENCE.findall(raw))
            if match := ALIAS.match(raw):
                aliases[key] = absolute(match.group(1), key)
        return cls(aliases, frozenset(read))

    def source(self, key: str) -> str:
        """The key a user sets to change `key`: the end of its alias chain (through aliased parent nodes too); for
        a leaf right under the actor's or ref's megatron node, `megatron.<leaf>`, which reaches both sides
        (config/patch.py link_patch): set on one side only, the parity rule refuses any value of it."""
        key = self.aliased(key)
        for side in (ACTOR, REF):
            leaf = key.removeprefix(side + ".")
            if leaf != key and "." not in leaf:
                return self.aliased(f"megatron.{leaf}")
        return key

    def aliased(self, key: str) -> str:
        """The end of `key`'s alias chain."""
        seen = set()
        while key not in seen:
            seen.add(key)
            parts = key.split(".")
            for n in range(len(parts), 0, -1):
                head = ".".join(parts[:n])
                if head in self.aliases:
                    key = ".".join([self.aliases[head], *parts[n:]])
                    break
            else:
                return key
        return key

    def feeds_others(self, key: str) -> bool:
        """True when an interpolation reads `key`, a node above it or one below it."""
        return any(r == key or key.startswith(r + ".") or r.startswith(key + ".") for r in self.read)


# ------------------------------------------------------------------------------------------- perturbation


def shown(value: object) -> str:
    """A value as a user writes it in an override."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, str):
        return f"'{value}'"
    return str(value)


def hostile(current: object) -> tuple[list[object], list[object]]:
    """Values of the key's own type that are likely wrong, then values of another type (and null)."""
    if isinstance(current, bool):
        return [not current], [None, UNKNOWN]
    if isinstance(current, int):
        return [v for v in (0, -1, HUGE) if v != current], [UNKNOWN, None]
    if isinstance(current, float):
        return [v for v in (0.0, -1.0, float(HUGE)) if v != current], [UNKNOWN, None]
    if isinstance(current, str):
        return [v for v in ("", UNKNOWN) if v != current], [None, -1]
    if isinstance(current, list):
        return [v for v in ([], [UNKNOWN]) if v != current], [None]
    if isinstance(current, dict):
        return [{UNKNOWN: 1}], [None]
    return [UNKNOWN, -1, True], []  # null, or absent: its type is not known here


def names(problem: Problem) -> set[str]:
    """The keys a problem names: `parallel.tp (actor_rollout_ref...tensor_model_parallel_size)` is both."""
    found = set()
    for key in problem.keys:
        head, _, rest = key.partition(" (")
        found.add(head.strip())
        found.update(part.strip() for part in rest.rstrip(")").split(",") if part.strip())
    return found


def about(problem: Problem, keys: set[str]) -> bool:
    """Whether `problem` names one of `keys`, a node above one, or a key below one."""
    return any(n == k or k.startswith(n + ".") or n.startswith(k + ".") for n in names(problem) for k in keys)


class Origins:
    """Who made each Problem while a dry run ran: the chain of this package's frames above Problem.__init__.

    A profiler hook (`sys.setprofile`, public) only: nothing is replaced."""

    init = Problem.__init__.__code__

    def __init__(self) -> None:
        self.made: dict[tuple[str, tuple[str, ...], str], tuple[FrameType, ...]] = {}

    def hook(self, frame: FrameType, event: str, arg: object) -> None:
        if event != "call" or frame.f_code is not self.init:
            return
        args = frame.f_locals
        chain, outer = [], frame.f_back
        while outer is not None:
            if outer.f_code.co_filename.startswith(str(PACKAGE)):
                chain.append(outer)
            outer = outer.f_back
        self.made[(args.get("level"), tuple(args.get("keys") or ()), args.get("message"))] = tuple(chain)

    def __enter__(self) -> "Origins":
        sys.setprofile(self.hook)
        return self

    def __exit__(self, *exc: object) -> None:
        sys.setprofile(None)

    def rule(self, problem: Problem, under: str) -> tuple[str, str]:
        """(`checks/x.py function`, the upstream file its docstring cites) of the innermost frame under `under`."""
        for frame in self.made.get((problem.level, problem.keys, problem.message), ()):
            path = Path(frame.f_code.co_filename).relative_to(PACKAGE)
            if path.parts[0] == under and path.name != "problem.py" and not frame.f_code.co_name.startswith("<"):
                return f"{path.as_posix()} {frame.f_code.co_name}", cited(frame)
        return "", ""


def cited(frame: FrameType) -> str:
    """The first upstream file a rule's own source names (its docstring or comments)."""
    try:
        match = UPSTREAM_FILE.search(inspect.getsource(frame.f_code))
    except OSError:
        return ""
    return match.group(1) if match else ""


class Base(NamedTuple):
    """The preset, composed once, and the same config with every interpolation resolved (for speed: a key that
    no interpolation reads is perturbed there, as a user's override would give the same resolved config)."""

    composed: DictConfig
    flat: DictConfig
    interpolations: Interpolations
    baseline: Mapping[str, frozenset[Problem]]

    @classmethod
    def of(cls, overrides: Sequence[str], full: bool) -> "Base":
        composed = compose(list(overrides))
        flat = deepcopy(composed)
        link_patch(flat)
        OmegaConf.resolve(flat)
        base = cls(composed, flat, Interpolations.of(composed), {})
        modes = ("dry", "full") if full else ("dry",)
        baseline = {mode: frozenset(base.verdict(deepcopy(composed), mode)) for mode in modes}
        return base._replace(baseline=baseline)

    def verdict(self, cfg: DictConfig, mode: str) -> list[Problem]:
        """What the dry run says of `cfg` (the builder copies it), its output kept off the screen."""
        with quiet():
            run, broken = build_run(cfg, mode=mode)
            return broken or problems(run)

    def perturbed(self, target: str, value: object) -> DictConfig:
        """A copy with `target` set to `value`; raises what the typed schema raises for a wrong type."""
        cfg = deepcopy(self.flat if not self.interpolations.feeds_others(target) else self.composed)
        node = OmegaConf.is_dict(OmegaConf.select(cfg, target, default=None)) and isinstance(value, dict)
        OmegaConf.update(cfg, target, value, merge=node, force_add=True)  # a node: an unknown key added to it
        return cfg


@contextlib.contextmanager
def quiet() -> Iterator[None]:
    """verl and megatron-core print and warn while their validators run; none of it is the page's."""
    sink = io.StringIO()
    logging.disable(logging.CRITICAL)
    try:
        with warnings.catch_warnings(), contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
            warnings.simplefilter("ignore")
            yield
    finally:
        logging.disable(logging.NOTSET)


def innermost(err: BaseException) -> str:
    """Where an exception was raised, as `path:line`: the last frame of this package, then the very last."""
    ours, last, tb = "", "", err.__traceback__
    while tb is not None:
        path = Path(tb.tb_frame.f_code.co_filename)
        last = f"{path.name}:{tb.tb_lineno}"
        if path.is_relative_to(PACKAGE):
            ours = f"{path.relative_to(PACKAGE).as_posix()}:{tb.tb_lineno}"
        tb = tb.tb_next
    same_file = ours and Path(ours.rsplit(":", 1)[0]).name == last.rsplit(":", 1)[0]
    return ours if same_file else f"{ours} ({last})" if ours else last


def judge(base: Base, target: str, keys: set[str], mode: str) -> Verdict:
    """The first hostile value of `target` that the dry run at `mode` refuses or warns about in a problem naming
    one of `keys` (the target and the keys that follow it); values of its own type first."""
    current = OmegaConf.select(base.flat, target, default=MISSING)
    for key in sorted(keys):  # `megatron.seed`, added by the change, has the type of the keys it reaches
        if current is MISSING:
            current = OmegaConf.select(base.flat, key, default=MISSING)
    if OmegaConf.is_config(current):
        current = OmegaConf.to_container(current)
    same, other = hostile(None if current is MISSING else current)
    warned: Verdict | None = None
    crashed = ""
    under = "validators" if mode == "full" else "checks"
    for kind, values in (("value", same), ("type", other)):
        for value in values:
            try:
                cfg = base.perturbed(target, value)
            except ValidationError:  # what composing `key=value` refuses for our typed nodes
                return Verdict(kind, shown(value), ("typed schema (verl_qwen35/config/schema.py)",))
            try:
                found = base.verdict(cfg, mode)
            except Exception as err:
                if (line := explain(err)) is None:  # a traceback the user would see: the page lists it
                    crashed = crashed or f"{shown(value)}: {type(err).__name__} at {innermost(err)}"
                elif any(k in line for k in keys):  # the command's one-line answer, naming the key
                    return Verdict(kind, shown(value), ("resolution (verl_qwen35/config/errors.py explain)",))
                continue
            new = [p for p in found if p not in base.baseline[mode] and about(p, keys)]
            if not new:
                continue
            errors = [p for p in new if p.level == "error"]
            chosen = errors or new
            with Origins() as origins:  # again, under the profiler hook (slower), to see who made each problem
                base.verdict(base.perturbed(target, value), mode)
            rules, cites = [], ""
            for p in chosen:
                rule, cite = origins.rule(p, under)
                if not rule and mode == "full":
                    rule, cite = origins.rule(p, "checks")  # a fast rule that errs only in full (machine checks)
                rules.append(rule or "?")
                cites = cites or (m.group(1) if (m := UPSTREAM_FILE.search(p.message)) else cite)
            verdict = Verdict(kind if errors else "warns", shown(value), tuple(sorted(set(rules))), cites, crashed)
            if errors:
                return verdict
            warned = warned or verdict
    return warned or Verdict("none", crash=crashed)


# -------------------------------------------------------------------------------------------------- rows


def reason(key: str, readers: Sequence[Reader], fast: Verdict, full: Verdict) -> str:
    """Why neither depth judges a key: what the trace says of its readers, what ran and accepted every value,
    and what the key's name says it is (a label, a path)."""
    if fast.judged or full.judged:
        return ""
    leaf = key.rsplit(".", 1)[-1]
    not_run = sorted({r.why_not or "its reader is not run in dry_run=full" for r in readers if not r.full})
    ran = sorted({r.full for r in readers if r.full})
    said = []
    if LABEL.search(leaf):
        said.append("any value accepted: a free-form label verl passes on as given")
    elif ran and full.kind == "none":
        said.append(f"any value accepted: {', '.join(ran)} ran in dry_run=full and accepted every value tried")
    if not_run:
        said.append("not judged: " + "; ".join(not_run))
    if not said:
        said.append("not judged: no rule names it, and no upstream code that ran refused a value tried")
    if PATH.search(leaf) and not LABEL.search(leaf):
        said.append("a path, whose content is read on the cluster")
    return "; ".join(said)


def measure(
    base: Base,
    readers: Mapping[str, tuple[Reader, ...]],
    full: bool,
    progress: bool = True,
    rewritten: Mapping[str, tuple[str, ...]] | None = None,
    context: Sequence[str] = (),
    unmeasured_full: str = "",
) -> list[Row]:
    """Each key's row: keys that follow one source (aliases of `parallel.tp`, say) share its measurement."""
    rows: list[Row] = []
    targets = {key: base.interpolations.source(key) for key in readers}
    followers: dict[str, set[str]] = {}
    for key, target in targets.items():
        followers.setdefault(target, {target}).add(key)
    memo: dict[tuple[str, str], Verdict] = {}

    def judged(target: str, mode: str) -> Verdict:
        if (target, mode) not in memo:
            memo[target, mode] = judge(base, target, followers[target], mode)
        return memo[target, mode]

    start = time.monotonic()
    for i, (key, found) in enumerate(readers.items(), 1):
        target = targets[key]
        fast = judged(target, "dry")
        refused = fast.kind in ("value", "type")  # a warning stops nothing: the full depth still runs
        deep = Verdict("unmeasured", unmeasured_full) if not full else fast if refused else judged(target, "full")
        again = (rewritten or {}).get(key, ())
        rows.append(Row(key, target, found, fast, deep, reason(key, found, fast, deep), again, tuple(context)))
        if progress and (i % 25 == 0 or i == len(readers)):
            print(f"  {i}/{len(readers)} keys, {time.monotonic() - start:.0f} s", file=sys.stderr, flush=True)
    return rows


def code(text: str) -> str:
    return f"`{text}`" if text else ""


def fast_cell(v: Verdict) -> str:
    if v.kind == "unmeasured":
        return "not measured (`--fast-only`)"
    if not v.judged:
        return "—" + (f" (crashes on {v.crash})" if v.crash else "")
    what = {"value": "refuses", "type": "type only: refuses", "warns": "warns on"}[v.kind]
    rules = ", ".join(code(r) for r in v.rules)
    cites = f", citing {code(v.cites)}" if v.cites else ""
    return f"{what} `{v.value}`: {rules}{cites}"


def full_cell(row: Row) -> str:
    if row.full.kind == "unmeasured":
        return f"not measured: {row.full.value}" if row.full.value else "not measured (`--fast-only`)"
    if row.fast.kind in ("value", "type"):
        return "as `dry_run=true` (its rules run first)"
    return fast_cell(row.full)


def reader_cell(readers: Sequence[Reader], rewritten: Sequence[str]) -> str:
    if not readers:
        return "(composed config; no trace)"
    shown_ = [f"`{r.function}` ({r.where})" for r in readers[:2]]
    more = f" +{len(readers) - 2} more" if len(readers) > 2 else ""
    again = f"; rewritten at start-up by {', '.join(code(f) for f in rewritten)}" if rewritten else ""
    return "; ".join(shown_) + more + again


def key_cell(row: Row) -> str:
    cell = f"`{row.key}`" + (f" (set as `{row.target}`)" if row.target != row.key else "")
    return cell + (f" (with {', '.join(code(o) for o in row.context)})" if row.context else "")


def cells(row: Row) -> list[str]:
    """The row's cells; the first three are the fast depth's (the test regenerates those)."""
    return [key_cell(row), reader_cell(row.readers, row.rewritten), fast_cell(row.fast), full_cell(row), row.reason]


def table_line(row: Row) -> str:
    return "| " + " | ".join(c.replace("|", "\\|") for c in cells(row)) + " |"


class Summary(NamedTuple):
    keys: int
    fast: int
    full: int
    fast_value: int
    listed: int
    crashes: int

    @classmethod
    def of(cls, rows: Sequence[Row]) -> "Summary":
        return cls(
            keys=len(rows),
            fast=sum(r.fast.judged for r in rows),
            full=sum(r.fast.judged or r.full.judged for r in rows),
            fast_value=sum(r.fast.kind == "value" for r in rows),
            listed=sum(bool(r.reason) for r in rows),
            crashes=sum(bool(r.fast.crash or r.full.crash) for r in rows),
        )

    def line(self, measured_full: bool = True) -> str:
        def pct(n: int) -> str:
            return f"{100 * n / self.keys:.1f}%" if self.keys else "n/a"

        full = f"full {self.full} ({pct(self.full)})" if measured_full else "full not measured"
        return (
            f"coverage: {self.keys} keys; fast {self.fast} ({pct(self.fast)}, {pct(self.fast_value)} beyond the type); "
            f"{full}; {self.listed} listed with a reason; {self.crashes} with a crash"
        )


HEADER = """\
# Coverage: what the dry runs judge

<!-- Generated by scripts/coverage.py; do not edit by hand. Regenerate: python scripts/coverage.py -->

Every config key that verl's start-up path reads ({source}), and for each what `dry_run=true` (the fast rules)
and `dry_run=full` (verl's, megatron-core's and vLLM's own code run on CPU) do with a wrong value of it:
refuse it, naming the key, and by which rule; warn; or accept it, and then why.

**{summary}**

Measured on `{preset}` (with a small geo3k-shaped data set on disk, so that the data checks run), verl
{verl}. How it is measured: each key's value is replaced, one at a time, by a few hostile values chosen by its
type (0, -1, a huge number, an empty or unknown string, a flipped bool, null, then a value of another type), and
the dry run's own verdict function judges the config. A key counts as judged when a problem the change caused
names it; "type only" means only a value of the wrong type was refused, "warns" that only a warning named it.
The rule is the module and function of this package that made the problem, seen while it ran, and the upstream
file that rule or its message cites. A key that verl reads from another key by interpolation is changed where a
user sets it ("set as"). A key that is a node verl reads whole gets an unknown key added to it, then null.
`dry_run=full` is measured for the keys the fast rules let through (for the others the
fast rules refuse first). A crash is a traceback the dry run would show the user instead of a verdict.

One preset is measured, one key at a time. A key that verl reads only under another setting (the KL controller
only with `algorithm.use_kl_in_reward=true`, say) is measured with that setting added, as a user who turns the
feature on runs it; its row says so ("with ..."), and `scripts/coverage_contexts.yaml` lists each setting with the
verl line that gates the read.

To regenerate it after a rule, a validator or the trace changes (from a clone, with the `test` extra installed,
which brings verl, megatron-core and torch; about 10 minutes on 2 cores):

```bash
python scripts/coverage.py            # writes docs/coverage.md and prints the summary line
```

`tests/unit/test_coverage_page.py` regenerates a few rows and fails when the page no longer matches the rules.

| key | read at start-up by | `dry_run=true` | `dry_run=full` | not judged because |
|---|---|---|---|---|
"""


def page(rows: Sequence[Row], source: str, preset: Sequence[str], extra: Sequence[str], full: bool) -> str:
    import importlib.metadata as md

    text = HEADER.format(
        source=source,
        summary=Summary.of(rows).line(full),
        preset=" ".join(preset),
        verl=md.version("verl"),
    )
    text += "\n".join(table_line(r) for r in rows) + "\n"
    crashes = [(r.key, depth, v.crash) for r in rows for depth, v in (("true", r.fast), ("full", r.full)) if v.crash]
    if crashes:
        text += "\n## A traceback instead of a verdict\n\n"
        text += "These values make the dry run stop with a traceback instead of naming the key:\n\n"
        text += "".join(
            f"- `dry_run={depth}`, `{key}={crash.split(': ', 1)[0]}`: {crash.split(': ', 1)[1]}\n"
            for key, depth, crash in crashes
        )
    return text + "".join(f"\n{line}\n" for line in extra)


def cross_check(composed: DictConfig, traced: Mapping[str, object]) -> list[str]:
    """The trace against the composed config: keys verl reads that the preset lacks (verl's default applies)."""
    present = {k for k, _ in leaves(OmegaConf.to_container(composed, resolve=False))}
    nodes = {k.rsplit(".", n)[0] for k in present for n in range(1, k.count(".") + 1)}
    absent = sorted(k for k in traced if k not in present and k not in nodes)
    unread = sorted(k for k in present if not any(k == t or k.startswith(t + ".") for t in traced))
    lines = [
        f"The composed preset has {len(present)} leaf keys; {len(unread)} of them are read by no traced start-up "
        "function (our own nodes, the critic and reward model this recipe leaves off, options read later).",
    ]
    if absent:
        lines.append(
            "Keys verl reads that the composed config does not hold (verl's default applies; measured by adding "
            "them): " + ", ".join(f"`{k}`" for k in absent) + "."
        )
    return lines


def preset_with_data(directory: Path, preset: Sequence[str]) -> list[str]:
    """The preset, its data files pointed at a tiny data set in `directory` (so the data rules have data)."""
    return [*preset, *write_geo3k_stub(directory)]


def refused_as_is(base: Base, overrides: Sequence[str]) -> None:
    """Stop when the measured config is refused before any key is changed: nothing could be told apart."""
    broken = [p for mode in base.baseline for p in base.baseline[mode] if p.level == "error"]
    if broken:
        what = f"the preset with {' '.join(overrides)}" if overrides else "the preset itself"
        sys.exit(f"{what} is refused; measure another:\n" + "\n".join(map(str, broken)))


def main(argv: Sequence[str] | None = None) -> Summary:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trace", type=Path, default=TRACE, help="the start-up trace (YAML)")
    parser.add_argument("--preset", default=" ".join(PRESET), help="overrides of the config measured")
    parser.add_argument("--fast-only", action="store_true", help="measure dry_run=true only (no torch import)")
    parser.add_argument("--keys", help="comma-separated keys to measure (default: every traced key)")
    parser.add_argument("--contexts", type=Path, default=CONTEXTS, help="settings under which verl reads keys")
    parser.add_argument("--out", type=Path, default=PAGE, help="the page written (default docs/coverage.md)")
    args = parser.parse_args(argv)
    started = time.monotonic()
    preset = args.preset.split()
    with tempfile.TemporaryDirectory() as tmp:
        measured = preset_with_data(Path(tmp), preset)
        base = Base.of(measured, full=not args.fast_only)
        refused_as_is(base, ())
        if args.trace.is_file():
            readers = load_trace(args.trace)
            source = f"`{args.trace.relative_to(ROOT) if args.trace.is_relative_to(ROOT) else args.trace}`"
        else:
            readers = {k: () for k, _ in leaves(OmegaConf.to_container(base.composed, resolve=False))}
            source = "no start-up trace found: every leaf key of the composed preset stands in"
        extra = cross_check(base.composed, readers) if readers and any(readers.values()) else []
        rewritten = rewriters(readers)
        if args.keys:
            wanted = args.keys.split(",")
            readers = {k: readers.get(k, ()) for k in wanted}
        contexts = load_contexts(args.contexts)
        groups: dict[Context | None, dict[str, tuple[Reader, ...]]] = {}
        for key, found in readers.items():
            groups.setdefault(context_of(key, contexts), {})[key] = found
        rows = []
        for context, group in groups.items():
            overrides = context.overrides if context else ()
            full, where, why = not args.fast_only, base, ""
            if context is not None:
                where = Base.of([*measured, *overrides], full=full)
                if broken := [p for p in where.baseline.get("full", ()) if p.level == "error"]:
                    # the full depth refuses the setting itself on this machine (the critic's model files are the
                    # cluster's): measured at the fast depth only, and the page says why
                    full, where = False, where._replace(baseline={"dry": where.baseline["dry"]})
                    why = f"`dry_run=full` refuses {' '.join(overrides)} here ({broken[0].keys[0]}: "
                    why += f"{broken[0].message[:120]}...)"
                refused_as_is(where, overrides)
            rows += measure(where, group, full, rewritten=rewritten, context=overrides, unmeasured_full=why)
        rows.sort(key=lambda r: r.key)
    summary = Summary.of(rows)
    args.out.write_text(page(rows, source, preset, extra, not args.fast_only))
    print(summary.line(not args.fast_only))
    print(f"wrote {args.out} in {time.monotonic() - started:.0f} s")
    return summary


if __name__ == "__main__":
    main()
