"""verl's trainer construction, run on CPU (validators/trainer_init.py, dry_run=full), and its fast twins
(checks/trainer_setup.py, dry_run=true) agree: both refuse naming the same key, or both accept. What a user sees
goes through the command: exit 2, the key named, no traceback."""

import warnings
from importlib.metadata import version

import pytest

from verl_qwen35.checks.trainer import mode_problems
from verl_qwen35.checks.trainer_setup import KL_CTRL_TYPES, TRAINER_MODES, trainer_setup_problems
from verl_qwen35.config import compose
from verl_qwen35.validators.trainer_init import trainer_init_problems

# On every verl CI tests (-m each_verl): the installed verl's own trainer construction.
pytestmark = pytest.mark.each_verl

V09 = tuple(int(x) for x in version("verl").split(".")[:2]) >= (0, 9)
KL = "algorithm.use_kl_in_reward=true"
FG = "algorithm.filter_groups.enable=true"
TABLE = [
    # (overrides, the key both refuse, or None when both accept)
    ([], None),
    ([KL, "algorithm.kl_ctrl.type=pid"], "algorithm.kl_ctrl.type"),
    ([KL, "algorithm.kl_ctrl.type=adaptive", "algorithm.kl_ctrl.horizon=10000"], None),
    ([KL, "algorithm.kl_ctrl.type=fixed"], None),
    (["algorithm.kl_ctrl.type=pid"], None),  # no KL in the reward: verl never builds the controller
    (
        ["+trainer.checkpoint_callback_class=MyCallback"] if V09 else [],
        "trainer.checkpoint_callback_class" if V09 else None,
    ),
    (
        ["+actor_rollout_ref.rollout.agent.agent_loop_manager_class=Manager"],
        "actor_rollout_ref.rollout.agent.agent_loop_manager_class",
    ),
]
V1_TABLE = [  # verl 0.9's v1 trainer (trainer.use_v1, its default)
    (["trainer.v1.trainer_mode=async"], "trainer.v1.trainer_mode"),
    (["trainer.v1.trainer_mode=colocate_async"], None),
    ([FG, "algorithm.filter_groups.metric=null"], "algorithm.filter_groups.metric"),
    ([FG, "algorithm.filter_groups.metric=acc"], None),
    (
        [FG, "algorithm.filter_groups.metric=acc", "reward.reward_model.enable=true"],
        "reward.reward_model.enable_resource_pool",
    ),
    (["trainer.use_v1=false", KL, "algorithm.kl_ctrl.type=pid"], "algorithm.kl_ctrl.type"),
]


def keys(found) -> set[str]:
    return {k for p in found if p.level == "error" for k in p.keys}


@pytest.mark.parametrize(("overrides", "key"), TABLE + (V1_TABLE if V09 else []), ids=str)
def test_fast_and_full_agree(overrides: list[str], key: str | None) -> None:
    cfg = compose(["device=gpu", "model=35b", *overrides])
    fast = keys(trainer_setup_problems(cfg) + mode_problems(cfg))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        full = keys(trainer_init_problems(cfg))
    if key is None:
        assert not fast and not full, (fast, full)
    else:
        assert key in fast and key in full, (fast, full)


def test_kl_controller_types_are_verls() -> None:
    from verl.trainer.ppo import core_algos

    from verl_qwen35.validators.verl_names import compared_strings

    assert set(compared_strings(core_algos.get_kl_controller, "kl_ctrl.type")) == set(KL_CTRL_TYPES)


def test_trainer_modes_are_verls() -> None:
    if not V09:
        pytest.skip("verl 0.8 has no v1 trainer")
    from verl.trainer.ppo.v1.trainer_base import TRAINER_REGISTRY

    assert tuple(sorted(TRAINER_REGISTRY)) == TRAINER_MODES


def test_user_sees_kl_controller_refused_by_both_dry_runs(cli) -> None:
    for mode in ("true", "full"):
        said = cli("device=gpu", "model=35b", KL, "algorithm.kl_ctrl.type=pid", f"dry_run={mode}")
        assert said.code == 2, said.said
        assert "[algorithm.kl_ctrl.type]" in said.said and "Traceback" not in said.said


def test_trace_matches_the_installed_verl() -> None:
    """The data file's keys and lines are those scripts/trace_startup.py reads from verl 0.9.1's source."""
    import importlib.util
    from pathlib import Path

    if version("verl") != "0.9.1":
        pytest.skip("the trace is of verl 0.9.1")
    spec = importlib.util.spec_from_file_location(
        "trace_startup", Path(__file__).parents[2] / "scripts/trace_startup.py"
    )
    trace = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(trace)
    _, changes = trace.refreshed(trace.load(), trace.traced())
    assert not changes
