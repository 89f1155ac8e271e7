"""The fast rules on the LoRA rank (checks/verl_settings.py lora_rank_problems) and on data.val_batch_size
(checks/values.py) agree with the upstream functions that refuse them: verl's validate_config, and the
StatefulDataLoader verl builds the validation loader with (verl/trainer/ppo/ray_trainer.py:414-420)."""

import warnings

import pytest

from verl_qwen35.checks.values import value_problems
from verl_qwen35.checks.verl_settings import lora_rank_problems
from verl_qwen35.config import compose

# On every verl CI tests (-m each_verl): the installed verl's own validate_config.
pytestmark = pytest.mark.each_verl

L = "actor_rollout_ref.model.lora"
LORA = [
    # (overrides, the key both refuse, or None when both accept)
    ([], None),
    ([f"{L}=null"], L),
    ([f"{L}.rank=64"], None),
    ([f"{L}.rank=1099511627776"], f"{L}.rank"),
    ([f"{L}.rank=1024", f"{L}.merge=true"], None),  # merged: verl checks no rank
    ([f"{L}.rank=0", "actor_rollout_ref.model.lora_rank=4096"], "actor_rollout_ref.model.lora_rank"),
]


@pytest.mark.parametrize(("overrides", "key"), LORA, ids=[" ".join(o) or "preset" for o, _ in LORA])
def test_lora_rank_fast_and_validate_config_agree(overrides, key):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from verl.trainer.ppo.utils import need_critic, need_reference_policy
        from verl.utils.config import validate_config

    if any(".rank=" in o or "lora_rank=" in o for o in overrides):
        # verl imports get_vllm_max_lora_rank from a package whose __init__ needs vLLM (any rank fails without it)
        pytest.importorskip("vllm")
    cfg = compose(["model=35b", "device=gpu", *overrides])
    fast = [k for p in lora_rank_problems(cfg) for k in p.keys]
    try:
        validate_config(cfg, need_reference_policy(cfg), need_critic(cfg))
        refused = False
    except AttributeError:  # `model.lora` null: `None.get("rank", 0)`
        refused = True
    except (AssertionError, ValueError) as err:
        refused = "lora_rank" in str(err)
    assert fast == ([key] if key else [])
    assert refused == bool(key)


@pytest.mark.parametrize(("value", "refused"), [("zzz", True), (-1, True), (2, False), (None, False)])
def test_val_batch_size_fast_and_the_data_loader_agree(value, refused):
    from torchdata.stateful_dataloader import StatefulDataLoader

    cfg = compose(["model=35b", "device=gpu", f"data.val_batch_size={'null' if value is None else value}"])
    fast = [k for p in value_problems(cfg) for k in p.keys]
    rows = list(range(4))
    try:  # verl: `val_batch_size` if set, else the whole set (ray_trainer.py:414-416)
        StatefulDataLoader(rows, batch_size=len(rows) if value is None else value, shuffle=False)
        upstream = False
    except (TypeError, ValueError):
        upstream = True
    assert fast == (["data.val_batch_size"] if refused else [])
    assert upstream == refused
