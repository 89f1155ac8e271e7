"""`verl-qwen35 estimate --json` names every term (update, log-prob passes, rollout, host) as docs/planning.md says."""

import json
import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs" / "planning.md"


def _documented_terms() -> dict[str, set[str]]:
    """key -> the backticked names in its meaning cell, for the `*_breakdown` rows of the estimate's JSON table."""
    section = DOCS.read_text().split("### `verl-qwen35 estimate --json`", 1)[1].split("\n### ", 1)[0]
    terms = {}
    for line in section.splitlines():
        cells = line.split("|")
        if line.startswith("| `") and cells[1].strip(" `").endswith("_breakdown"):
            terms[cells[1].strip(" `")] = set(re.findall(r"`([a-z_]+)`", cells[2]))
    return terms


@pytest.mark.parametrize("device", ["gpu", "npu"])
def test_every_breakdown_names_exactly_the_documented_terms(cli, device):
    run = cli("estimate", "model=122b", f"device={device}", "--json")
    assert run.code == 0, run.err
    data = json.loads(run.out)
    documented = _documented_terms()
    assert set(documented) == {key for key in data if key.endswith("_breakdown")}
    for key, terms in documented.items():
        assert set(data[key]) == terms, key


def test_the_peaks_are_the_sums_the_terms_say(cli):
    data = json.loads(cli("estimate", "model=122b", "device=npu", "--json").out)
    t, lp, r = data["train_breakdown"], data["log_prob_breakdown"], data["rollout_breakdown"]
    update = sum(v for k, v in t.items() if k != "log_prob_pass")
    assert data["update_gib"] == pytest.approx(update, abs=0.05)
    assert lp["old_log_prob"] == pytest.approx(
        lp["resident"] + lp["loaded_weights"] + lp["old_log_prob_activations"] + lp["old_log_prob_logits"], abs=0.05
    )
    assert data["log_prob_gib"] == pytest.approx(
        max(lp["old_log_prob"], lp["ref_log_prob"]) + t["reserved"] + t["hccl_buffers"], abs=0.05
    )
    assert data["train_gib"] == pytest.approx(max(data["update_gib"], data["log_prob_gib"]), abs=0.01)
    assert data["rollout_gib"] == pytest.approx(
        r["actor_residue"] + r["reserved"] + r["hccl_buffers"] + r["vllm_budget"], abs=0.05
    )
    # The whole run beside it, numbers as numbers; the data set is not here, so no step count is invented.
    run = data["whole_run"]
    assert run["steps"] is None and run["wall_hours"] is None and run["steps_from"].startswith("unknown: ")
    assert type(run["step"]["point"]) is float and run["checkpoint"]["saves"] is None
    assert run["checkpoint"]["gib_per_save"] == pytest.approx(sum(run["checkpoint"]["parts_gib"].values()), abs=0.02)
