"""Every example in README.md and docs/*.md, run as the page shows it (issue 29): a doc example that stops working
fails here, named by its page and line (`docs/usage.md:9`).

What counts as an example: each ```python block; each command line of a ```bash/```sh/```console block and of a
4-space indented block (`\\` continuations joined, `# ...` comments dropped); each YAML file a page shows (a
```yaml block or an indented `my_conf/....yaml:` block) under the file name the page gives it.

How each kind runs (no subprocess: the whole CI has to fit in 25 minutes for two verls):
- ```python: exec'd in a fresh namespace, in a temporary working directory with a temporary HOME.
- `verl-qwen35 ARGS` / `python -m verl_qwen35 ARGS`: in-process through `verl_qwen35.cli.main.main` (the `cli`
  fixture), in a temporary working directory, HOME holding the geo3k files the presets read (a stub, as
  `verl-qwen35 data` would leave them); exit 0 unless the page promises another code (`diff`: 1 when different).
- a launch (no `dry_run`, no `submit`, and `relaunch`): this machine has no GPU or NPU, so a launch must end at the
  launch checks, before verl or Ray starts: exit 2, an error naming `parallel.nnodes` / `devices_per_node` for the
  devices the cluster lacks, every other error a launch check (`launch_checks.stack`: this machine's stack), so
  the preflight and the real validators passed. The devices are those of a Ray on this machine (one node, no
  device): `run.devices.cluster_devices` is given that answer, as tests/integration/test_launch_checks.py does,
  because asking Ray starts one (seconds of CPU and processes per example); tests/system/test_machine_launch.py
  counts them with a real Ray.
- `submit=slurm`: submitted to the Slurm stand-in (tests/standin_slurm, `sbatch` recording the job, queue only).
  `submit=ray_job` and `submit=kuberay` run to the cluster's door: there is no Ray dashboard and no Kubernetes
  here, so exit 2 naming `submit.address` / the RayJob that could not be created, after everything was written.
- files an example needs are made as the page describes them: `my_conf/` from the page's own YAML, a launched
  run directory (launch.yaml and metrics.jsonl, logged through verl's own Tracking) where a page names one, a
  launch script or overrides file for `import`, a model directory (its config.json) for `/models/...`.
  Placeholders map to temporary paths in PLACEHOLDERS. `data --out ~/data/geo3k` runs where the files already
  are, so it skips them: nothing is downloaded (CI has no network; tests/integration/test_data_command.py).
- NOT_RUN: the only examples not run, each kind with its reason.
"""

import os
import re
import shlex
import shutil
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from tests.commands import REPO, STANDINS
from tests.tiny_data import write_geo3k_stub
from verl_qwen35.run import devices

PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]

# Examples not run, by the command's start: why each kind is not run here.
NOT_RUN = {
    "pip install": "installs packages: the suite runs in the environment scripts/test.sh built",
    "python3.11 -m venv": "a new venv installed from PyPI: tests/system/test_wheel.py builds it (the README's line)",
    "bash scripts/test.sh": "the whole suite, of which this test is a part",
    ".venv-verl0.9/bin/python -m pytest": "the suite itself",
    ".venv-verl0.9/bin/python scripts/golden.py": "rewrites golden/; tests/integration/test_golden.py checks them",
    ".venv-verl0.8/bin/python scripts/golden.py": "needs the verl 0.8 venv; rewrites golden/",
    ".venv-verl0.9/bin/python scripts/benchmark.py": "minutes of timing; prints figures, asserts nothing",
    "python scripts/benchmark.py": "minutes of timing; prints figures, asserts nothing",
    "python scripts/coverage.py": "~10 minutes of measuring; tests/unit/test_coverage_page.py runs it on a sample",
    "ruff": "the lint scripts/test.sh runs first",
    "mkdocs": "the docs extra (mkdocs) is not in the test environment",
    "ray start": "starts a Ray cluster (the examples never start Ray)",
    "ray status": "asks a running Ray cluster",
}

# Placeholders of the pages -> what stands in for them ({cwd}: the example's directory, {home}: its HOME).
PLACEHOLDERS = {
    "/models/Qwen3.5-122B-A10B": "{cwd}/models/Qwen3.5-122B-A10B",
    "$HEAD_IP": "127.0.0.1",
    "/shared": "{cwd}/shared",
    "/tmp/": "{cwd}/tmp/",
    "~/": "{home}/",
    "outputs/...": "outputs/2026-12-01/10-00-00-3fa2c1",
    " [overrides] [--json]": " --json",
}
RUN_DIRS = ("outputs/2026-11-30/10-00-00-3fa2c1", "outputs/2026-12-01/10-00-00-3fa2c1")
SWEEP_DIR = "multirun/2026-12-01/10-00-00-3fa2c1"
SUBCOMMANDS = ("diff", "estimate", "plan", "doctor", "relaunch", "report", "calibrate", "data", "import", "presets")


