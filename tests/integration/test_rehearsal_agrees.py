"""The fast rules and the CPU rehearsal (verl's and megatron-core's own code) agree on algorithm, optimizer
and schedule settings: a setting one refuses and the other accepts fails here. Resume and trainer-mode rules
have no callable upstream function before start-up; their table goes through the command (exit 2, the key).

Good settings: every preset, the algorithm/optimizer/trainer keys of the recorded launch scripts
(/work/shared/reference, copied in tests/seed_fidelity) and settings of verl's example scripts.
"""

import warnings
from copy import deepcopy
from importlib.metadata import version
from pathlib import Path

import pytest
from omegaconf import DictConfig, OmegaConf

from tests.commands import verl_qwen35
from tests.runs import preflight
from verl_qwen35.checks.startup import sampling_problems, token_budget_problems
from verl_qwen35.config import compose
from verl_qwen35.config.choices import presets
from verl_qwen35.validators.rehearsal import advantage_problems, fake_batch, rehearsal_problems

# On every verl CI tests (-m each_verl): the installed verl's own start-up code.
pytestmark = pytest.mark.each_verl

A = "actor_rollout_ref.actor"
OPT = f"{A}.optim"
V09 = tuple(int(x) for x in version("verl").split(".")[:2]) >= (0, 9)
ROWS = 256  # 35b: 256 // 32 = 8 steps an epoch, 120 over 15 epochs
SEEDS = Path(__file__).resolve().parents[1] / "seed_fidelity" / "seed_overrides"
REWARD_FILE = Path(__file__).resolve().parents[1] / "tiny_data.py"  # a Python file with one top-level function
FAMILIES = ("algorithm.", "trainer.resume", "trainer.total", "trainer.logger", f"{A}.optim.", f"{A}.policy_loss")
FAMILIES += tuple(f"{A}.{k}" for k in ("clip_ratio", "kl_loss", "use_kl_loss", "entropy_coeff", "loss_agg_mode"))


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> list[str]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    directory = tmp_path_factory.mktemp("data")
    table = pa.table(
        {
            "prompt": [[{"role": "user", "content": "1+1?"}]] * ROWS,
            "data_source": ["hiyouga/geometry3k"] * ROWS,
            "reward_model": [{"style": "rule", "ground_truth": "2"}] * ROWS,
        }
    )
    for name in ("train", "test"):
        pq.write_table(table, directory / f"{name}.parquet")
    return [f"data.train_files={directory / 'train.parquet'}", f"data.val_files={directory / 'test.parquet'}"]


def v0(*overrides: str) -> list[str]:
    """The same settings on verl's v0 trainer (verl 0.9's trainer.use_v1=false; verl 0.8 has only v0)."""
    return [*overrides, "trainer.use_v1=false"] if V09 else list(overrides)


