"""The fast rule on pf_ppo.reweight_method (checks/algorithm.py pf_ppo_problems) agrees with verl's own
compute_pf_ppo_reweight_data, run on a small batch of scores."""

import pytest
import torch

from verl_qwen35.checks.algorithm import pf_ppo_problems
from verl_qwen35.config import compose

# On every verl CI tests (-m each_verl): the installed verl's function.
pytestmark = pytest.mark.each_verl

KEY = "algorithm.pf_ppo.reweight_method"


@pytest.mark.parametrize(
    ("method", "refused"), [("pow", False), ("max_min", False), ("max_random", False), ("zzz", True)]
)
def test_pf_ppo_fast_and_verl_agree(method, refused):
    from verl import DataProto
    from verl.trainer.ppo.core_algos import compute_pf_ppo_reweight_data

    cfg = compose(["model=35b", "device=gpu", "algorithm.use_pf_ppo=true", f"{KEY}={method}"])
    fast = [k for p in pf_ppo_problems(cfg) for k in p.keys]
    data = DataProto.from_dict(tensors={"token_level_scores": torch.tensor([[1.0, 0.0], [0.0, 0.5], [0.2, 0.2]])})
    try:
        compute_pf_ppo_reweight_data(data, cfg.algorithm.pf_ppo.reweight_method, cfg.algorithm.pf_ppo.weight_pow)
        upstream = False
    except ValueError:
        upstream = True
    assert fast == ([KEY] if refused else [])
    assert upstream == refused


def test_pf_ppo_off_is_not_judged():
    cfg = compose(["model=35b", "device=gpu", "algorithm.use_pf_ppo=false", f"{KEY}=zzz"])
    assert pf_ppo_problems(cfg) == []
