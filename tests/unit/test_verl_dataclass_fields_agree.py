"""The fast rule on keys verl's config dataclasses lack (checks/verl_dataclasses.py) agrees with verl's own
`omega_conf_to_dataclass` run on the sections verl builds at start-up: both refuse the same key, or both
accept (a dataclass field that verl's YAML leaves out, like `checkpoint.save_lora_only`, is accepted)."""

import warnings

import pytest
from omegaconf import OmegaConf

from tests.runs import preflight
from verl_qwen35.checks.verl_dataclasses import built_sections, unknown_field_problems
from verl_qwen35.checks.verl_types import shipped_verl_data
from verl_qwen35.config import compose
from verl_qwen35.validators.verl_fields import live_dataclass_fields
from verl_qwen35.validators.verl_ref import ref_as_verl_builds_it

# On every verl CI tests (-m each_verl): the installed verl's own dataclasses.
pytestmark = pytest.mark.each_verl

A, R, RO, M = (f"actor_rollout_ref.{s}" for s in ("actor", "ref", "rollout", "model"))
EITHER = "refused where the installed verl's dataclass lacks the field"
TABLE = [
    # (overrides, the key both refuse, or None when both accept)
    ([], None),
    ([f"+{A}.checkpoint.zzz_unknown=1"], f"{A}.checkpoint.zzz_unknown"),
    ([f"+{A}.checkpoint.save_lora_only=true"], EITHER),  # a field in verl 0.9.1, not in 0.8.0
    ([f"+{A}.gdpo_reward_keys=[acc]"], f"{A}.gdpo_reward_keys"),
    ([f"+{A}.norm_adv_by_std_in_grpo=false"], f"{A}.norm_adv_by_std_in_grpo"),
    ([f"+{A}.optim.lr_warmup_step=3"], f"{A}.optim.lr_warmup_step"),
    ([f"+{A}.policy_loss.zzz_unknown=1"], f"{A}.policy_loss.zzz_unknown"),
    ([f"+{A}.profiler.tool_config.nsys.zzz_unknown=1"], f"{A}.profiler.tool_config.nsys.zzz_unknown"),
    ([f"+{R}.profiler.zzz_unknown=1"], f"{R}.profiler.zzz_unknown"),
    ([f"{A}.use_kl_loss=false", f"+{R}.profiler.zzz_unknown=1"], None),  # verl builds no ref then
    ([f"+{RO}.checkpoint_engine.zzz_unknown=1"], f"{RO}.checkpoint_engine.zzz_unknown"),
    ([f"+{RO}.profiler.zzz_unknown=1"], f"{RO}.profiler.zzz_unknown"),
    ([f"+{RO}.repetition_penalty=1.0"], None),
    ([f"+{M}.mtp.zzz_unknown=1"], f"{M}.mtp.zzz_unknown"),
]


@pytest.fixture(scope="module")
def verl_build():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # megatron-core: Transformer Engine and Apex are not installed
        from verl.utils.config import omega_conf_to_dataclass

        yield omega_conf_to_dataclass


def test_shipped_dataclass_fields_equal_the_installed_verl():
    assert shipped_verl_data()["dataclass_fields"] == live_dataclass_fields()


@pytest.mark.parametrize(("overrides", "key"), TABLE, ids=[" ".join(o) or "preset" for o, _ in TABLE])
def test_fast_and_verl_agree(verl_build, overrides, key):
    cfg = compose(["model=35b", "device=gpu", *overrides])
    fast = sorted({k for p in unknown_field_problems(cfg) for k in p.keys})
    refused = []
    for section in built_sections(cfg):
        if section == M and not any(M in o for o in overrides):
            continue  # HFModelConfig's __post_init__ fetches the model's config.json (the Hub, no network here)
        node = ref_as_verl_builds_it(cfg) if section == R else OmegaConf.select(cfg, section)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                verl_build(node)
            except Exception as err:  # Hydra's InstantiationException around the dataclass's TypeError
                if "unexpected keyword argument" in str(err):  # HFModelConfig also reads the model's HF config
                    refused.append((section, str(err)))
    if key == EITHER:
        assert bool(fast) == bool(refused)
    elif key is None:
        assert fast == [] and refused == []
    else:
        assert fast == [key]
        # verl refuses in the key's section (and, for model.mtp, in the rollout that interpolates it)
        assert next(s for s in built_sections(cfg) if key.startswith(f"{s}.")) == refused[0][0]
        assert all(f"'{key.rpartition('.')[2]}'" in why for _, why in refused)
        assert key in {k for p in preflight(cfg, machine_missing="warning") for k in p.keys}