# (overrides, a key both must name, or None: both accept)
AGREE = [
    ([], None),
    ([f"{A}.clip_ratio_c=1.0"], f"{A}.clip_ratio_c"),
    ([f"{A}.clip_ratio_c=10.0", f"{A}.clip_ratio_low=0.2", f"{A}.clip_ratio_high=0.28"], None),  # DAPO
    ([f"{A}.policy_loss.loss_mode=clip_cov", f"{A}.policy_loss.clip_cov_ratio=0"], f"{A}.policy_loss.clip_cov_ratio"),
    ([f"{A}.policy_loss.loss_mode=clip_cov", f"{A}.policy_loss.clip_cov_ratio=0.0002"], None),
    ([f"{A}.policy_loss.loss_mode=kl_cov", f"{A}.policy_loss.kl_cov_ratio=-1"], f"{A}.policy_loss.kl_cov_ratio"),
    (
        [f"{A}.policy_loss.loss_mode=kl_cov", f"{A}.policy_loss.kl_cov_ratio=0.002", f"{A}.policy_loss.ppo_kl_coef=1"],
        None,
    ),
    (
        [
            f"{A}.policy_loss.loss_mode=gspo",
            f"{A}.clip_ratio_low=0.0003",
            f"{A}.clip_ratio_high=0.0004",
            f"{A}.loss_agg_mode=seq-mean-token-mean",
        ],
        None,
    ),
    (["algorithm.norm_adv_by_std_in_grpo=false", f"{A}.loss_agg_mode=seq-mean-token-sum-norm"], None),  # Dr.GRPO
    (["algorithm.adv_estimator=grpo_passk", "actor_rollout_ref.rollout.n=1"], "actor_rollout_ref.rollout.n"),
    (["algorithm.adv_estimator=grpo_passk"], None),
    (["algorithm.adv_estimator=rloo", "algorithm.use_kl_in_reward=true"], None),
    (["algorithm.adv_estimator=reinforce_plus_plus", f"{A}.kl_loss_type=mse"], None),
    (["algorithm.adv_estimator=reinforce_plus_plus_baseline"], None),
    (["algorithm.adv_estimator=opo"], None),
    (["algorithm.adv_estimator=gpg", f"{A}.policy_loss.loss_mode=gpg"], None),
    (["algorithm.adv_estimator=rloo_vectorized"], None),
    (["algorithm.adv_estimator=grpo_vectorized"], None),
    (v0("algorithm.adv_estimator=remax"), None),
    (v0("algorithm.adv_estimator=optimal_token_baseline"), f"{A}.calculate_sum_pi_squared"),
    (v0("algorithm.adv_estimator=optimal_token_baseline", f"{A}.calculate_sum_pi_squared=true"), None),
    (v0("algorithm.adv_estimator=gdpo"), "algorithm.gdpo_reward_keys"),
    (v0("algorithm.adv_estimator=gdpo", "+algorithm.gdpo_reward_keys=[acc,fmt]"), None),
    (
        ["algorithm.use_kl_in_reward=true", "algorithm.kl_ctrl.type=adaptive", "algorithm.kl_ctrl.horizon=0"],
        "algorithm.kl_ctrl.horizon",
    ),
    (["algorithm.use_kl_in_reward=true", "algorithm.kl_ctrl.type=adaptive", "algorithm.kl_ctrl.target_kl=0.1"], None),
    ([f"{A}.kl_loss_type=k3+"], None),
    ([f"{A}.kl_loss_type=abs", f"{A}.entropy_coeff=0.001"], None),
    ([f"{OPT}.lr_warmup_steps_ratio=1.0"], f"{OPT}.lr_warmup_steps_ratio"),
    ([f"{OPT}.lr_warmup_steps_ratio=0.1", f"{OPT}.lr_decay_style=cosine"], None),
    ([f"{OPT}.lr_warmup_steps=10", f"{OPT}.weight_decay=0.1"], None),  # DAPO
    ([f"{OPT}.lr_warmup_steps=120"], f"{OPT}.lr_warmup_steps"),
    ([f"{OPT}.lr_warmup_steps=119", f"{OPT}.lr_decay_style=cosine", f"{OPT}.min_lr=1e-7"], None),
    ([f"{OPT}.lr_decay_steps=50", f"{OPT}.lr_warmup_steps=50"], f"{OPT}.lr_decay_steps"),
    ([f"{OPT}.min_lr=1e-5"], f"{OPT}.min_lr"),
    ([f"{OPT}.min_lr=-1e-7"], f"{OPT}.min_lr"),
    ([f"{OPT}.lr_warmup_init=1e-3"], f"{OPT}.lr_warmup_init"),
    ([f"{OPT}.weight_decay=-0.1"], f"{OPT}.weight_decay"),
    ([f"{OPT}.lr_decay_style=WSD"], f"{OPT}.lr_wsd_decay_steps"),
    ([f"{OPT}.lr_decay_style=WSD", f"{OPT}.lr_wsd_decay_steps=10", f"{OPT}.lr_wsd_decay_style=minus_sqrt"], None),
    ([f"{OPT}.lr_decay_style=inverse-square-root", f"{OPT}.lr_warmup_steps=5"], None),
    (["trainer.total_training_steps=0"], "trainer.total_training_steps"),
    (["trainer.total_epochs=0"], "trainer.total_epochs"),
    (["trainer.total_training_steps=500", "trainer.total_epochs=63"], None),  # 63 epochs of 8 steps reach 500
    # verl's start-up (validators/startup.py) and its config-alone twins (checks/startup.py)
    (
        ["actor_rollout_ref.rollout.agent.default_agent_loop=single_turn"],
        "actor_rollout_ref.rollout.agent.default_agent_loop",
    ),
    ([f"{A}.checkpoint.save_contents=[modle,optimizer,extra]"], f"{A}.checkpoint.save_contents"),
    ([f"{A}.checkpoint.save_contents=[model,hf_model]"], None),
    (["data.dataloader_num_workers=-1"], "data.dataloader_num_workers"),
    (
        [f"custom_reward_function.path={REWARD_FILE}", "custom_reward_function.name=compute"],
        "custom_reward_function.name",
    ),
    (
        [f"reward.custom_reward_function.path={REWARD_FILE}", "reward.custom_reward_function.name=write_geo3k_stub"],
        None,
    ),
    ([f"+{OPT}.override_optimizer_config.bogus=1"], f"{OPT}.override_optimizer_config.bogus"),
    ([f"++{OPT}.override_optimizer_config.optimizer_cpu_offload=true"], None),
    ([f"{OPT}.optimizer=sgd"], f"{OPT}.optimizer"),  # the presets' precision-aware optimizer is adam-only
    (
        [f"{OPT}.optimizer=sgd", f"++{OPT}.override_optimizer_config.use_precision_aware_optimizer=false"],
        None,
    ),
]


