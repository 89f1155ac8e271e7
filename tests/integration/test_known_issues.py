"""Known upstream issues (verl_qwen35/data/known_issues.yaml): each shipped entry's trigger composes and the dry
run names the thread; the presets and the workaround do not trigger it; a team's own entries from --config-dir
are applied by the dry run and listed by doctor; a team file of the wrong shape is refused naming file and key."""

import os
from pathlib import Path

import pytest
import yaml

from verl_qwen35.checks.known_issues import SHIPPED
from verl_qwen35.installed import installed_vllm

# (entry, a command that triggers it, the level said, a command with the workaround or the preset that does not)
TRIGGERS = {
    "verl-7978": (
        ["device=gpu", "model=35b", "hardware=b200"],
        "WARNING",
        ["device=gpu", "model=35b", "hardware=b200",
         "+actor_rollout_ref.rollout.engine_kwargs.vllm.moe_backend=triton"],
    ),
    "vllm-ascend-11548": (
        ["device=npu", "model=35b", "parallel.gen_ep=8", "parallel.gen_tp=1", "parallel.gen_dp=8"],
        "WARNING",
        ["device=npu", "model=35b", "parallel.gen_ep=8", "parallel.gen_tp=1", "parallel.gen_dp=8",
         "actor_rollout_ref.rollout.free_cache_engine=false"],
    ),
    "slime-2091": (
        ["device=gpu", "model=36_35b", "actor_rollout_ref.rollout.name=sglang"],
        "WARNING",
        ["device=gpu", "model=36_35b"],
    ),
    "vllm-ascend-10014": (
        ["device=npu", "model=122b", "env.set.VLLM_ASCEND_ENABLE_NZ=2"],
        "ERROR",
        ["device=npu", "model=122b"],
    ),
    "verl-7578": (
        ["device=npu", "model=35b", "hardware=a2"],
        "WARNING",
        ["device=npu", "model=35b"],
    ),
}  # fmt: skip


def _shipped() -> list[dict]:
    return yaml.safe_load(SHIPPED.read_text())["issues"]


def test_every_shipped_entry_has_a_trigger_test():
    assert sorted(e["id"] for e in _shipped()) == sorted(TRIGGERS)


@pytest.mark.parametrize("entry", _shipped(), ids=lambda e: e["id"])
def test_a_shipped_entry_is_said_where_its_trigger_holds_and_not_where_it_does_not(cli, monkeypatch, entry):
    monkeypatch.delenv("VLLM_ASCEND_ENABLE_NZ", raising=False)
    trigger, level, quiet = TRIGGERS[entry["id"]]
    done = cli(*trigger, "dry_run=true")
    said = [line for line in done.said.splitlines() if f"known issue {entry['id']}:" in line]
    assert said, done.said
    assert said[0].startswith(level) and entry["link"] in said[0] and "Workaround: " in said[0]
    assert "Traceback" not in done.said
    assert done.code == (2 if level == "ERROR" else 0), done.said
    calm = cli(*quiet, "dry_run=true")
    assert f"known issue {entry['id']}:" not in calm.said


def test_a_version_not_known_here_makes_the_warning_conditional(cli):
    done = cli("device=gpu", "model=35b", "hardware=b200", "dry_run=true")
    line = next(ln for ln in done.said.splitlines() if "known issue verl-7978" in ln)
    if installed_vllm() is None:  # the rules assume verl's pinned vLLM: the cluster's may differ
        assert "applies if the cluster runs vllm >=0.24" in line and "assumed" in line
    else:
        assert "applies if" not in line


def test_the_shells_value_of_a_variable_is_what_the_run_gets(cli, monkeypatch):
    monkeypatch.setenv("VLLM_ASCEND_ENABLE_NZ", "2")
    done = cli("device=npu", "model=35b", "dry_run=true")
    assert done.code == 2 and "known issue vllm-ascend-10014" in done.said


TEAM = {
    "issues": [
        {
            "id": "team-17",
            "link": "https://git.example.com/ml/rl/issues/17",
            "title": "our storage drops checkpoints written more often than every 5 steps",
            "level": "error",
            "affects": {"verl": ">=0.8"},
            "when": {"device": "gpu", "trainer.save_freq": {"lt": 5}},
            "thread": "seen on our H100 cluster with verl 0.9.1",
            "workaround": "trainer.save_freq=10",
        }
    ]
}


