"""Where each of verl's tracking backends writes, by the variable that says so (conf/logger/ sets them).

verl/utils/tracking.py (verl 0.8.0 and 0.9.1): FileLogger opens $VERL_FILE_LOGGER_PATH, _TensorboardAdapter writes
to $TENSORBOARD_DIR, swanlab.init(logdir=$SWANLAB_LOG_DIR, mode=$SWANLAB_MODE), mlflow.set_tracking_uri(
$MLFLOW_TRACKING_URI); wandb reads WANDB_DIR and WANDB_MODE itself (wandb/sdk/wandb_settings.py root_dir, mode).
"""

PLACE = {
    "file": "VERL_FILE_LOGGER_PATH",
    "tensorboard": "TENSORBOARD_DIR",
    "wandb": "WANDB_DIR",
    "swanlab": "SWANLAB_LOG_DIR",
    "mlflow": "MLFLOW_TRACKING_URI",
}
MODE = {"wandb": "WANDB_MODE", "swanlab": "SWANLAB_MODE"}

# The names conf/logger/file.yaml and tensorboard.yaml give under the run directory (the report's fallback).
METRICS_FILE = "metrics.jsonl"
TENSORBOARD_DIR = "tensorboard"
