"""The rollout server's own checks on CPU (dry_run=full, launch): verl's replica placement, and vLLM's
SamplingParams and `vllm serve` parser where vLLM is installed (skipped with a note where it is not).

verl's `RolloutReplica.__init__` (verl/workers/rollout/replica.py, 0.8.0 and 0.9.1) asserts that a replica
covers whole nodes; it is built here through a subclass that launches nothing. vLLM is imported only when
installed: the requests are the ones verl sends (checks/vllm.py `sampling_requests`), and the engine
arguments go through verl's own `build_cli_args_from_config` into vLLM's serve parser, then vLLM's
`SchedulerConfig` and `CacheConfig`, as `vllm_async_server.py` launch_server / `AsyncEngineArgs` do.
"""

import contextlib
import importlib.util
import io
from typing import Any

from omegaconf import DictConfig

from verl_qwen35.checks.layout import KEYS
from verl_qwen35.checks.problem import Problem, error, warning
from verl_qwen35.checks.vllm import ENGINE, engine_arguments, sampling_requests, verl_minor, vllm_in_use
from verl_qwen35.terminal import say


def real_replica_problems(cfg: DictConfig) -> list[Problem]:
    from verl.workers.rollout.replica import RolloutReplica

    class Placement(RolloutReplica):
        """A replica that is only placed: verl's own __init__ arithmetic, no server."""

        async def launch_servers(self) -> None:
            return None

    try:
        Placement(replica_rank=0, config=cfg.actor_rollout_ref.rollout, model_config=None,
                  gpus_per_node=cfg.trainer.n_gpus_per_node)  # fmt: skip
    except AssertionError as err:
        keys = (KEYS["gen_tp"], KEYS["gen_dp"], KEYS["devices_per_node"])
        return [error(keys, f"verl's RolloutReplica refused the rollout placement: {err}")]
    return []


def _keys_named(message: str, keys: dict[str, str]) -> tuple[str, ...]:
    return tuple(key for name, key in keys.items() if name in message or name.replace("_", "-") in message)


def real_sampling_problems(cfg: DictConfig) -> list[Problem]:
    from vllm import SamplingParams

    found = []
    for label, params in sampling_requests(cfg):
        kwargs = {name: value for name, (value, _) in params.items()}
        try:  # vllm_async_server.py generate: max_tokens >= 1; agent_loop.py: repetition_penalty=1.0
            SamplingParams(max_tokens=1, repetition_penalty=1.0, **kwargs)
        except Exception as err:  # vLLM raises ValueError, TypeError, VLLMValidationError
            keys = {name: key for name, (_, key) in params.items()}
            named = _keys_named(str(err), keys) or tuple(keys.values())
            found.append(error(named, f"vLLM's SamplingParams refused the {label} requests: {err}"))
    return found


def real_engine_problems(cfg: DictConfig) -> list[Problem]:
    import vllm.entrypoints.cli.serve as serve
    from verl.workers.rollout.vllm_rollout.utils import build_cli_args_from_config
    from vllm.config import CacheConfig, SchedulerConfig
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    built = engine_arguments(cfg, verl_minor())
    keys = {name: key for name, (_, key) in built.items()}
    values: dict[str, Any] = {name: value for name, (value, _) in built.items()}
    parser = FlexibleArgumentParser()
    subparsers = parser.add_subparsers(required=False, dest="subparser")
    for command in serve.cmd_init():
        command.subparser_init(subparsers)
    said = io.StringIO()
    argv = ["serve", str(cfg.actor_rollout_ref.model.path), *build_cli_args_from_config(values)]
    try:
        with contextlib.redirect_stderr(said):
            parsed = parser.parse_args(args=argv)
    except SystemExit:
        message = (said.getvalue().strip().splitlines() or ["(no message)"])[-1]
        return [error(_keys_named(message, keys) or (ENGINE,), f"vLLM's serve parser refused it: {message}")]
    try:
        CacheConfig(gpu_memory_utilization=parsed.gpu_memory_utilization)
        SchedulerConfig(
            max_model_len=parsed.max_model_len,
            is_encoder_decoder=False,
            max_num_batched_tokens=parsed.max_num_batched_tokens,
            max_num_seqs=parsed.max_num_seqs,
            enable_chunked_prefill=parsed.enable_chunked_prefill,
        )
    except Exception as err:  # pydantic ValidationError, ValueError from verify_max_model_len
        return [error(_keys_named(str(err), keys) or (ENGINE,), f"vLLM's engine configuration refused it: {err}")]
    return []


def real_rollout_problems(cfg: DictConfig, device: str) -> list[Problem]:
    found = real_replica_problems(cfg)
    if cfg.actor_rollout_ref.rollout.get("name") != "vllm":
        return found
    if importlib.util.find_spec("vllm") is None:
        shown = vllm_in_use(device).shown
        say(f"vllm       not installed here: sampling and engine arguments judged by the fast rules for vLLM {shown}")
        return found
    try:
        found += real_sampling_problems(cfg) + real_engine_problems(cfg)
    except ImportError as err:  # an installed vLLM that cannot load on this machine (driver, platform)
        return found + [warning(ENGINE, f"vLLM is installed but cannot be imported here ({err}); fast rules only")]
    if not found:
        say("vllm       SamplingParams, serve arguments and scheduler/cache limits (vLLM's own): OK")
    return found
