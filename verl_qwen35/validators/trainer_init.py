"""verl's trainer construction and the CPU parts of its set-up, run with verl's own code on the resolved config.

The functions are those of `verl_qwen35/data/startup_trace.yaml` (scripts/trace_startup.py) that run on CPU and
that validators/startup.py, rehearsal.py and real.py do not already run (verl 0.9.1; 0.8.0 where it has them):
- `main_ppo.run_ppo`: `get_ppo_ray_runtime_env` and its merge with `ray_kwargs.ray_init` (what `ray.init` gets);
- `TaskRunnerV1.run`: `get_trainer_cls(trainer.v1.trainer_mode)` and the trainer's `__init__` (v1
  `PPOTrainer.__init__`: `build_checkpoint_callback`, `get_kl_controller`, the replay buffer and DAPO's group
  filter); the legacy `RayPPOTrainer.__init__` (verl 0.8.0, or `trainer.use_v1=false`) asserts the hybrid engine
  and builds the KL controller: those two calls are run, its dataloaders are validators/startup.py's;
- the classes named by fully qualified name: `trainer.checkpoint_callback_class`,
  `rollout.agent.agent_loop_manager_class` (`load_class_from_fqn`), `trainer.v1.sampler.custom_sampler`;
- `PPOTrainer._setup` / `ActorRolloutRefWorker.__init__` / `init_model`: the checkpoint-engine, profiler and
  distillation dataclasses (`omega_conf_to_dataclass`);
- the first step's rollout correction (`compute_rollout_correction_and_add_to_batch`) on a fake batch.
No device is stubbed: none of these asks for one. Ray is imported by verl's modules, never started.
A refusal names the keys the failing verl function reads (from the trace), narrowed to those its message names.
"""

import functools
import importlib.util
import inspect
import linecache
import re
import traceback
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from verl_qwen35.checks.problem import Problem, error
from verl_qwen35.checks.schedule import uses_v1_trainer
from verl_qwen35.config.yaml_files import load_yaml
from verl_qwen35.terminal import say
from verl_qwen35.validators.calling import plain_copy, quietly, said

TRACE = Path(__file__).resolve().parents[1] / "data" / "startup_trace.yaml"
ROLLOUT = "actor_rollout_ref.rollout"


@functools.cache
def trace() -> dict[tuple[str, str], list[str]]:
    """(verl file, function name) -> the config keys it reads, from the trace's data file."""
    data = load_yaml(TRACE)
    return {(e["verl_file"], e["function"].rsplit(".", 1)[-1]): e["keys"] for e in data["functions"]}


def _dispatch_lines(filename: str, lineno: int) -> str:
    """The `==` comparisons of the function around a line: what a bare `raise` in an if/elif chain dispatched on."""
    lines = linecache.getlines(filename)
    start = next((i for i in range(lineno - 1, -1, -1) if lines[i].lstrip().startswith("def ")), 0)
    return " ".join(line for line in lines[start:lineno] if "==" in line)


def keys_of(err: BaseException, fallback: tuple[str, ...] = ()) -> tuple[tuple[str, ...], str]:
    """(the config keys behind an exception, where verl raised it): the innermost verl frame on the trace, its keys
    narrowed to those its message or source line names, else those its if/elif chain compares (a bare
    `raise NotImplementedError`), else `fallback`, else all its keys."""
    frames = [f for f in traceback.extract_tb(err.__traceback__) if "/verl/" in f.filename]
    for frame in reversed(frames):
        file = "verl/" + frame.filename.rsplit("/verl/", 1)[1]
        keys = trace().get((file, frame.name))
        if keys:
            where = f"{file}:{frame.lineno} {frame.name}"
            for words in (f"{err} {frame.line or ''}", _dispatch_lines(frame.filename, frame.lineno or 0)):
                named = tuple(k for k in keys if re.search(rf"\b{re.escape(k.rsplit('.', 1)[-1])}\b", words))
                if named:
                    return named, where
            return fallback or tuple(keys), where
    last = frames[-1] if frames else None
    where = f"verl/{last.filename.rsplit('/verl/', 1)[1]}:{last.lineno} {last.name}" if last else "verl"
    return fallback, where


