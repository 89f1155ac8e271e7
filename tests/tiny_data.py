"""A one-row geo3k-shaped data set: the parquet columns verl's RL dataset and our preflight read."""

from pathlib import Path


def write_geo3k_stub(directory: Path) -> list[str]:
    """Write train.parquet and test.parquet into `directory`; return the overrides naming them."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    directory.mkdir(parents=True, exist_ok=True)
    table = pa.table(
        {
            "prompt": [[{"role": "user", "content": "1+1?"}]],
            "data_source": ["hiyouga/geometry3k"],
            "reward_model": [{"style": "rule", "ground_truth": "2"}],
        }
    )
    overrides = []
    for key, name in (("train_files", "train.parquet"), ("val_files", "test.parquet")):
        pq.write_table(table, directory / name)
        overrides.append(f"data.{key}={directory / name}")
    return overrides
