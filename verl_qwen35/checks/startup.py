"""Start-up settings verl reads only after Ray and the workers started, and settings it accepts that waste the run.

Each rule is the config-alone twin of what `validators/startup.py` rehearses with verl's own code, and
cites the verl 0.9.1 code (0.8.0 alike unless noted) that fails or wastes the booking:
- `trainer.val_only`: `PPOTrainer.fit` (`verl/trainer/ppo/v1/trainer_base.py`) and `RayPPOTrainer.fit`
  (`verl/trainer/ppo/ray_trainer.py`) return after validation only inside `if val_before_train`;
  with `val_before_train=false` the run trains for its whole length instead;
- `trainer.critic_warmup`: the same `fit` / `_step_once` update the actor only when
  `critic_warmup <= global_steps` (steps 1..total);
- greedy sampling: `verl/experimental/agent_loop/agent_loop.py` `AgentLoopWorker.generate_sequences` passes
  `rollout.temperature` to the engine (0 = greedy, identical samples); a group baseline
  (`compute_grpo_outcome_advantage`, `compute_rloo_outcome_advantage`, ... in `verl/trainer/ppo/core_algos.py`)
  then gives every response advantage 0; `rollout.do_sample` is read only by `hf_rollout.py`;
- agent loops: `AgentLoopWorker` (`agent_loop.py`) asserts `agent_name in _agent_loop_registry`, which holds the
  `@register(...)` loops of `verl/experimental/agent_loop/` and the entries of `agent.agent_loop_config_path`;
- `rollout.free_cache_engine`: `vllm_async_server.py` `vLLMHttpServer.sleep` returns without sleeping when it
  is false, so the engine keeps `gpu_memory_utilization` of each device while the colocated actor trains;
- checkpoint contents: `verl/utils/checkpoint/megatron_checkpoint_manager.py` saves and loads by membership
  (`"model" in save_contents`, `should_save_hf_model`, ...): an unknown name is silently nothing;
- null load paths: `HFModelConfig` (`verl/workers/config/model.py`) copies `model.path`; the Megatron engine
  (`verl/workers/engine/megatron/transformer_impl.py`) calls `load_mcore_dist_weights(module,
  dist_checkpointing_path)` when `use_dist_checkpointing`;
- the custom reward function: `verl/trainer/ppo/reward.py` `get_custom_reward_fn` asserts a name and loads it
  with `load_extern_object` (FileNotFoundError, AttributeError), after `migrate_legacy_reward_impl`
  (`verl/experimental/reward_loop/reward_loop.py`) copied a set top-level `custom_reward_function` over;
- `data.dataloader_num_workers`: torch's DataLoader, built by `_init_dataloader`, refuses a negative count;
- the dynamic-batch token budget: `verl/utils/seqlen_balancing.py` `rearrange_micro_batches` asserts
  `max_token_len >= max_seq_len` at the first update (`validate_config` skips it with use_dynamic_bsz).
"""

import ast
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from verl_qwen35.checks.algorithm import needs_critic
from verl_qwen35.checks.problem import Level, Problem, error, warning
from verl_qwen35.checks.schedule import Steps
from verl_qwen35.checks.trainer_setup import trainer_setup_problems
from verl_qwen35.config.schema import ACTOR
from verl_qwen35.config.yaml_files import load_yaml, read_text
from verl_qwen35.errors import UserError

ROLLOUT = "actor_rollout_ref.rollout"
AGENT = f"{ROLLOUT}.agent"
# The loops verl 0.8.0 and 0.9.1 register (`@register` in verl/experimental/agent_loop/single_turn_agent_loop.py
# and tool_agent_loop.py); validators/startup.py reads them from the installed verl.
AGENT_LOOPS = ("single_turn_agent", "tool_agent")
# What verl's checkpoint managers look for in save_contents / load_contents (megatron_checkpoint_manager.py).
CONTENTS = ("model", "optimizer", "extra", "hf_model")
WEIGHTS = ("model", "hf_model")
# Estimators whose advantage is a response's reward against its own group (core_algos.py): identical groups -> 0.
# GPG subtracts the group mean too (compute_gpg_outcome_advantage), and the optimal token baseline is the group's
# weighted mean return (compute_optimal_token_baseline_advantage); tests/integration/test_rehearsal_agrees.py runs
# every estimator on identical groups and keeps this list equal to those that give all-zero advantages.
GROUP_BASELINES = (
    "grpo",
    "grpo_vectorized",
    "grpo_passk",
    "rloo",
    "rloo_vectorized",
    "opo",
    "reinforce_plus_plus_baseline",
    "gdpo",
    "gpg",
    "optimal_token_baseline",
)
ON_THIS_MACHINE = " [machine check: an error at launch and with dry_run=full]"