@dataclass(frozen=True)
class Example:
    page: str  # README.md, docs/usage.md
    line: int
    kind: str  # python, command, file
    text: str
    name: str = ""  # a file's path as the page names it

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}"


_FENCE = re.compile(r"^\s*```(\w*)\s*$")
_FILE_HEADER = re.compile(r"^(\S+\.ya?ml):$")
_NAMED_FILE = re.compile(r"`([\w./-]+\.ya?ml)`:?\s*$")
_SHELL = ("bash", "sh", "console")


def _commands(page: str, first: int, lines: list[str], strict: bool) -> list[Example]:
    """Command lines from `first` on, continuations joined; in an indented block only lines naming a command."""
    found, i = [], 0
    while i < len(lines):
        start, text = i, lines[i].strip()
        while text.endswith("\\") and i + 1 < len(lines):
            i += 1
            text = text[:-1].rstrip() + " " + lines[i].strip()
        i += 1
        if not text or text.startswith("#"):
            continue
        if strict or text.split()[0] in ("verl-qwen35", "python", "python3.11", "bash", "pip"):
            found.append(Example(page, first + start, "command", text))
    return found


def examples_of(path: Path) -> list[Example]:
    page = str(path.relative_to(REPO))
    lines = path.read_text().splitlines()
    found, i = [], 0
    while i < len(lines):
        if fence := _FENCE.match(lines[i]):
            end = next(j for j in range(i + 1, len(lines)) if _FENCE.match(lines[j]))
            body, lang = lines[i + 1 : end], fence.group(1)
            if lang == "python":
                found.append(Example(page, i + 2, "python", "\n".join(body)))
            elif lang in _SHELL:
                found += _commands(page, i + 2, body, strict=True)
            elif lang == "yaml":
                before = next(line for line in reversed(lines[:i]) if line.strip())
                if named := _NAMED_FILE.search(before):
                    found.append(Example(page, i + 2, "file", "\n".join(body) + "\n", named.group(1)))
            i = end + 1
        elif lines[i].startswith("    ") and (i == 0 or not lines[i - 1].strip()):
            end = i
            while end < len(lines) and (lines[end].startswith("    ") or not lines[end].strip()):
                end += 1
            body = [line[4:] for line in lines[i:end]]
            j = 0
            while j < len(body):
                if header := _FILE_HEADER.match(body[j]):
                    k = j + 1
                    while k < len(body) and (body[k].startswith("    ") or not body[k].strip()):
                        k += 1
                    text = textwrap.dedent("\n".join(body[j + 1 : k])).strip() + "\n"
                    found.append(Example(page, i + j + 1, "file", text, header.group(1)))
                    j = k
                else:
                    found += _commands(page, i + j + 1, [body[j]], strict=False)
                    j += 1
            i = end
        else:
            i += 1
    return found


EXAMPLES = [e for page in PAGES for e in examples_of(page)]


def not_run_reason(command: str) -> str | None:
    return next((why for start, why in NOT_RUN.items() if command.startswith(start)), None)


def argv_of(command: str, cwd: Path, home: Path) -> list[str]:
    pattern = "|".join(map(re.escape, PLACEHOLDERS))
    command = re.sub(pattern, lambda m: PLACEHOLDERS[m.group(0)].format(cwd=cwd, home=home), command)
    words = shlex.split(command, comments=True)
    if words[:3] == ["python", "-m", "verl_qwen35"]:
        return words[3:]
    assert words[0] == "verl-qwen35", f"not a verl-qwen35 command and not in NOT_RUN: {command}"
    return words[1:]


# -- what the examples need -------------------------------------------------------------------------------------


def run_cli(mp: pytest.MonkeyPatch, cwd: Path, *argv: str) -> None:
    """A command that makes what an example needs, in-process; it must succeed."""
    from verl_qwen35.cli.main import main

    mp.chdir(cwd)
    mp.setattr("sys.argv", ["verl_qwen35", *argv])
    try:
        code = main()
    except SystemExit as stop:
        code = stop.code
    assert code in (0, None), argv


