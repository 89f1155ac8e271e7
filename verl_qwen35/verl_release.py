"""Which verl releases this release of verl_qwen35 knows, and how a verl it does not know is judged.

A verl within the known releases composes with its schema (conf/verl_schema/) and follows the rules read
for it. A newer one (a dev build of verl main reports 0.10.0.dev; a future release) is not refused: its own
config files decide the schema (whether its Megatron engine config still has `grad_offload`, the one key
the schemas differ by), the rules read for the newest known release apply, and the verdict says they were
not verified for it. Only a verl older than the oldest known one is refused: verl 0.8.0 is the first
release with Qwen3.5 MoE rollout on Ascend (verl PR #5652) and the oldest whose config the presets were
ever composed on.
"""

import re
from dataclasses import dataclass
from pathlib import Path

from packaging.version import InvalidVersion, Version

from verl_qwen35.disk import read_bytes
from verl_qwen35.errors import UserError

# verl minor -> the `verl_schema` option composing its config. An exact release in EXACT takes its own:
# verl 0.9.0's megatron config still has grad_offload (verl 0.9.0 verl/trainer/config/engine/megatron.yaml),
# removed in 0.9.1.
KNOWN = {(0, 8): "v0_8", (0, 9): "v0_9"}
EXACT = {"0.9.0": "v0_9_0"}
OLDEST = min(KNOWN)
NEWEST = max(KNOWN)
# The schema of a newer verl, chosen by its own files: with `grad_offload` in its Megatron engine config the
# patch sets it as for 0.8 / 0.9.0 (v0_9_0 composes v0_8's key on the newest known schema), else v0_9.
WITH_GRAD_OFFLOAD, WITHOUT_GRAD_OFFLOAD = "v0_9_0", "v0_9"
MEGATRON_ENGINE = Path("engine") / "megatron.yaml"  # under verl/trainer/config
_GRAD_OFFLOAD = re.compile(rb"^grad_offload\s*:", re.MULTILINE)
_MAX_BYTES = 256 * 1024  # verl's engine/megatron.yaml is ~6 KiB


def shown(minor: tuple[int, int]) -> str:
    return f"{minor[0]}.{minor[1]}.x"


@dataclass(frozen=True)
class VerlStanding:
    """A verl version as this release judges it: the schema it composes with and whether its rules were read."""

    version: str
    schema: str
    newer: bool  # newer than the newest known release: its rules were not verified
    why: str = ""  # how the schema of a newer verl was chosen

    @property
    def unverified(self) -> str | None:
        """The sentence the verdict prints for a verl newer than the known ones (None for a known one)."""
        if not self.newer:
            return None
        return (
            f"verl {self.version} is newer than {shown(NEWEST)}, the newest this release knows: its rules were not "
            f"verified. Its own config files were composed (verl_schema={self.schema}: {self.why}); the rules and "
            f"field lists of verl {shown(NEWEST)} were applied"
        )


def release_of(found: str) -> tuple[int, ...]:
    try:
        return Version(found).release
    except InvalidVersion:
        return ()


def standing(found: str, config_dir: Path | None = None) -> VerlStanding:
    """How a verl version is judged; `config_dir` is its verl/trainer/config (read for a newer verl's schema).
    A version that cannot be read, or is older than the oldest known, is refused naming what works."""
    release = release_of(found)
    if len(release) < 2:
        raise UserError(f"verl reports the version {found!r}, which is not a PEP 440 version; reinstall verl")
    minor = (release[0], release[1])
    if minor < OLDEST:
        raise UserError(
            f"verl {found} is older than {OLDEST[0]}.{OLDEST[1]}.0, the oldest verl_qwen35 works with (verl 0.8.0 is "
            f"the first with Qwen3.5 MoE rollout on Ascend, verl PR #5652): install verl {OLDEST[0]}.{OLDEST[1]} or "
            f"newer, e.g. pip install --no-deps 'verl==0.9.1'"
        )
    if minor in KNOWN:
        exact = ".".join(str(part) for part in (*release, 0, 0)[:3])
        return VerlStanding(found, EXACT.get(exact, KNOWN[minor]), newer=False)
    has = grad_offload_in(config_dir) if config_dir is not None else None
    if has is None:
        why = f"its {MEGATRON_ENGINE} could not be read, so the newest known release's schema"
        return VerlStanding(found, KNOWN[NEWEST], newer=True, why=why)
    if has:
        return VerlStanding(found, WITH_GRAD_OFFLOAD, newer=True, why=f"its {MEGATRON_ENGINE} has grad_offload")
    return VerlStanding(found, WITHOUT_GRAD_OFFLOAD, newer=True, why=f"its {MEGATRON_ENGINE} has no grad_offload")


def grad_offload_in(config_dir: Path) -> bool | None:
    """Whether verl's Megatron engine config has a top-level `grad_offload` key (None: the file is not there).
    Read as bytes with a size bound and scanned line by line: the file is data, never trusted."""
    try:
        text = read_bytes(config_dir / MEGATRON_ENGINE, _MAX_BYTES)
    except (OSError, UserError):
        return None
    return bool(_GRAD_OFFLOAD.search(text))