def _errors(found) -> list:
    return [p for p in found if p.level == "error"]


@pytest.mark.parametrize(("overrides", "key"), AGREE, ids=[" ".join(o) or "preset" for o, _ in AGREE])
def test_fast_rules_and_rehearsal_agree(data, overrides, key):
    cfg = compose(["model=35b", "device=gpu", *data, *overrides])
    fast = _errors(preflight(cfg))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        real = _errors(rehearsal_problems(cfg))
    said = f"fast: {[str(p) for p in fast]}\nreal: {[str(p) for p in real]}"
    if key is None:
        assert not fast and not real, said
    else:
        assert any(key in p.keys for p in fast), said
        assert any(key in p.keys for p in real), said


PRESETS = presets()


def _family_overrides(path: Path) -> list[str]:
    """The algorithm, optimizer, schedule and logger settings a recorded launch script passes to verl."""
    lines = path.read_text().partition("#ENV")[0].split()
    found = []
    for line in lines:
        key = line.lstrip("+").split("=", 1)[0]
        if key.startswith(FAMILIES) and "grad_offload" not in key:
            found.append(f"++{line.lstrip('+')}")
    return found


@pytest.mark.parametrize(("model", "device"), PRESETS)
def test_presets_and_recorded_scripts_pass_both(data, model, device):
    seeds = sorted(SEEDS.glob(f"{model}_{device}*.txt"))
    for overrides in [[]] + [_family_overrides(p) for p in seeds]:
        cfg = compose([f"model={model}", f"device={device}", *data, *overrides])
        fast = _errors(preflight(cfg))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            real = _errors(rehearsal_problems(cfg))
        assert not fast and not real, f"{overrides}: {[str(p) for p in fast + real]}"