def _refusal(err: BaseException, what: str, fallback: tuple[str, ...]) -> Problem:
    keys, where = keys_of(err, fallback)
    return error(keys, f"{what} raises this when the run starts, after Ray and before training ({where}): {said(err)}")


def runtime_env_problems(cfg: DictConfig) -> list[Problem]:
    """`run_ppo`: verl's default runtime env merged with `ray_kwargs.ray_init`, as `ray.init` receives it."""
    from verl.trainer.constants_ppo import get_ppo_ray_runtime_env

    plain = plain_copy(cfg)
    try:
        takes_config = bool(inspect.signature(get_ppo_ray_runtime_env).parameters)  # 0.9.1 takes it, 0.8.0 not
        default = get_ppo_ray_runtime_env(plain) if takes_config else get_ppo_ray_runtime_env()
        ray_init = plain.ray_kwargs.get("ray_init", {})
        runtime_env = OmegaConf.merge(default, ray_init.get("runtime_env", {}))
        OmegaConf.to_container(OmegaConf.create({**ray_init, "runtime_env": runtime_env}))
    except Exception as err:
        return [_refusal(err, "verl's run_ppo (the Ray runtime env)", ("ray_kwargs.ray_init",))]
    return []


def _load_class(key: str, fqn: str, what: str) -> list[Problem]:
    from verl.utils.import_utils import load_class_from_fqn

    try:
        quietly(load_class_from_fqn, fqn, what)
    except Exception as err:  # ValueError (no dot), ImportError, AttributeError
        return [error(key, f"={fqn!r}: verl's load_class_from_fqn refused it ({said(err)})")]
    return []


def class_problems(cfg: DictConfig) -> list[Problem]:
    """The classes a config names by fully qualified name, loaded as verl loads them."""
    found = []
    agent_manager = OmegaConf.select(cfg, f"{ROLLOUT}.agent.agent_loop_manager_class", default=None)
    if agent_manager:  # verl/trainer/main_ppo.py TaskRunnerV1.init_agent_loop_manager
        found += _load_class(f"{ROLLOUT}.agent.agent_loop_manager_class", agent_manager, "AgentLoopManager")
    callback = OmegaConf.select(cfg, "trainer.checkpoint_callback_class", default=None)
    if callback and importlib.util.find_spec("verl.trainer.ppo.checkpoint_callback"):  # verl 0.9
        found += _load_class("trainer.checkpoint_callback_class", callback, "CheckpointCallback")
    sampler = OmegaConf.select(cfg, "trainer.v1.sampler.custom_sampler", default=None) or {}
    if uses_v1_trainer(cfg) and sampler.get("path") and sampler.get("name"):  # PPOTrainer._build_replay_buffer
        from verl.utils.import_utils import load_extern_type

        try:
            quietly(load_extern_type, sampler.path, sampler.name)
        except Exception as err:
            keys = ("trainer.v1.sampler.custom_sampler.path", "trainer.v1.sampler.custom_sampler.name")
            return [*found, error(keys, f"verl's load_extern_type could not load it: {said(err)}")]
    return found


def trainer_problems(cfg: DictConfig) -> list[Problem]:
    """The trainer verl's task runner builds: v1 by its registry, legacy by the calls of its `__init__`."""
    plain = plain_copy(cfg)
    if not uses_v1_trainer(cfg):
        from verl.trainer.ppo import core_algos

        if not plain.actor_rollout_ref.get("hybrid_engine", True):  # RayPPOTrainer.__init__
            why = "=false: verl's legacy RayPPOTrainer asserts 'Currently, only support hybrid engine'"
            return [error("actor_rollout_ref.hybrid_engine", why + " (verl/trainer/ppo/ray_trainer.py __init__)")]
        if plain.algorithm.get("use_kl_in_reward"):
            try:
                core_algos.get_kl_controller(plain.algorithm.kl_ctrl)
            except Exception as err:
                return [_refusal(err, "verl's get_kl_controller", ("algorithm.kl_ctrl.type",))]
        return []
    from verl.trainer.ppo.v1 import get_trainer_cls

    mode = plain.trainer.v1.trainer_mode
    try:
        trainer_cls = get_trainer_cls(mode)
    except Exception as err:  # ValueError: Unknown trainer
        return [error("trainer.v1.trainer_mode", f"={mode!r}: verl's get_trainer_cls refused it ({said(err)})")]
    try:
        quietly(trainer_cls, config=plain)
    except Exception as err:
        return [_refusal(err, f"verl's {trainer_cls.__name__}", ("trainer.v1.trainer_mode",))]
    return []