@pytest.fixture(scope="module")
def home(tmp_path_factory) -> Path:
    """A HOME with the geo3k files the presets read ($HOME/data/geo3k), as `verl-qwen35 data` leaves them."""
    path = tmp_path_factory.mktemp("home")
    write_geo3k_stub(path / "data" / "geo3k")
    return path


def model_dir(path: Path, model: str) -> None:
    """A model directory as the preflight reads it: config.json with the preset's architecture (HF names)."""
    import json

    from verl_qwen35.checks.files import ARCH_FIELDS

    facts = yaml.safe_load((REPO / "conf" / "model" / f"{model}.yaml").read_text())["model"]
    path.mkdir(parents=True)
    text_config = {"model_type": "qwen3_5_moe_text", **{hf: facts[ours] for hf, ours in ARCH_FIELDS.items()}}
    (path / "config.json").write_text(json.dumps({"model_type": "qwen3_5_moe", "text_config": text_config}))


@pytest.fixture(scope="module")
def launched_run(tmp_path_factory, home) -> Path:
    """A launched run's directory: its launch.yaml as a launch writes it and three steps logged by verl's Tracking."""
    from tests.integration.test_report import launched, log_steps, step_metrics

    run_dir = tmp_path_factory.mktemp("run") / "run"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HOME", str(home))
        run_cli(mp, run_dir.parent, "model=35b", "device=gpu", "logger=[console,file]", "dry_run=true",
                f"hydra.run.dir={run_dir}")  # fmt: skip
        launched(run_dir, mp, "logger=[console,file]")
        log_steps(run_dir, mp, {s: step_metrics(s) for s in (1, 2, 3)})
    return run_dir


@pytest.fixture(scope="module")
def launched_sweep(tmp_path_factory, home) -> Path:
    """A sweep's directory (Hydra's multirun.yaml and a directory per job), each job launched and logged."""
    from tests.integration.test_report import launched, log_steps, step_metrics

    sweep = tmp_path_factory.mktemp("sweep") / "sweep"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HOME", str(home))
        run_cli(mp, sweep.parent, "-m", "model=35b", "device=gpu", "parallel.tp=1,2", "dry_run=true",
                f"hydra.sweep.dir={sweep}")  # fmt: skip
        for job, tp in ((0, 1), (1, 2)):
            launched(sweep / str(job), mp, f"parallel.tp={tp}", "logger=[console,file]")
            log_steps(sweep / str(job), mp, {s: step_metrics(s + 10 * job) for s in (1, 2, 3)})
    return sweep


# What `import` reads ("my launch script"): verl's own 122B launch as tests/seed_fidelity recorded it (one override
# a line, then its exported environment below #ENV) on a cluster of 8 nodes, so that it has a layout of its own;
# as a list, or as a script in verl's style (exports, then main_ppo).
RECORDED_122B = REPO / "tests" / "seed_fidelity" / "upstream_overrides" / "122b_npu.txt"
MY_CLUSTER = "trainer.nnodes=8"


def overrides_list(recorded: Path) -> str:
    overrides, _, env = recorded.read_text().partition("\n#ENV\n")
    return f"{overrides.rstrip()}\n{MY_CLUSTER}\n#ENV\n{env}"


def launch_script(recorded: Path) -> str:
    overrides, _, env = overrides_list(recorded).partition("\n#ENV\n")
    args = [line for line in overrides.splitlines() if line and not line.startswith("#")]
    exported = [line.split("=", 1) for line in env.splitlines() if line and not line.startswith("#")]
    exports = [f"export {name}={shlex.quote(value)}" for name, value in exported]
    call = " \\\n    ".join(["python3 -m verl.trainer.main_ppo", *map(shlex.quote, args)])
    return "\n".join(["#!/usr/bin/env bash", "set -xeuo pipefail", *exports, call, ""])


IMPORT = "verl-qwen35 import SCRIPT.sh --device npu --out mine"
MADE: dict[str, Path] = {}  # a command as written -> the directory it ran in, after it succeeded


