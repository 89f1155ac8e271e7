"""The one builder of a `Run`: the caller's config is never edited, and a dry run derives its layout, pipeline
split and model inputs once (the checks, the plan, the step time and the whole-run figures read the Run's)."""

import dataclasses
from collections import Counter

from omegaconf import OmegaConf

from verl_qwen35.builder.build import build_run
from verl_qwen35.config import compose
from verl_qwen35.config.schema import ACTOR, REF
from verl_qwen35.model.layout import Layout
from verl_qwen35.model.memory import Settings
from verl_qwen35.model.pipeline import Split
from verl_qwen35.planner.search import judge
from verl_qwen35.run.job import run_job


def test_the_builder_copies_links_and_changes_without_editing_its_callers_config():
    cfg = compose(["device=npu", "model=122b", "+megatron.seed=7"])
    before = OmegaConf.to_container(cfg, resolve=False)
    run, broken = build_run(cfg, mode="dry", keep_composed=True, changes={"parallel.tp": 4})
    assert broken == [] and run.layout.tp == 4
    assert OmegaConf.select(run.config, f"{REF}.seed") == OmegaConf.select(run.config, f"{ACTOR}.seed") == 7
    # compose() leaves the link to the builder; the caller's config is as composed, editable, unresolved.
    assert OmegaConf.to_container(cfg, resolve=False) == before and not OmegaConf.is_readonly(cfg)
    assert OmegaConf.to_container(OmegaConf.select(cfg, REF), resolve=False).get("seed") != "${megatron.seed}"


def derivations(monkeypatch) -> Counter[str]:
    """Calls of Layout.of, Split.of and Settings.of (the verl-side model inputs, model/memory.py read_inputs)."""
    counts: Counter[str] = Counter()
    for cls in (Layout, Split, Settings):
        original = cls.of.__func__

        def counted(klass, *args, _original=original, _name=cls.__name__, **kwargs):
            counts[_name] += 1
            return _original(klass, *args, **kwargs)

        monkeypatch.setattr(cls, "of", classmethod(counted))
    return counts


def test_a_dry_run_derives_the_layout_the_split_and_the_model_inputs_once(monkeypatch, capsys):
    counts = derivations(monkeypatch)
    assert run_job(compose(["device=npu", "model=122b", "dry_run=true"]), {}, None)
    assert "verdict    OK" in capsys.readouterr().out
    assert counts == {"Layout": 1, "Split": 1, "Settings": 1}


def test_a_planner_candidate_is_a_run_of_the_one_builder_derived_once(monkeypatch):
    """judge: the layout's Run is a variant of the run's composed config, built once; the preflight, the estimate
    and the step time of the candidate read what that build derived."""
    run, _ = build_run(compose(["device=npu", "model=122b"]), mode="dry", keep_composed=True)
    lo = dataclasses.replace(run.layout, tp=4)
    counts = derivations(monkeypatch)
    candidate, errors = judge(run, lo, run.split)
    assert errors == [] and candidate is not None and candidate.layout == lo
    assert counts == {"Layout": 1, "Split": 1, "Settings": 1}
