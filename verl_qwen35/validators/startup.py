"""A CPU rehearsal of verl's trainer start-up: the steps of `TaskRunnerV1.run` / the v1 trainer's `init`
(`verl/trainer/main_ppo.py`, `verl/trainer/ppo/v1/trainer_base.py` `_setup`; the v0 `TaskRunner.run` of
`main_ppo_v0.py` alike) that need neither devices nor Ray, with verl's own code and the resolved config:
- data: `get_dataset_class` (a `data.custom_cls`) and `create_rl_dataset` on the user's files (a generated
  sample of the same columns when they are not here), `create_rl_sampler`, the train and validation
  `StatefulDataLoader`s and verl's count of training steps (`_init_dataloader`); the tokenizer is not
  loaded (the weights are not here), so the overlong-prompt filter is not rehearsed;
- reward: `migrate_legacy_reward_impl`, `get_custom_reward_fn` (the user's file, imported) and
  `resolve_reward_manager_cls` (`verl/trainer/ppo/reward.py`);
- the agent-loop registry: the loops verl registers (`@register` in `verl/experimental/agent_loop/`) and
  the entries of `agent.agent_loop_config_path`, loaded as `AgentLoopWorker` loads them;
- configs through verl's dataclasses (`omega_conf_to_dataclass`): the critic when verl builds one
  (`need_critic`), the reward model when enabled, the actor's checkpoint config;
- checkpoint contents: the names `MegatronCheckpointManager` tests `save_contents` / `load_contents` for,
  read from its source (it needs torch.distributed to be built).
Not rehearsed: the tokenizer and weights, Ray, the workers and engines, the rollout servers.
"""

import ast
import importlib.util
import inspect
import tempfile
from pathlib import Path

from omegaconf import DictConfig, OmegaConf, open_dict

from verl_qwen35.checks.algorithm import needs_critic
from verl_qwen35.checks.files import required_columns
from verl_qwen35.checks.problem import Problem, error
from verl_qwen35.checks.schedule import parquet_rows, uses_v1_trainer
from verl_qwen35.checks.startup import (
    agent_loop_problems,
    checkpoint_problems,
    reward_function_key,
)
from verl_qwen35.terminal import say
from verl_qwen35.validators.calling import plain_copy, quietly, said
from verl_qwen35.validators.critic_model import critic_judged_here


