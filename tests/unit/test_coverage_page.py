"""docs/coverage.md is current: it lists the keys the start-up trace lists, a few of its rows measured again here
give the same fast verdicts, and scripts/coverage.py prints its summary (keys, % fast, % full).

Cheap by design (a few seconds): only a sample of rows is measured again, only at the fast depth (the full
depth imports torch, megatron-core and verl: the whole page is `python scripts/coverage.py`, ~10 minutes).
"""

import hashlib
import importlib.metadata as md
import re
import runpy
from pathlib import Path

import pytest
from omegaconf import OmegaConf

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = runpy.run_path(str(ROOT / "scripts" / "coverage.py"))
PAGE = ROOT / "docs" / "coverage.md"
KINDS = {"refuses": "value", "type only": "type", "warns on": "warns", "—": "none"}


def page_rows() -> dict[str, list[str]]:
    """key -> the cells of its row, as the page holds them."""
    return page_rows_of(PAGE.read_text())


def page_rows_of(text: str) -> dict[str, list[str]]:
    rows = {}
    for line in text.splitlines():
        if line.startswith("| `"):
            cells = [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
            rows[cells[0].split("`")[1]] = cells
    return rows


def fast_kind(cell: str) -> str:
    return next(kind for prefix, kind in KINDS.items() if cell.startswith(prefix))


def sample(rows: dict[str, list[str]]) -> list[str]:
    """One row of each fast verdict the page shows, chosen by a hash of the key (the same rows each run)."""
    chosen: dict[str, str] = {}
    for key in sorted(rows, key=lambda k: hashlib.sha1(k.encode()).hexdigest()):
        chosen.setdefault(fast_kind(rows[key][2]), key)
    return sorted(chosen.values())


def skip_without_the_trace(text: str) -> None:
    """A page measured on the start-up trace can be checked only where the trace is."""
    if "`verl_qwen35/data/startup_trace.yaml`" in text and not SCRIPT["TRACE"].is_file():
        pytest.skip("the page was measured on verl_qwen35/data/startup_trace.yaml, which this tree lacks")


def test_the_page_lists_every_traced_key_and_says_how_to_regenerate_it():
    text = PAGE.read_text()
    assert "python scripts/coverage.py" in text and "do not edit by hand" in text
    assert re.search(r"\*\*coverage: \d+ keys; fast \d+ \([\d.]+%", text), "the summary line"
    skip_without_the_trace(text)
    trace = SCRIPT["TRACE"]
    if trace.is_file():
        assert set(page_rows()) == set(SCRIPT["load_trace"](trace)), "regenerate: python scripts/coverage.py"
    else:
        composed = SCRIPT["compose"](list(SCRIPT["PRESET"]))
        leaves = {k for k, _ in SCRIPT["leaves"](OmegaConf.to_container(composed, resolve=False))}
        assert set(page_rows()) == leaves, "regenerate: python scripts/coverage.py"


def test_the_script_measures_sampled_rows_as_the_page_has_them_and_prints_its_summary(tmp_path, capsys):
    """One run of the script on a sample of the page's keys (one composition): it prints the summary line, and
    its rows are the page's rows wherever the page can be checked (the same verl, the trace in the tree)."""
    text = PAGE.read_text()
    assert f"Measured on `{' '.join(SCRIPT['PRESET'])}`" in text
    rows = page_rows()
    keys = sample(rows)
    out = tmp_path / "coverage.md"
    summary = SCRIPT["main"](["--fast-only", "--keys", ",".join(keys), "--out", str(out)])
    printed = capsys.readouterr().out
    n = len(keys)
    assert summary.keys == n
    assert re.search(rf"coverage: {n} keys; fast \d+ \([\d.]+%, [\d.]+% beyond the type\); full not measured", printed)
    verl = re.search(r"verl\s+(\S+)\. How it is measured", text)
    if verl is None or verl.group(1) != md.version("verl"):
        pytest.skip("the page was measured on another verl")
    skip_without_the_trace(text)
    again = {k: cells[:3] for k, cells in page_rows_of(out.read_text()).items()}
    assert again == {k: rows[k][:3] for k in keys}, "regenerate docs/coverage.md: python scripts/coverage.py"
    assert summary.fast == sum(fast_kind(rows[k][2]) != "none" for k in keys)
