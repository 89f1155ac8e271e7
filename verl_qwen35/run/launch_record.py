"""What a launch records in its launch.yaml: the environment it really uses, its checkpoint directory made absolute.

The file itself (its shape, writer and reader) is records/launch.py; here the launch decides the values that
go into it, which depend on the shell it runs in (run/environment.py effective_env), and warns when a
multi-node run's checkpoints must be on shared storage.
"""

import os
import sys
from pathlib import Path

from omegaconf import DictConfig

from verl_qwen35.config.placement import absolute_checkpoint_dir
from verl_qwen35.config.secrets import shell_secrets
from verl_qwen35.installed import installed_verl_schema
from verl_qwen35.records.launch import record, write_record
from verl_qwen35.run.environment import effective_env
from verl_qwen35.terminal import say

SHARED_STORAGE_WARNING = (
    "WARNING [trainer.default_local_dir] {path}: with {nnodes} nodes, checkpoints must be on storage every "
    "node sees (NFS, Lustre, a bucket mount); a node-local directory loses the other nodes' shards"
)


def shared_storage_warning(cfg: DictConfig) -> str | None:
    nnodes = cfg.trainer.nnodes
    if isinstance(nnodes, int) and nnodes > 1:
        return SHARED_STORAGE_WARNING.format(path=cfg.trainer.default_local_dir, nnodes=nnodes)
    return None


def write_launch_file(cfg: DictConfig, run_dir: str | Path, schema: str | None = None) -> Path:
    """Write `<run_dir>/launch.yaml` for this resolved config; warn when checkpoints must be shared."""
    absolute_checkpoint_dir(cfg)
    environ = dict(os.environ)
    used, not_recorded = effective_env(cfg, environ), sorted(shell_secrets(environ))
    path = write_record(run_dir, record(cfg, schema or installed_verl_schema(), used, not_recorded, run_dir))
    if warning := shared_storage_warning(cfg):
        say(warning, file=sys.stderr)
    return path