def prepare(example: Example, cwd: Path, home: Path, request: pytest.FixtureRequest) -> None:
    """Make what the example's command names, as its page describes it."""
    text = example.text
    for run_dir in RUN_DIRS:
        if run_dir in text or "outputs/..." in text:
            shutil.copytree(request.getfixturevalue("launched_run"), cwd / run_dir, dirs_exist_ok=True)
    if SWEEP_DIR in text:
        shutil.copytree(request.getfixturevalue("launched_sweep"), cwd / SWEEP_DIR)
    if "calibration=my_calibration.yaml" in text or "--calibration my_calibration.yaml" in text:
        with pytest.MonkeyPatch.context() as mp:  # what the page's calibrate line before it writes
            run_cli(mp, cwd, "calibrate", str(request.getfixturevalue("launched_run")), "--out", "my_calibration.yaml")
    if "/models/Qwen3.5-122B-A10B" in text:
        model_dir(cwd / "models" / "Qwen3.5-122B-A10B", "122b")
    if "--config-dir my_conf" in text:
        for shown in EXAMPLES:
            if shown.kind == "file" and shown.page == example.page and shown.name.startswith("my_conf/"):
                (cwd / shown.name).parent.mkdir(parents=True, exist_ok=True)
                (cwd / shown.name).write_text(shown.text)
    if "model=mymodel" in text:  # "a model:` node like conf/model/122b.yaml" and its layout (docs/extending.md)
        for group, ours, mine in (("model", "122b", "mymodel"), ("parallel", "122b_gpu", "mymodel_gpu")):
            (cwd / "my_conf" / group).mkdir(parents=True, exist_ok=True)
            shutil.copy(REPO / "conf" / group / f"{ours}.yaml", cwd / "my_conf" / group / f"{mine}.yaml")
    for word in shlex.split(text, comments=True):
        if word.endswith(".sh") and not word.startswith("scripts/"):
            (cwd / word).write_text(launch_script(RECORDED_122B))
        if word == "overrides.txt":
            (cwd / word).write_text(overrides_list(RECORDED_122B))
    if "/tmp/" in text:
        (cwd / "tmp").mkdir()
    if "--config-dir mine" in text:  # the preset the import above it on the page wrote
        imported = [made for command, made in MADE.items() if command.startswith(IMPORT)]
        if imported:
            shutil.copytree(imported[0] / "mine", cwd / "mine")
        else:
            (cwd / "my_run_qwen3_5_122b.sh").write_text(launch_script(RECORDED_122B))
            with pytest.MonkeyPatch.context() as mp:
                run_cli(mp, cwd, "import", "my_run_qwen3_5_122b.sh", "--device", "npu", "--out", "mine")


# -- what each kind must do ---------------------------------------------------------------------------------------


def is_launch(argv: list[str]) -> bool:
    words = [a for a in argv if not a.startswith("-")]
    if words and words[0] == "relaunch":
        return True
    if words and words[0] in SUBCOMMANDS:
        return False
    flags = {a.split("=")[0] for a in argv if a.startswith("-")}
    if flags & {"--help", "--cfg", "--presets", "--help-full", "--hydra-help", "--info"}:
        return False
    settings = dict(a.split("=", 1) for a in argv if "=" in a and not a.startswith("-"))
    return settings.get("dry_run", "false") == "false" and settings.get("submit", "none") == "none"


def tail(done) -> str:
    """The end of what the command said, for a failure's message."""
    return "\n".join(done.said.splitlines()[-40:])


def expect_launch_refused_for_devices(done, asked: list[str], relaunched: bool) -> None:
    import ray

    assert done.code == 2, tail(done)
    assert asked, f"the launch never reached the device check:\n{tail(done)}"
    if not relaunched:  # a relaunch prints its errors only
        assert "verdict    REFUSED" in done.said and "nothing launched" in done.said, tail(done)
    errors = [line for line in done.said.splitlines() if line.startswith("ERROR")]
    devices_error = [e for e in errors if e.startswith("ERROR   [parallel.nnodes (trainer.nnodes)")]
    assert devices_error and "per node [0]" in devices_error[0], tail(done)
    others = [e for e in errors if e not in devices_error and not e.startswith("ERROR   [launch_checks.stack]")]
    assert not others, "the preflight refused the example itself:\n" + "\n".join(others)
    assert not ray.is_initialized()


