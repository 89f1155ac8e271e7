"""What a newcomer meets first: the README's example as written, run directories, and the Python API."""

import re
import subprocess
import sys
import textwrap
import time
from datetime import datetime
from pathlib import Path

import pytest

from verl_qwen35 import Candidate, MemoryEstimate, Problem, compose, estimate, plan, preflight, resolve

README = Path(__file__).resolve().parents[2] / "README.md"


def _run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "verl_qwen35", *args], cwd=cwd, capture_output=True, text=True)


def test_the_readme_layout_example_works_as_written(tmp_path):
    text = README.read_text()
    name, body = re.search(r"\n    (my_conf/parallel/\S+\.yaml):\n((?:        .*\n)+)", text).groups()
    command = next(line.strip() for line in text.splitlines() if line.strip().startswith("verl-qwen35 --config-dir"))
    path = tmp_path / name
    path.parent.mkdir(parents=True)
    path.write_text(textwrap.dedent(body))
    done = _run(*command.split()[1:], cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "world      8 node(s) x 16 = 128 devices" in done.stdout
    assert "verdict    OK" in done.stdout


def _outputs_dir(stdout: str) -> Path:
    return Path(re.search(r"^outputs\s+(\S+)", stdout, re.M).group(1))


def test_two_runs_a_second_apart_get_their_own_directories_dated_now(tmp_path):
    dirs, stamps = [], []
    for _ in range(2):
        before = datetime.now().replace(microsecond=0)
        done = _run("device=gpu", "model=35b", "dry_run=true", cwd=tmp_path)
        after = datetime.now()
        assert done.returncode == 0, done.stderr
        out = _outputs_dir(done.stdout)
        day, clock = out.parent.name, out.name.rsplit("-", 1)[0]
        started = datetime.strptime(f"{day} {clock}", "%Y-%m-%d %H-%M-%S")
        assert before <= started <= after, (started, before, after)
        dirs.append(out)
        stamps.append(started)
        time.sleep(1.1)
    assert dirs[0] != dirs[1] and stamps[0] < stamps[1]
    assert all((d / "verdict.json").is_file() for d in dirs)  # a passing dry run keeps its verdict


def test_the_python_api_composes_checks_estimates_and_plans():
    cfg = compose(["device=npu", "model=122b"])
    run = resolve(cfg)
    found = preflight(run)
    assert all(isinstance(p, Problem) for p in found)
    assert not [p for p in found if p.level == "error"], found
    memory = estimate(run)
    assert isinstance(memory, MemoryEstimate) and memory.fits
    assert 0 < memory.train_gib < memory.device_memory_gib
    best = plan(run, nnodes=4, devices_per_node=16, top=3)
    assert 1 <= len(best) <= 3 and all(isinstance(c, Candidate) and c.fits for c in best)
    assert all(c.layout.world == 64 for c in best)
    # The caller's config is not resolved or changed by the API: parallel.* still feeds verl's keys.
    from omegaconf import OmegaConf

    assert OmegaConf.to_container(cfg.trainer, resolve=False)["nnodes"] == "${parallel.nnodes}"


def test_a_run_is_resolved_once_and_cannot_be_edited():
    """`resolve` gives the one resolved value the checks, the estimate and the planner read: editing it raises."""
    import dataclasses

    from omegaconf import OmegaConf
    from omegaconf.errors import ReadonlyConfigError

    from verl_qwen35 import Run

    cfg = compose(["device=npu", "model=122b"])
    run = resolve(cfg)
    assert isinstance(run, Run)
    assert run.config.trainer.nnodes == run.layout.nnodes == 4  # resolved: no interpolation left
    assert run.estimate == estimate(run) == estimate(resolve(cfg))
    assert preflight(run) == preflight(resolve(cfg))
    with pytest.raises(ReadonlyConfigError):
        run.config.parallel.tp = 8
    with pytest.raises(ReadonlyConfigError):
        run.composed.parallel.tp = 8
    with pytest.raises(dataclasses.FrozenInstanceError):
        run.mode = "launch"
    with pytest.raises(TypeError):
        run.choices["model"] = "35b"
    # The caller's config stays as composed, and editable.
    cfg.parallel.tp = 4
    assert OmegaConf.to_container(cfg.trainer, resolve=False)["nnodes"] == "${parallel.nnodes}"


def test_the_api_refuses_a_wrong_type_naming_the_key():
    from verl_qwen35.errors import UserError

    with pytest.raises(UserError, match=r"parallel\.tp.*two"):
        compose(["device=gpu", "model=35b", "parallel.tp=two"])


DOCS = Path(__file__).resolve().parents[2] / "docs" / "planning.md"


def _documented_keys(title: str) -> set[str]:
    """The first-column keys of the table under `### <title>` in docs/planning.md."""
    section = DOCS.read_text().split(f"### `{title}`", 1)[1].split("\n### ", 1)[0]
    rows = [line.split("|")[1] for line in section.splitlines() if line.startswith("| `")]
    return {key.strip(" `") for row in rows for key in row.split(",")}


def test_the_json_of_estimate_and_plan_has_exactly_the_documented_keys(tmp_path):
    import json

    done = _run("estimate", "device=npu", "model=122b", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert set(json.loads(done.stdout)) == _documented_keys("verl-qwen35 estimate --json")
    done = _run("plan", "device=npu", "model=122b", "--top", "2", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)
    assert rows and all(set(row) == _documented_keys("verl-qwen35 plan --json") for row in rows)
