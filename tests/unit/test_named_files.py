"""Every file of ours that a docstring or comment names exists: a reader sent to `run/devices.py` finds it.

Named as `verl_qwen35/<path>.py`, `<subpackage>/<path>.py` (relative to the package) or `tests/<path>.py`;
upstream paths (`verl/trainer/...`, `megatron/core/...`) are left alone.
"""

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "verl_qwen35"
SUBPACKAGES = sorted(p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").exists())
NAMED = re.compile(rf"(?<![\w./-])((?:verl_qwen35|tests|{'|'.join(SUBPACKAGES)})/[\w/]+\.py)\b")


def test_every_file_named_in_our_sources_exists():
    missing = []
    for path in sorted([*PACKAGE.rglob("*.py"), *(REPO / "tests").rglob("*.py")]):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            for named in NAMED.findall(line):
                where = REPO / named if named.startswith(("verl_qwen35/", "tests/")) else PACKAGE / named
                if not where.exists():
                    missing.append(f"{path.relative_to(REPO)}:{number}: {named}")
    assert not missing, "\n".join(missing)