def sample_files(cfg: DictConfig, folder: Path) -> tuple[str, str]:
    """Parquet files of the columns verl reads, one batch of rows each (a dry run without the data)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = max(cfg.data.get("gen_batch_size") or 0, cfg.data.train_batch_size)
    columns = {name: ["x"] * rows for name in required_columns(cfg)}
    columns[cfg.data.get("prompt_key", "prompt")] = [[{"role": "user", "content": "1+1?"}]] * rows
    columns["reward_model"] = [{"style": "rule", "ground_truth": "2"}] * rows
    paths = []
    for name in ("train", "val"):
        paths.append(str(folder / f"{name}.parquet"))
        pq.write_table(pa.table(columns), paths[-1])
    return paths[0], paths[1]


def data_problems(cfg: DictConfig) -> tuple[list[Problem], int | None]:
    """verl's datasets, sampler and dataloaders, and its count of training steps (None: not counted here)."""
    from torchdata.stateful_dataloader import StatefulDataLoader

    try:
        from verl.trainer.ppo.utils import create_rl_dataset, create_rl_sampler  # verl 0.9
    except ImportError:
        from verl.trainer.main_ppo import create_rl_dataset, create_rl_sampler  # verl 0.8.0
    from verl.utils.dataset.rl_dataset import collate_fn, get_dataset_class

    data = plain_copy(cfg).data
    with open_dict(data):
        data.filter_overlong_prompts = False  # needs the tokenizer, which needs the weights
    have = parquet_rows(data.train_files) is not None and parquet_rows(data.val_files) is not None
    with tempfile.TemporaryDirectory() as folder:
        train_files, val_files = (data.train_files, data.val_files) if have else sample_files(cfg, Path(folder))
        with open_dict(data):
            data.cache_dir = folder  # verl copies remote files there
        try:
            quietly(get_dataset_class, data)
        except Exception as err:
            return [error("data.custom_cls.path", f"verl's get_dataset_class refused it: {said(err)}")], None
        made = {}
        for key, files, train in (("data.train_files", train_files, True), ("data.val_files", val_files, False)):
            try:
                made[key] = quietly(create_rl_dataset, files, data, None, None, is_train=train)
            except Exception as err:
                return [error(key, f"verl's dataset class could not read it: {said(err)}")], None
        train_set, val_set = made["data.train_files"], made["data.val_files"]
        batch = data.get("gen_batch_size") or data.train_batch_size
        try:
            sampler = create_rl_sampler(data, train_set)
            train = StatefulDataLoader(
                train_set,
                batch_size=batch,
                num_workers=data.dataloader_num_workers,
                drop_last=True,
                collate_fn=collate_fn,
                sampler=sampler,
            )
        except Exception as err:  # ValueError of torch's DataLoader (num_workers < 0, batch_size < 1)
            keys = ("data.dataloader_num_workers",) if "num_workers" in str(err) else ("data.train_batch_size",)
            return [error(keys, f"verl's train dataloader refused it: {said(err)}")], None
        try:
            StatefulDataLoader(val_set, batch_size=data.get("val_batch_size") or len(val_set), shuffle=False)
        except Exception as err:  # an empty validation set gives batch_size 0
            keys = ("data.val_files", "data.val_batch_size")
            return [error(keys, f"verl's validation dataloader refused it ({len(val_set)} rows): {said(err)}")], None
        per_epoch = len(train_set) // data.train_batch_size if uses_v1_trainer(cfg) else len(train)
        if not have and cfg.trainer.get("total_training_steps") is None and cfg.trainer.total_epochs > 0:
            return [], None  # the sample's step count says nothing about the user's data
    total = per_epoch * cfg.trainer.total_epochs
    if cfg.trainer.get("total_training_steps") is not None:
        total = cfg.trainer.total_training_steps
    if total <= 0:
        key = "trainer.total_training_steps" if cfg.trainer.get("total_training_steps") is not None else None
        keys = (key,) if key else ("trainer.total_epochs", "data.train_files", "data.train_batch_size")
        return [
            error(
                keys,
                f"verl counts {total} training steps ({per_epoch} an epoch{'' if have else ' of a one-batch sample'}, "
                f"{cfg.trainer.total_epochs} epochs): megatron-core's OptimizerParamScheduler asserts "
                "lr_decay_steps > 0 when the workers start",
            )
        ], total
    return [], total


def reward_problems(cfg: DictConfig) -> list[Problem]:
    """verl's legacy-reward migration, custom reward function loader and reward-manager lookup."""
    from verl.experimental.reward_loop.reward_loop import migrate_legacy_reward_impl
    from verl.trainer.ppo.reward import get_custom_reward_fn, resolve_reward_manager_cls

    key = reward_function_key(cfg)
    try:
        config = quietly(migrate_legacy_reward_impl, plain_copy(cfg))
    except Exception as err:
        return [error("reward", f"verl's migrate_legacy_reward_impl refused it: {said(err)}")]
    try:
        quietly(get_custom_reward_fn, config)
    except AssertionError as err:
        return [error(f"{key}.name", f"verl's get_custom_reward_fn refused it: {said(err)}")]
    except AttributeError as err:
        return [error(f"{key}.name", f"verl's get_custom_reward_fn found no such function: {said(err)}")]
    except Exception as err:  # FileNotFoundError, RuntimeError, the module's own error
        return [error(f"{key}.path", f"verl's get_custom_reward_fn could not load it: {said(err)}")]
    try:
        quietly(resolve_reward_manager_cls, config)
    except Exception as err:
        source = config.reward.reward_manager.get("source")
        where = {"importlib": "reward.reward_manager.module.path", "register": "reward.reward_manager.name"}.get(
            source,
            "reward_model.reward_loop_source"
            if OmegaConf.select(cfg, "reward_model.reward_loop_source", default=None) is not None
            else "reward.reward_manager.source",
        )
        return [error(where, f"verl's resolve_reward_manager_cls refused it: {said(err)}")]
    return []


