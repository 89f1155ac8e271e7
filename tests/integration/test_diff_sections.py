"""The diff leaves out no section: one change in every top-level section of the config is reported."""

import copy
import json

import pytest
import yaml
from omegaconf import OmegaConf

from verl_qwen35.cli.diff import main as diff_main
from verl_qwen35.config import compose


def _first_leaf(tree: dict, path: str) -> tuple[dict, str, str]:
    """(parent dict, key, dotted path) of the first scalar-or-list leaf under `tree`."""
    for key, value in tree.items():
        if isinstance(value, dict) and value:
            return _first_leaf(value, f"{path}.{key}")
        if not isinstance(value, dict):
            return tree, key, f"{path}.{key}"
    raise AssertionError(f"{path} has no leaf")


def _other(value):
    if isinstance(value, bool):
        return not value
    if isinstance(value, int | float):
        return value + 1
    if isinstance(value, list):
        return [*value, "extra"]
    return f"{value}_b"


@pytest.fixture(scope="module")
def every_section_differs(tmp_path_factory):
    """Two config files: B changes one leaf in every section of A, adds one key and removes one."""
    a = OmegaConf.to_container(compose(["model=35b", "device=gpu"]), resolve=True)
    b = copy.deepcopy(a)
    changed = {}
    for section in a:
        if not isinstance(a[section], dict) or not a[section]:
            b[section] = _other(a[section])
            changed[section] = (a[section], b[section])
            continue
        parent, key, dotted = _first_leaf(b[section], section)
        before = parent[key]
        parent[key] = _other(before)
        changed[dotted] = (before, parent[key])
    b["trainer"]["added_by_b"] = 1
    removed_parent, removed_key, removed = _first_leaf(b["data"], "data")
    removed_parent.pop(removed_key)
    changed.pop(removed, None)
    directory = tmp_path_factory.mktemp("diff")
    (directory / "a.yaml").write_text(yaml.safe_dump(a))
    (directory / "b.yaml").write_text(yaml.safe_dump(b))
    return directory / "a.yaml", directory / "b.yaml", changed, removed, sorted(a)


def test_json_reports_the_change_in_every_section(every_section_differs, capsys):
    a, b, changed, removed, sections = every_section_differs
    assert len(sections) >= 8, sections
    assert diff_main([str(a), str(b), "--format", "json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert {k: (v["a"], v["b"]) for k, v in report["changed"].items()} == changed
    assert report["added"] == {"trainer.added_by_b": 1}
    assert list(report["removed"]) == [removed]
    assert {k.split(".")[0] for k in [*report["changed"], *report["added"], *report["removed"]]} == set(sections)


@pytest.mark.parametrize("fmt", ["text", "markdown"])
def test_every_section_is_shown(every_section_differs, capsys, fmt):
    a, b, changed, removed, sections = every_section_differs
    assert diff_main([str(a), str(b), "--format", fmt]) == 1
    out = capsys.readouterr().out
    for key in [*changed, removed, "trainer.added_by_b"]:
        assert key in out, f"{fmt} leaves out {key}"
    if fmt == "text":
        assert all(f"[{section}]" in out for section in sections)
        assert f"{len(changed)} changed, 1 added, 1 removed" in out