REFUSED_AT_THE_DOOR = [
    (["trainer.resume_mode=resume_path"], "trainer.resume_from_path"),
    (["trainer.resume_mode=resume_path", "trainer.resume_from_path=/ckpt/global_step_10/"], "trainer.resume_from_path"),
    (["trainer.resume_mode=resume_path", "trainer.resume_from_path=/ckpt/step_10"], "trainer.resume_from_path"),
    (["trainer.resume_mode=resume"], "trainer.resume_mode"),
    (v0("trainer.default_hdfs_dir=hdfs://ckpt"), "trainer.default_hdfs_dir"),
    (v0("actor_rollout_ref.hybrid_engine=false"), "actor_rollout_ref.hybrid_engine"),
    (["data.train_batch_size=512", f"{A}.ppo_mini_batch_size=32"], "data.train_files"),
]
if V09:
    REFUSED_AT_THE_DOOR += [
        (["algorithm.adv_estimator=remax"], "trainer.use_v1"),
        (["algorithm.adv_estimator=optimal_token_baseline", f"{A}.calculate_sum_pi_squared=true"], "trainer.use_v1"),
        (["algorithm.adv_estimator=gdpo", "+algorithm.gdpo_reward_keys=[acc]"], "trainer.use_v1"),
        (
            [
                "trainer.v1.trainer_mode=separate_async",
                "actor_rollout_ref.rollout.nnodes=1",
                "actor_rollout_ref.rollout.n_gpus_per_node=8",
                "actor_rollout_ref.rollout.checkpoint_engine.backend=nccl",
            ],
            "trainer.v1.separate_async.parameter_sync_step",
        ),
        (["trainer.v1.sampler.max_off_policy_threshold=0"], "trainer.v1.sampler.max_off_policy_threshold"),
        (
            ["algorithm.filter_groups.enable=true", "algorithm.filter_groups.metric=null"],
            "algorithm.filter_groups.metric",
        ),
    ]


@pytest.mark.parametrize(("overrides", "key"), REFUSED_AT_THE_DOOR, ids=[" ".join(o) for o, _ in REFUSED_AT_THE_DOOR])
def test_resume_and_trainer_mode_refusals_exit_2_naming_the_key(cli, data, overrides, key):
    said = cli("model=35b", "device=gpu", "dry_run=true", *data, *overrides)
    assert said.code == 2, said.said
    errors = [line for line in said.said.splitlines() if line.startswith("ERROR")]
    assert len(errors) == 1 and key in errors[0], said.said
    assert "Traceback" not in said.said


def test_a_resume_path_that_exists_passes(cli, data, tmp_path):
    step = tmp_path / "global_step_20"
    (step / "actor").mkdir(parents=True)
    said = cli(
        "model=35b",
        "device=gpu",
        "dry_run=true",
        *data,
        "trainer.resume_mode=resume_path",
        f"trainer.resume_from_path={step}",
    )
    assert said.code == 0, said.said


def test_full_dry_run_rehearses_and_a_launch_refuses_before_ray(tmp_path, data):
    """The user's shell path: dry_run=full runs the rehearsal; a launch refuses a bad loss before Ray starts."""
    run = verl_qwen35(tmp_path, "model=35b", "device=gpu", "dry_run=full", *data)
    assert run.returncode == 0, run.stderr
    assert "rehearsal  grpo advantage (n=5), vanilla loss, optimizer and LR schedule, 120 optimizer steps" in run.stdout
    run = verl_qwen35(tmp_path, "model=35b", "device=gpu", *data, f"{A}.clip_ratio_c=0.5")
    assert run.returncode == 2, run.stdout + run.stderr
    assert f"ERROR   [{A}.clip_ratio_c]" in run.stderr
    assert "Started a local Ray" not in run.stdout + run.stderr and "Traceback" not in run.stderr