def registered_agent_loops() -> tuple[str, ...]:
    """The names verl's agent-loop modules register with `@register("...")`, read from their source (found, not
    imported: importing the package loads its servers' HTTP stack, ~0.4 s, for names its source states)."""
    spec = importlib.util.find_spec("verl.experimental.agent_loop")
    folders = list(spec.submodule_search_locations or []) if spec else []
    names: set[str] = set()
    for file in (f for folder in folders for f in Path(folder).glob("*.py")):
        for node in ast.walk(ast.parse(file.read_text())):
            if isinstance(node, ast.ClassDef):
                for deco in node.decorator_list:
                    call = isinstance(deco, ast.Call) and ast.unparse(deco.func) == "register" and deco.args
                    if call and isinstance(deco.args[0], ast.Constant):
                        names.add(str(deco.args[0].value))
    return tuple(sorted(names))


def config_problems(cfg: DictConfig) -> list[Problem]:
    """The critic, reward-model and checkpoint configs through verl's own dataclasses."""
    from verl.utils.config import omega_conf_to_dataclass

    # the critic's model files are the cluster's: read through a config.json of the preset (validators/critic_model.py)
    with critic_judged_here(plain_copy(cfg)) as (plain, _):
        nodes = [("actor_rollout_ref.actor.checkpoint", plain.actor_rollout_ref.actor.checkpoint)]
        if needs_critic(cfg):
            nodes.append(("critic", plain.critic))
        if OmegaConf.select(plain, "reward.reward_model.enable", default=False):
            nodes.append(("reward.reward_model", plain.reward.reward_model))
        for key, node in nodes:
            try:
                quietly(omega_conf_to_dataclass, node)
            except Exception as err:
                return [error(key, f"verl's {node.get('_target_', 'config')} refused it: {said(err)}")]
    return []


def checked_contents() -> tuple[str, ...]:
    """The names verl's Megatron checkpoint manager tests save_contents / load_contents for (its source)."""
    from verl.utils.checkpoint import checkpoint_manager, megatron_checkpoint_manager

    names: set[str] = set()
    for module in (checkpoint_manager, megatron_checkpoint_manager):
        for node in ast.walk(ast.parse(inspect.getsource(module))):
            tested = isinstance(node, ast.Compare) and isinstance(node.left, ast.Constant)
            if tested and any("contents" in ast.unparse(c) for c in node.comparators):
                names.add(str(node.left.value))
    return tuple(sorted(names))


def contents_problems(cfg: DictConfig) -> list[Problem]:
    """The fast rule, judged with the names the installed verl's checkpoint manager reads."""
    return checkpoint_problems(cfg, checked_contents())


def startup_rehearsal(cfg: DictConfig) -> tuple[list[Problem], int | None]:
    """Every start-up step above; (problems, verl's count of training steps where it was counted)."""
    found, total = data_problems(cfg)
    found += reward_problems(cfg)
    found += agent_loop_problems(cfg, "error", registered_agent_loops())
    found += config_problems(cfg) + contents_problems(cfg)
    if not found:
        say(
            f"rehearsal  start-up: datasets, sampler and dataloaders{'' if total is None else f' ({total} steps)'}, "
            "reward function and manager, agent loops, critic/reward-model/checkpoint configs (verl's own): OK"
        )
    return found, total
