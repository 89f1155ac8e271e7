"""A tiny geo3k-shaped data set: the parquet columns verl's RL dataset and our preflight read, and as many rows
as the largest preset's train_batch_size (verl's train dataloader drops an incomplete last batch, and a
data set smaller than one batch is refused)."""

from pathlib import Path

ROWS = 128  # conf/model/122b.yaml train_batch_size


def write_geo3k_stub(directory: Path) -> list[str]:
    """Write train.parquet and test.parquet into `directory`; return the overrides naming them."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    directory.mkdir(parents=True, exist_ok=True)
    table = pa.table(
        {
            "prompt": [[{"role": "user", "content": "1+1?"}]] * ROWS,
            "data_source": ["hiyouga/geometry3k"] * ROWS,
            "reward_model": [{"style": "rule", "ground_truth": "2"}] * ROWS,
        }
    )
    overrides = []
    for key, name in (("train_files", "train.parquet"), ("val_files", "test.parquet")):
        pq.write_table(table, directory / name)
        overrides.append(f"data.{key}={directory / name}")
    return overrides
