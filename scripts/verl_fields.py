"""Regenerate verl_qwen35/data/upstream/verl_<major.minor>.json from the installed verl and megatron-core.

The fast preflight checks the kind of every verl key (checks/verl_types.py) and the names verl and
megatron-core look up (checks/verl_names.py) against this file, so it never imports verl or torch.
tests/integration/test_verl_fields.py compares the shipped file with the installed packages; CI runs it on
verl 0.9 and 0.8. Run once per verl minor, with that verl's Python:
    python scripts/verl_fields.py            # e.g. /work/main/.venv-verl0.8/bin/python for verl_0.8.json
    python scripts/verl_fields.py --check    # exit 1 if the shipped file differs
"""

import json
import sys
import warnings
from importlib.metadata import version
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from verl_qwen35.data import UPSTREAM_DIR  # noqa: E402
from verl_qwen35.validators.verl_fields import live_dataclass_fields, live_fields  # noqa: E402
from verl_qwen35.validators.verl_names import live_names  # noqa: E402

COMPARED = ("fields", "names", "dataclass_fields")


def describe() -> dict:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # megatron-core's "Transformer Engine and Apex are not installed"
        names = live_names()
    return {
        "verl": version("verl"),
        "megatron_core": version("megatron-core"),
        "source": "fields: verl/trainer/config/_generated_ppo_megatron_trainer.yaml and the dataclasses its "
        "_target_ entries name (verl/workers/config/*.py, verl/trainer/config/*.py); dataclass_fields: the "
        "field names of those dataclasses; names: verl's registries "
        "and megatron-core's optimizer and scheduler (verl_qwen35/validators/verl_names.py)",
        "generated_by": "scripts/verl_fields.py",
        "fields": live_fields(),
        "names": names,
        "dataclass_fields": live_dataclass_fields(),
    }


def main() -> None:
    data = describe()
    minor = ".".join(data["verl"].split(".")[:2])
    path = UPSTREAM_DIR / f"verl_{minor}.json"
    if "--check" in sys.argv:
        shipped = json.loads(path.read_text()) if path.is_file() else {}
        stale = [k for k in COMPARED if shipped.get(k) != data[k]]
        if stale:
            print(f"{path} is stale ({', '.join(stale)}): run python scripts/verl_fields.py with verl {data['verl']}")
            sys.exit(1)
        return
    path.write_text(json.dumps(data, indent=1) + "\n")
    print(f"wrote {path} ({len(data['fields'])} keys, {sum(map(len, data['names'].values()))} names)")


if __name__ == "__main__":
    main()
