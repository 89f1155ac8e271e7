"""Our composed config equals verl's own launch scripts, but for the listed deliberate differences.

Two recordings: seed_overrides/ (the scripts at the Ascend PR's merge, verl 81fbf5e48, and 397B at 1dda039b) and
upstream_overrides/ (the scripts at verl main 1dda039b). The presets follow upstream; each entry of
differences.yaml names the recordings (`sets`) it applies to, both when omitted.
"""

import fnmatch
import re
from pathlib import Path

import pytest
import yaml
from hydra import compose, initialize_config_dir

from verl_qwen35.config import compose as compose_ours
from verl_qwen35.installed import installed_verl_schema, verl_config_dir
from verl_qwen35.review.flat import flatten
from verl_qwen35.run.environment import effective_env

# On every verl CI tests (-m each_verl): verl's scripts composed on the installed verl's schema.
pytestmark = pytest.mark.each_verl

HERE = Path(__file__).parents[1] / "seed_fidelity"
SETS = ("seed_overrides", "upstream_overrides")
COMBOS = ["35b_gpu", "35b_npu", "122b_gpu", "122b_npu", "397b_gpu", "397b_npu"]
RECORDED = [(s, c) for s in SETS for c in COMBOS if (HERE / s / f"{c}.txt").is_file()]
# Keys a recording sets that the installed verl has no field for, by schema: verl 0.9 removed grad_offload
# (param_offload also releases gradient buffers); verl 0.8 has no runtime_env.py_executable (verl PR #7127
# added it for the uv launch; the scripts pass null, its default).
GONE = {"v0_9": ("grad_offload=",), "v0_8": ("runtime_env.py_executable=",)}
DIFFERENCES = yaml.safe_load((HERE / "differences.yaml").read_text())
ABSENT = "<absent>"


def _glob(pattern: str) -> re.Pattern[str]:
    """fnmatch plus {a,b} alternatives."""
    parts = re.split(r"\{([^}]*)\}", pattern)
    regex = "".join(
        "(?:" + "|".join(fnmatch.translate(alt)[4:-3] for alt in part.split(",")) + ")"
        if i % 2
        else fnmatch.translate(part)[4:-3]
        for i, part in enumerate(parts)
    )
    return re.compile(f"(?s:{regex})\\Z")


def _seed(combo: str, recording: str) -> tuple[list[str], dict[str, object], dict[str, str]]:
    """(overrides verl accepts, overrides it has no key for, environment)."""
    overrides, _, env = (HERE / recording / f"{combo}.txt").read_text().partition("\n#ENV\n")
    lines = [line for line in overrides.splitlines() if line and not line.startswith("#")]
    absent = GONE[installed_verl_schema()]
    dropped = [line for line in lines if any(name in line for name in absent)]
    gone = {k: yaml.safe_load(v) for k, v in (line.split("=", 1) for line in dropped)}
    lines = [line for line in lines if line not in dropped]
    return lines, gone, dict(line.split("=", 1) for line in env.split())


def _listed(key: str, combo: str, recording: str) -> list[int]:
    schema = installed_verl_schema()
    return [
        i
        for i, entry in enumerate(DIFFERENCES)
        if _glob(entry["key"]).match(key)
        and combo in entry.get("combos", COMBOS)
        and recording in entry.get("sets", SETS)
        and entry.get("schema", schema) == schema
    ]


def differences(
    combo: str, monkeypatch: pytest.MonkeyPatch, recording: str = "upstream_overrides"
) -> dict[str, tuple[object, object]]:
    monkeypatch.setenv("HOME", "/home/user")
    lines, gone, seed_env = _seed(combo, recording)
    with initialize_config_dir(str(verl_config_dir()), version_base=None):
        seed = flatten(compose("ppo_trainer", overrides=lines)) | gone
    model, device = combo.rsplit("_", 1)
    cfg = compose_ours([f"model={model}", f"device={device}"])
    ours = flatten(cfg)
    seed.update({f"ENV.{k}": v for k, v in seed_env.items()})
    ours.update({f"ENV.{k}": v for k, v in effective_env(cfg, environ={}).items() if v != ""})
    keys = seed.keys() | ours.keys()
    return {
        k: (seed.get(k, ABSENT), ours.get(k, ABSENT))
        for k in sorted(keys)
        if seed.get(k, ABSENT) != ours.get(k, ABSENT)
    }


@pytest.mark.parametrize(("recording", "combo"), RECORDED)
def test_every_difference_from_the_script_is_listed(recording, combo, monkeypatch):
    found = differences(combo, monkeypatch, recording)
    unlisted = {k: v for k, v in found.items() if not _listed(k, combo, recording)}
    assert not unlisted, f"differences from {recording}/{combo}.txt not in differences.yaml:\n" + "\n".join(
        f"  {k}: seed={a!r} ours={b!r}" for k, (a, b) in unlisted.items()
    )


def test_every_listed_difference_still_occurs(monkeypatch):
    used = {
        i
        for recording, combo in RECORDED
        for k in differences(combo, monkeypatch, recording)
        for i in _listed(k, combo, recording)
    }
    schema = installed_verl_schema()
    stale = [e["key"] for i, e in enumerate(DIFFERENCES) if i not in used and e.get("schema", schema) == schema]
    assert not stale, f"differences.yaml lists differences that no longer occur: {stale}"


def test_an_unlisted_change_is_caught(monkeypatch):
    """The comparison itself sees a one-key change (guards against a vacuous pass)."""
    original = compose_ours
    monkeypatch.setattr(
        "tests.integration.test_seed_fidelity.compose_ours",
        lambda overrides: original([*overrides, "actor_rollout_ref.rollout.n=7"]),
    )
    found = differences("35b_gpu", monkeypatch)
    assert found["actor_rollout_ref.rollout.n"] == (5, 7)
    assert not _listed("actor_rollout_ref.rollout.n", "35b_gpu", "upstream_overrides")