def setup_problems(cfg: DictConfig) -> list[Problem]:
    """The dataclasses the trainer's `_setup` and the actor worker build from the config."""
    from verl.trainer.ppo.utils import need_teacher_policy
    from verl.utils.config import omega_conf_to_dataclass
    from verl.utils.profiler import ProfilerConfig

    plain = plain_copy(cfg)
    arr = plain.actor_rollout_ref
    nodes: list[tuple[str, DictConfig, type | None]] = []
    if arr.rollout.get("checkpoint_engine") is not None:  # PPOTrainer._setup, ActorRolloutRefWorker.init_model
        nodes.append((f"{ROLLOUT}.checkpoint_engine", arr.rollout.checkpoint_engine, None))
    for side in ("actor", "rollout", "ref"):  # ActorRolloutRefWorker.__init__ / init_model
        profiler = arr[side].get("profiler") if side in arr else None
        if profiler:
            nodes.append((f"actor_rollout_ref.{side}.profiler", profiler, ProfilerConfig))
    if plain.get("distillation") is not None and need_teacher_policy(plain):
        nodes.append(("distillation", plain.distillation, None))
    for key, node, kind in nodes:
        try:
            quietly(omega_conf_to_dataclass, node, dataclass_type=kind) if kind else quietly(
                omega_conf_to_dataclass, node
            )
        except Exception as err:
            return [error(key, f"verl's {node.get('_target_', 'config')} refused it: {said(err)}")]
    return []


def correction_problems(cfg: DictConfig) -> list[Problem]:
    """The first step's rollout correction (IS weights, rejection sampling) on a fake batch of 4 x 4 tokens,
    as `_compute_advantage` (v1) / `fit` (legacy) call it when the rollout's log-probs are there."""
    correction = OmegaConf.select(cfg, "algorithm.rollout_correction", default=None)
    if correction is None or correction.get("bypass_mode"):
        return []
    if correction.get("rollout_is") is None and correction.get("rollout_rs") is None:
        return []
    import torch
    from verl import DataProto
    from verl.trainer.ppo.rollout_corr_helper import compute_rollout_correction_and_add_to_batch

    gen = torch.Generator().manual_seed(0)
    old = -torch.rand(4, 4, generator=gen)
    batch = DataProto.from_dict(
        tensors={
            "old_log_probs": old,
            "rollout_log_probs": old - 0.05 * torch.rand(4, 4, generator=gen),
            "response_mask": torch.ones(4, 4, dtype=torch.int64),
        }
    )
    try:
        quietly(compute_rollout_correction_and_add_to_batch, batch, plain_copy(cfg).algorithm.rollout_correction)
    except Exception as err:
        return [_refusal(err, "verl's rollout correction", ())]
    return []


def trainer_init_problems(cfg: DictConfig) -> list[Problem]:
    """Every step above, in the order verl reaches them."""
    found = runtime_env_problems(cfg) + class_problems(cfg)
    found += trainer_problems(cfg) if not found else []
    found += setup_problems(cfg) + correction_problems(cfg)
    if not found:
        trainer = f"{cfg.trainer.v1.trainer_mode} v1" if uses_v1_trainer(cfg) else "legacy"
        say(
            f"rehearsal  start-up: Ray runtime env, the {trainer} trainer built, checkpoint-engine/profiler "
            "configs, rollout correction (verl's own): OK"
        )
    return found