def expect(argv: list[str], done) -> None:
    words = [a for a in argv if not a.startswith("-")]
    command = words[0] if words and words[0] in SUBCOMMANDS else None
    settings = dict(a.split("=", 1) for a in argv if "=" in a and not a.startswith("-"))
    submit = settings.get("submit", "none")
    if command == "data":  # run where the files are (HOME): it skips them, nothing is downloaded
        assert done.code == 0 and done.out.count("skip") == 2, tail(done)
    elif command == "diff":  # "Exit 0 when equal, 1 when different"
        assert done.code == 1 and "Traceback" not in done.said, tail(done)
    elif command == "doctor":  # "exit 0 when all fit, 2 otherwise": this machine's stack decides
        assert done.code == (2 if "verdict: NOT ready" in done.out else 0), tail(done)
    elif submit == "ray_job":
        assert done.code == 2 and "submit.address=http://127.0.0.1:8260: cannot submit" in done.said, tail(done)
    elif submit == "kuberay":
        assert done.code == 2 and "kuberay    " in done.out and "creating RayJob " in done.said, tail(done)
    elif "-m" in argv and command is None:  # a sweep: exit 2 when any job was refused, as the summary shows
        jobs, valid = map(int, re.search(r"^sweep: (\d+) job\(s\), (\d+) valid", done.said, re.M).groups())
        assert done.code == (0 if valid == jobs else 2), tail(done)
    else:
        assert done.code == 0, tail(done)
    if submit == "slurm":
        assert "slurm      submitted job" in done.out or "chained jobs" in done.out, tail(done)


# -- the tests ----------------------------------------------------------------------------------------------------


def _param(kind: str):
    chosen = [e for e in EXAMPLES if e.kind == kind]
    return pytest.mark.parametrize("example", chosen, ids=[e.id for e in chosen])


RAN: dict[str, tuple] = {}  # a command as written -> its outcome and the devices it asked for


@_param("command")
def test_the_command(example: Example, cli, home, tmp_path, monkeypatch, request):
    if why := not_run_reason(example.text):
        pytest.skip(f"not run: {example.id} `{example.text.split('  #')[0].strip()}`: {why}")
    argv = argv_of(example.text, tmp_path, home)
    # Run once: a command as written on several pages (or twice on one), a launch script's name aside (the test
    # writes the same script under every name a page gives it).
    same = " ".join("SCRIPT.sh" if w.endswith(".sh") else w for w in shlex.split(example.text, comments=True))
    if same not in RAN:
        monkeypatch.setenv("HOME", str(home))
        monkeypatch.setenv("PATH", f"{STANDINS}:{os.environ['PATH']}")  # sbatch records the job, queue only
        monkeypatch.setenv("STANDIN_QUEUE_ONLY", "1")
        monkeypatch.setenv("STANDIN_LOG", str(tmp_path / "standin.log"))
        monkeypatch.setenv("KUBECONFIG", str(tmp_path / "no-kubeconfig"))  # and not a pod's service account:
        monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)  # no Kubernetes API is ever reached
        prepare(example, tmp_path, home, request)
        asked: list[str] = []

        def this_machine(cfg, resource: str) -> list[float]:  # what a Ray started here would report
            asked.append(resource)
            return [0.0]

        monkeypatch.setattr(devices, "cluster_devices", this_machine)
        RAN[same] = (cli(*argv), asked)
    done, asked = RAN[same]
    assert "Traceback" not in done.said, tail(done)
    if is_launch(argv):
        expect_launch_refused_for_devices(done, asked, relaunched=argv[0] == "relaunch")
    else:
        expect(argv, done)
    MADE.setdefault(same, tmp_path)


@_param("python")
def test_the_python(example: Example, home, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    exec(compile(example.text, example.id, "exec"), {"__name__": "__doc_example__"})


@_param("file")
def test_the_file(example: Example, tmp_path):
    """A file a page shows: ours under conf/ holds what the page says; yours (my_conf/) is valid YAML the
    commands of its page read (test_the_command writes it there)."""
    shown = yaml.safe_load(example.text)
    if example.name.startswith("conf/"):
        shipped = yaml.safe_load((REPO / example.name).read_text())

        def within(part, whole) -> bool:
            if isinstance(part, dict):
                return isinstance(whole, dict) and all(k in whole and within(v, whole[k]) for k, v in part.items())
            return part == whole

        assert within(shown, shipped), f"{example.id} shows {example.name} as it no longer is"
    else:
        assert example.name.startswith("my_conf/") and isinstance(shown, dict), example


def test_every_kind_not_run_is_still_on_a_page():
    """The NOT_RUN table stays as short as the pages: a kind no example has any more is removed."""
    commands = [e.text for e in EXAMPLES if e.kind == "command"]
    assert [start for start in NOT_RUN if not any(c.startswith(start) for c in commands)] == []


def test_the_pages_have_examples_of_every_kind():
    kinds = {e.kind for e in EXAMPLES}
    assert kinds == {"python", "command", "file"}, kinds