# The fast start-up rules (checks/startup.py) against verl's own code where verl has code to call on CPU, on one
# shared composition (each case edits a copy). The others have nothing callable before the workers run:
# - val_only: `RayPPOTrainer.fit` (verl 0.9.1 ray_trainer.py:1443) and the v1 `fit` (v1/trainer_base.py:446)
#   return inside their `val_before_train` branch;
# - critic_warmup: the actor update's `critic_warmup <= global_steps` test in the training loop
#   (ray_trainer.py:1684, v1/trainer_base.py:608);
# - free_cache_engine: `vLLMHttpServer.sleep` returns at once when it is false (vllm_async_server.py:854), a
#   server this machine does not start;
# - null model and dist-checkpoint paths: `HFModelConfig` loads the tokenizer from the path and the Megatron
#   engine loads the weights, neither here;
# the agent loops, checkpoint contents, dataloader workers and custom reward functions agree through AGREE above.
GREEDY = "actor_rollout_ref.rollout.temperature"


@pytest.fixture(scope="module")
def resolved() -> DictConfig:
    cfg = compose(["model=35b", "device=gpu", f"{GREEDY}=0"])
    OmegaConf.resolve(cfg)
    return cfg


def _edited(cfg: DictConfig, values: dict[str, object]) -> DictConfig:
    copy = deepcopy(cfg)
    for key, value in values.items():
        OmegaConf.update(copy, key, value, force_add=True)
    return copy


