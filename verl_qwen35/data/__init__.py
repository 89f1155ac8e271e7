"""Data shipped with the package, each file naming its source: version matrices, upstream field lists."""

from pathlib import Path

DATA_DIR = Path(__file__).resolve().parent
MATRIX_DIR = DATA_DIR / "matrix"  # the software stack each device needs (doctor, launch checks)
UPSTREAM_DIR = DATA_DIR / "upstream"  # megatron-core / MindSpeed / verl field lists (scripts/*_fields.py)