def _team_dir(tmp_path: Path, content: object) -> Path:
    folder = tmp_path / "team"
    folder.mkdir(exist_ok=True)
    text = content if isinstance(content, str) else yaml.safe_dump(content, sort_keys=False)
    (folder / "known_issues.yaml").write_text(text)
    return folder


def test_a_teams_own_entry_from_its_config_dir_is_applied(cli, tmp_path):
    team = _team_dir(tmp_path, TEAM)
    done = cli("--config-dir", str(team), "device=gpu", "model=35b", "trainer.save_freq=2", "dry_run=true")
    assert done.code == 2, done.said
    line = next(ln for ln in done.said.splitlines() if "known issue team-17" in ln)
    assert line.startswith("ERROR   [trainer.save_freq]") and "https://git.example.com/ml/rl/issues/17" in line
    assert "Workaround: trainer.save_freq=10" in line
    fine = cli("--config-dir", str(team), "device=gpu", "model=35b", "trainer.save_freq=10", "dry_run=true")
    assert "known issue team-17" not in fine.said
    doctor = cli("doctor", "device=gpu", "--config-dir", str(team))
    assert "team-17 (error, verl " in doctor.out and "trainer.save_freq lt 5" in doctor.out


def test_a_team_entry_with_a_shipped_id_replaces_it(cli, tmp_path):
    shipped = next(e for e in _shipped() if e["id"] == "verl-7578")
    team = _team_dir(
        tmp_path, {"issues": [shipped | {"when": {"device": "npu", "hardware.name": {"contains": ["A9"]}}}]}
    )
    done = cli("--config-dir", str(team), "device=npu", "model=35b", "hardware=a2", "dry_run=true")
    assert "known issue verl-7578" not in done.said


@pytest.mark.parametrize(
    ("content", "named"),
    [
        ("- just a list\n", "issues: the file is one mapping"),
        ({"issues": [{"link": "https://x"}]}, "issues[0].id: every entry needs an id"),
        ({"issues": [{**TEAM["issues"][0], "level": "fatal"}]}, "(id team-17).level: one of warn, error"),
        ({"issues": [{k: v for k, v in TEAM["issues"][0].items() if k != "workaround"}]}, "lacks workaround"),
        ({"issues": [{**TEAM["issues"][0], "affects": {"verl": "new"}}]}, "(id team-17).affects.verl: 'new'"),
        ({"issues": [{**TEAM["issues"][0], "when": {"trainer.save_freq": {"below": 5}}}]}, "when.trainer.save_freq"),
        ({"issues": [{**TEAM["issues"][0], "when": {"x": {"contains": "B200"}}}]}, "when.x.contains: takes a list"),
        ({"issues": [{**TEAM["issues"][0], "link": "http://x/1"}]}, "(id team-17).link"),
        ({"issues": [{**TEAM["issues"][0], "run": "rm -rf /"}]}, "(id team-17).run: not a field"),
        ({"issues": [TEAM["issues"][0], TEAM["issues"][0]]}, "(id team-17): an id appears twice"),
        (
            "a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
            "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
            "e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]\nf: [*e, *e, *e, *e, *e, *e, *e, *e, *e]\n",
            "known_issues.yaml",
        ),
    ],
    ids=["list", "no-id", "level", "missing", "specifier", "operator", "contains", "link", "field", "twice", "aliases"],
)
def test_a_team_file_of_the_wrong_shape_is_refused_naming_file_and_key(cli, tmp_path, content, named):
    team = _team_dir(tmp_path, content)
    for argv in (["--config-dir", str(team), "device=gpu", "model=35b", "dry_run=true"],
                 ["doctor", "device=gpu", "--config-dir", str(team)]):  # fmt: skip
        done = cli(*argv)
        assert done.code == 2, done.said
        assert str(team / "known_issues.yaml") in done.err and named in done.err, done.err
        assert "Traceback" not in done.said


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_team_file_that_is_a_fifo_is_refused_not_waited_on(cli, tmp_path):
    team = tmp_path / "team"
    team.mkdir()
    os.mkfifo(team / "known_issues.yaml")
    done = cli("doctor", "device=gpu", "--config-dir", str(team))
    assert done.code == 2 and "known_issues.yaml" in done.err, done.said