def _identical_groups(cfg: DictConfig):
    """The rehearsal's fake batch where every sample of a prompt is the same response with the same reward (what
    greedy sampling gives); groups differ (rewards 0, 1), so only a group baseline can make them all zero."""
    data, _ = fake_batch(cfg)
    n, batch = cfg.actor_rollout_ref.rollout.n, data.batch
    batch["response_mask"][:] = 1
    batch["token_level_scores"][:] = 0
    for i in range(batch.batch_size[0]):
        batch["token_level_scores"][i, -1] = float(i // n)
        for key in batch.keys():  # noqa: SIM118 - iterating a TensorDict gives its rows
            if key != "token_level_scores":
                batch[key][i] = batch[key][(i // n) * n]
        for key, values in data.non_tensor_batch.items():
            if key != "uid":
                values[i] = float(i // n)  # exact values: a float mean of equal floats may differ in the last bit
    return data


# Every estimator verl registers, with what its trainer needs; v0: the estimators only verl's v0 trainer feeds.
ESTIMATORS = [
    ("grpo", {}),
    ("grpo_vectorized", {}),
    ("grpo_passk", {}),
    ("rloo", {}),
    ("rloo_vectorized", {}),
    ("opo", {}),
    ("reinforce_plus_plus_baseline", {}),
    ("reinforce_plus_plus", {}),
    ("gpg", {}),
    ("gdpo", {"trainer.use_v1": False, "algorithm.gdpo_reward_keys": ["acc"]}),
    ("optimal_token_baseline", {"trainer.use_v1": False, f"{A}.calculate_sum_pi_squared": True}),
]


def test_greedy_sampling_is_refused_exactly_where_verls_estimator_gives_all_zero_advantages(resolved):
    from verl.trainer.ppo import core_algos

    disagree, ran = [], 0
    for name, extra in ESTIMATORS:
        try:
            core_algos.get_adv_estimator_fn(name)
        except ValueError:
            continue  # not registered in this verl
        cfg = _edited(resolved, {"algorithm.adv_estimator": name, **extra})
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            refused, advantages = advantage_problems(cfg, _identical_groups(cfg))
        assert not refused and advantages is not None, (name, refused)
        zero = bool((advantages == 0).all())
        fast = any(p.keys == (GREEDY,) for p in sampling_problems(cfg))
        ran += 1
        if fast != zero:
            disagree.append(f"{name}: fast rule {'refuses' if fast else 'passes'}, verl's advantages all zero: {zero}")
    assert ran >= 6 and not disagree, disagree


def _verl_budget_refusal(cfg: DictConfig, budget_key: str) -> str | None:
    """verl's own `prepare_micro_batches` (verl/workers/engine/utils.py) with dynamic batches on one sequence of
    the longest length, the budget of `budget_key` and sp_size = the engine's context parallel size, as the
    Megatron engine assigns it (workers/engine/megatron/transformer_impl.py)."""
    import torch
    from tensordict import TensorDict
    from verl.utils import tensordict_utils as tu
    from verl.workers.engine.utils import prepare_micro_batches

    longest = cfg.data.max_prompt_length + cfg.data.max_response_length
    data = TensorDict(
        {"input_ids": torch.zeros(1, longest, dtype=torch.int64), "attention_mask": torch.ones(1, longest)},
        batch_size=[1],
    )
    cp = cfg.actor_rollout_ref.actor.megatron.context_parallel_size
    budget = OmegaConf.select(cfg, budget_key)
    tu.assign_non_tensor(data, use_dynamic_bsz=True, sp_size=cp, max_token_len_per_gpu=budget)
    try:
        prepare_micro_batches(data)
    except AssertionError as err:
        return str(err)
    return None


ACTOR_BUDGET = f"{A}.ppo_max_token_len_per_gpu"
LONGEST = 1024 + 2048  # the cases' max_prompt_length + max_response_length
BUDGETS = [(LONGEST - 1, 1), (LONGEST, 1), (LONGEST // 2, 2), (LONGEST // 2 - 1, 2)]


@pytest.mark.parametrize(("budget", "cp"), BUDGETS, ids=[f"{b}x{c}" for b, c in BUDGETS])
def test_dynamic_batch_token_budget_is_refused_exactly_where_verls_batching_asserts(resolved, budget, cp):
    cfg = _edited(
        resolved,
        {
            "data.max_prompt_length": 1024,
            "data.max_response_length": 2048,
            f"{A}.use_dynamic_bsz": True,
            ACTOR_BUDGET: budget,
            f"{A}.megatron.context_parallel_size": cp,
        },
    )
    fast = [p for p in token_budget_problems(cfg) if p.keys == (ACTOR_BUDGET,)]
    real = _verl_budget_refusal(cfg, ACTOR_BUDGET)
    assert bool(fast) == (real is not None), f"fast: {[str(p) for p in fast]}\nverl: {real}"


@pytest.mark.parametrize("cp", [1, 2, 4])
def test_a_dynamic_batch_budget_is_what_each_cp_rank_holds_as_verls_batching_packs_it(cp):
    """The memory and step-time models' tokens of one dynamic micro-batch on one rank (`rank_tokens`) against
    verl's own packing (`prepare_micro_batches`, sp_size = the engine's CP): the most a micro-batch hands each CP
    rank is about the per-GPU budget at every CP (not the budget / CP). verl 0.8 splits into ceil(tokens / budget)
    micro-batches balanced by attention workload (utils/seqlen_balancing.py `rearrange_micro_batches`), which can
    fill one a few percent past the budget; 0.9 keeps within it."""
    import torch
    from tensordict import TensorDict
    from verl.utils import tensordict_utils as tu
    from verl.workers.engine.utils import prepare_micro_batches

    from verl_qwen35.model.memory import rank_tokens

    budget, longest = 4096, 3072
    lengths = torch.randint(256, longest + 1, (64,), generator=torch.Generator().manual_seed(cp))
    mask = (torch.arange(longest)[None, :] < lengths[:, None]).to(torch.int64)
    data = TensorDict({"input_ids": torch.zeros(64, longest, dtype=torch.int64), "attention_mask": mask}, [64])
    tu.assign_non_tensor(data, use_dynamic_bsz=True, sp_size=cp, max_token_len_per_gpu=budget)
    micro_batches, _ = prepare_micro_batches(data)
    most_per_rank = max(int(mb["attention_mask"].sum()) for mb in micro_batches) / cp
    ours = rank_tokens(budget, micro_batch=1, sequence_length=longest, cp=cp)
    assert ours / 2 < most_per_rank <= 1.25 * ours, (most_per_rank, ours)
