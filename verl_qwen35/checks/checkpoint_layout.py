"""Which verl wrote a Megatron checkpoint, read from its file names, against the installed verl.

verl PR #6014 split the Megatron checkpoint of one role (`<default_local_dir>/global_step_<N>/actor`):
- v1, written by verl 0.8.0 (`verl/utils/megatron_utils.py` get_dist_checkpoint_path /
  get_hf_model_checkpoint_path): `dist_ckpt/` (optimizer, rng, maybe model shards) and `huggingface/` at the
  role directory's root, beside `transformer_config.json`;
- v2, written by verl 0.9.1 (`MegatronCheckpointManager.MANIFEST_SCHEMA_VERSION = 2`): `model/` (`dist_ckpt/`,
  `huggingface/`), `optimizer/dist_ckpt/`, `extra/dist_ckpt/`, `transformer_config.json`, `ckpt_contents.json`.
verl 0.9.1 refuses v1 in `MegatronCheckpointManager._raise_for_old_layout` (v2 when any of model/, optimizer/,
extra/ is a directory; v1 when not and a root `dist_ckpt/` or `huggingface/` is non-empty), but only in
the workers, after Ray and every device have started; verl 0.8.0 reads `<role>/dist_ckpt` and fails on a v2
directory. The migration (v1 -> v2 only) is verl 0.9.1's `scripts/migrate_megatron_checkpoint_layout.py`.
"""

from pathlib import Path

V2_DIRS = ("model", "optimizer", "extra")
V1_DIRS = ("dist_ckpt", "huggingface")
MIGRATE = "python scripts/migrate_megatron_checkpoint_layout.py"  # in verl 0.9.1's source tree


def _non_empty(path: Path) -> bool:
    return path.is_dir() and any(path.iterdir())


def written_layout(role: Path) -> str | None:
    """ "v2", "v1", or None (nothing verl would load), by the rule of verl 0.9.1's _raise_for_old_layout."""
    if not role.is_dir():
        return None
    if any((role / name).is_dir() for name in V2_DIRS):
        return "v2"
    if any(_non_empty(role / name) for name in V1_DIRS):
        return "v1"
    return None


def mismatch(role: Path, schema: str, root: Path) -> str | None:
    """Why the installed verl (schema v0_8 | v0_9) cannot load this role directory, with what to run; None if it can."""
    layout = written_layout(role)
    if layout == "v1" and schema != "v0_8":
        return (
            f"{role} holds a v1 Megatron checkpoint (dist_ckpt/ at its root: written by verl 0.8), which the "
            f"installed verl 0.9 refuses after every device has started (verl PR #6014); migrate it first with "
            f"`{MIGRATE} --checkpoint {role}` (or `--checkpoint-root {root} --all-steps`), from verl 0.9.1's "
            "source tree"
        )
    if layout == "v2" and schema == "v0_8":
        return (
            f"{role} holds a v2 Megatron checkpoint (model/, optimizer/, extra/: written by verl 0.9), which the "
            "installed verl 0.8 cannot read (it loads <role>/dist_ckpt) and no script migrates back; resume it "
            "with verl 0.9, or start afresh with trainer.resume_mode=disable"
        )
    return None