def _get(cfg: DictConfig, key: str, default: object = None) -> object:
    return OmegaConf.select(cfg, key, default=default)


def _whole(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def validation_problems(cfg: DictConfig) -> list[Problem]:
    if _get(cfg, "trainer.val_only") and not _get(cfg, "trainer.val_before_train", True):
        return [
            error(
                ("trainer.val_only", "trainer.val_before_train"),
                "val_only=true with val_before_train=false: verl's trainer returns after validation only inside "
                "its val_before_train branch, so this run trains for its whole length instead; set "
                "trainer.val_before_train=true for a validation-only run",
            )
        ]
    return []


def warmup_problems(cfg: DictConfig, steps: Steps) -> list[Problem]:
    warmup = _get(cfg, "trainer.critic_warmup", 0)
    if not _whole(warmup) or warmup <= 0:
        return []
    if steps.total is not None and warmup >= steps.total:
        return [
            error(
                ("trainer.critic_warmup", "trainer.total_training_steps", "trainer.total_epochs"),
                f"={warmup} with {steps.total} training steps: verl updates the actor only from step critic_warmup "
                f"on, so it is updated {max(steps.total - warmup + 1, 0)} time(s) and the run learns nothing; "
                f"use a critic_warmup below {steps.total}",
            )
        ]
    if not needs_critic(cfg):
        return [
            warning(
                "trainer.critic_warmup",
                f"={warmup} without a critic ({cfg.algorithm.adv_estimator}): the first {warmup} steps generate and "
                "score rollouts but update nothing; set it to 0 unless that is intended",
            )
        ]
    return []


def sampling_problems(cfg: DictConfig) -> list[Problem]:
    rollout = cfg.actor_rollout_ref.rollout
    found = []
    estimator, n, temperature = cfg.algorithm.adv_estimator, rollout.get("n", 1), rollout.get("temperature", 1.0)
    greedy = isinstance(temperature, int | float) and not isinstance(temperature, bool) and temperature <= 0
    if greedy and estimator in GROUP_BASELINES and _whole(n) and n > 1:
        found.append(
            error(
                f"{ROLLOUT}.temperature",
                f"={temperature}: greedy sampling gives the {n} samples of a prompt the same response, so "
                f"{estimator}'s group baseline makes every advantage 0 and the actor learns nothing; sample at a "
                "temperature > 0 (the presets use 1.0)",
            )
        )
    if rollout.get("do_sample") is False and rollout.get("name") in ("vllm", "sglang"):
        found.append(
            warning(
                f"{ROLLOUT}.do_sample",
                f"=false: verl's {rollout.name} rollout does not read it and samples at temperature={temperature}; "
                f"set {ROLLOUT}.temperature=0 for greedy decoding (only verl's hf rollout reads do_sample)",
            )
        )
    return found


def config_loops(path: Path) -> list[str] | None:
    """The `name` of each entry of an agent-loop config file, as verl's AgentLoopWorker reads it (None: unreadable)."""
    try:
        entries = OmegaConf.create(load_yaml(path))  # with the loader's limits (an alias bomb, a FIFO)
    except Exception:  # a YAML error, a file beyond the limits: verl's OmegaConf.load fails on it too
        return None
    if not OmegaConf.is_list(entries):
        return None
    return [str(e.get("name")) for e in entries if OmegaConf.is_dict(e) and e.get("name") is not None]


def agent_loop_problems(cfg: DictConfig, missing: Level, registered: tuple[str, ...] = AGENT_LOOPS) -> list[Problem]:
    """The default agent loop against verl's registry and the loops of agent_loop_config_path."""
    name = _get(cfg, f"{AGENT}.default_agent_loop")
    path = _get(cfg, f"{AGENT}.agent_loop_config_path")
    known = list(registered)
    if path:
        file = Path(str(path)).expanduser()
        if not file.is_file():
            where = ON_THIS_MACHINE if missing == "warning" else ""
            return [Problem(missing, (f"{AGENT}.agent_loop_config_path",), f"{file} does not exist{where}")]
        loops = config_loops(file)
        if loops is None:
            return [
                error(f"{AGENT}.agent_loop_config_path", f"{file} is not a YAML list of agent loops (name, _target_)")
            ]
        known += loops
    if name is not None and name not in known:
        return [
            error(
                f"{AGENT}.default_agent_loop",
                f"={name!r} is not a registered agent loop (verl's AgentLoopWorker asserts it at the first "
                f"rollout); known: {', '.join(known)}",
            )
        ]
    return []


def memory_kept_problems(cfg: DictConfig) -> list[Problem]:
    rollout = cfg.actor_rollout_ref.rollout
    if rollout.get("free_cache_engine", True) or not cfg.actor_rollout_ref.get("hybrid_engine", True):
        return []
    share = rollout.get("gpu_memory_utilization")
    return [
        warning(
            f"{ROLLOUT}.free_cache_engine",
            f"=false: the rollout engine never sleeps, so it keeps gpu_memory_utilization={share} of each device "
            "(weights and KV cache) while the actor trains beside it on the same devices; expect an out-of-memory "
            "error at the first update unless the training fits in the rest",
        )
    ]


def checkpoint_problems(cfg: DictConfig, known: tuple[str, ...] = CONTENTS) -> list[Problem]:
    sides = ["actor_rollout_ref.actor"] + (["critic"] if needs_critic(cfg) else [])
    found = []
    for side in sides:
        for field in ("save_contents", "load_contents"):
            key = f"{side}.checkpoint.{field}"
            value = _get(cfg, key)
            if value is None:
                continue  # verl's default: model, optimizer, extra
            given = list(value) if OmegaConf.is_list(value) or isinstance(value, list) else [value]
            if field == "load_contents" and given == list(_get(cfg, f"{side}.checkpoint.save_contents") or []):
                continue  # verl's default ${.save_contents}: one message, on save_contents
            unknown = [v for v in given if v not in known]
            if unknown:
                found.append(
                    error(
                        key,
                        f"={given}: verl's checkpoint manager knows no {unknown[0]!r} and would silently skip it; "
                        f"use some of {', '.join(known)}",
                    )
                )
            elif field == "save_contents" and not any(v in WEIGHTS for v in given):
                found.append(
                    warning(
                        key,
                        f"={given}: checkpoints keep no model weights (neither 'model' nor 'hf_model'); a resume "
                        "starts from the base weights",
                    )
                )
    return found


def path_problems(cfg: DictConfig) -> list[Problem]:
    found = []
    if _get(cfg, "actor_rollout_ref.model.path") is None:
        found.append(error("actor_rollout_ref.model.path", "is null: verl loads the tokenizer and weights from it"))
    if needs_critic(cfg) and OmegaConf.select(cfg, "critic.model.path", default="") is None:
        found.append(error("critic.model.path", "is null: verl's critic loads its weights from it"))
    for side in ("actor", "ref"):
        megatron = f"actor_rollout_ref.{side}.megatron"
        if _get(cfg, f"{megatron}.use_dist_checkpointing") and _get(cfg, f"{megatron}.dist_checkpointing_path") is None:
            found.append(
                error(
                    (f"{megatron}.dist_checkpointing_path", f"{megatron}.use_dist_checkpointing"),
                    "is null with use_dist_checkpointing=true: verl's Megatron engine loads the weights from it "
                    "(load_mcore_dist_weights) after building the model",
                )
            )
    return found


def reward_function_key(cfg: DictConfig) -> str:
    """Where the custom reward function is set: verl copies a set top-level one over `reward.`'s."""
    legacy = _get(cfg, "custom_reward_function") or {}
    if any(v is not None for v in dict(legacy).values()):
        return "custom_reward_function"
    return "reward.custom_reward_function"


def defined_names(source: str) -> set[str]:
    """Top-level names a Python file defines (functions, classes, assignments, imports)."""
    names: set[str] = set()
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
    return names


def reward_function_problems(cfg: DictConfig, missing: Level) -> list[Problem]:
    key = reward_function_key(cfg)
    path, name = _get(cfg, f"{key}.path"), _get(cfg, f"{key}.name")
    if not path:
        return []
    if name is None:
        return [error(f"{key}.name", f"is null with {key}.path set: verl's get_custom_reward_fn asserts a name")]
    file = Path(str(path)).expanduser()
    if not file.is_file():
        where = ON_THIS_MACHINE if missing == "warning" else ""
        said = f"{file} does not exist; verl loads the reward function from it{where}"
        return [Problem(missing, (f"{key}.path",), said)]
    try:
        names = defined_names(read_text(file, kind="Python file"))  # limits: size, binary, a FIFO not waited on
    except SyntaxError as err:
        return [error(f"{key}.path", f"{file} is not valid Python (line {err.lineno}: {err.msg})")]
    except UserError as err:
        return [error(f"{key}.path", str(err))]
    if "*" not in names and name not in names and "__getattr__" not in names:
        return [error(f"{key}.name", f"={name!r}: {file} defines no such function at its top level")]
    return []


def token_budget_floor(longest: int, cp: int) -> int:
    """The smallest dynamic-batch token budget per device verl starts with: `rearrange_micro_batches`
    (verl/utils/seqlen_balancing.py) asserts budget x context parallel (`prepare_micro_batches` in
    verl/workers/engine/utils.py multiplies by sp_size) >= the longest sequence, prompt + response."""
    return -(-longest // cp)


def token_budget_problems(cfg: DictConfig) -> list[Problem]:
    """With use_dynamic_bsz every sequence must fit the budget, per device times context parallelism
    (`transformer_impl.py` sets sp_size = context_parallel_size; `verl/workers/engine/utils.py`
    prepare_micro_batches multiplies), as `rearrange_micro_batches` asserts."""
    longest = _get(cfg, "data.max_prompt_length", 0) + _get(cfg, "data.max_response_length", 0)
    cp = _get(cfg, f"{ACTOR}.context_parallel_size", 1)  # the engine's sp_size
    cp = cp if _whole(cp) and cp > 0 else 1
    found = []
    for budget_key, switch in (
        ("actor_rollout_ref.actor.ppo_max_token_len_per_gpu", "actor_rollout_ref.actor.use_dynamic_bsz"),
        (f"{ROLLOUT}.log_prob_max_token_len_per_gpu", f"{ROLLOUT}.log_prob_use_dynamic_bsz"),
        ("actor_rollout_ref.ref.log_prob_max_token_len_per_gpu", "actor_rollout_ref.ref.log_prob_use_dynamic_bsz"),
    ):
        budget = _get(cfg, budget_key)
        if _get(cfg, switch) and _whole(budget) and _whole(longest) and budget < token_budget_floor(longest, cp):
            found.append(
                error(
                    budget_key,
                    f"={budget} x context parallel {cp} is below the longest sequence, max_prompt_length + "
                    f"max_response_length = {longest}: with dynamic batches verl's rearrange_micro_batches asserts "
                    f"max_token_len >= the sequence length at the first update; use at least "
                    f"{token_budget_floor(longest, cp)}",
                )
            )
    return found


def dataloader_problems(cfg: DictConfig) -> list[Problem]:
    """torch's DataLoader (verl's StatefulDataLoader, `_init_dataloader`) refuses a negative worker count."""
    workers = _get(cfg, "data.dataloader_num_workers", 0)
    if _whole(workers) and workers < 0:
        return [error("data.dataloader_num_workers", f"={workers}: torch's DataLoader needs >= 0 (0: no workers)")]
    return []


def startup_problems(cfg: DictConfig, steps: Steps, missing: Level = "error") -> list[Problem]:
    return (
        trainer_setup_problems(cfg)  # what verl's trainer construction refuses (checks/trainer_setup.py)
        + validation_problems(cfg)
        + dataloader_problems(cfg)
        + warmup_problems(cfg, steps)
        + sampling_problems(cfg)
        + agent_loop_problems(cfg, missing)
        + memory_kept_problems(cfg)
        + checkpoint_problems(cfg)
        + path_problems(cfg)
        + reward_function_problems(cfg, missing)
        + token_budget_problems(cfg)
    )
