"""vLLM's own checks on what verl hands it (sampling parameters, engine arguments), without importing vLLM.

What verl passes, read in verl 0.8.0 and 0.9.1: each request's sampling parameters come from
`verl/experimental/agent_loop/agent_loop.py` (AgentLoopManager.generate_sequences: temperature, top_p,
top_k from `rollout.*`, from `rollout.val_kwargs.*` when validating, repetition_penalty=1.0 always) and
`vllm_async_server.py` vLLMHttpServer.generate (max_tokens, logprobs, ignore_eos) into vLLM's
`SamplingParams`; the engine arguments are `vllm_async_server.py` launch_server's `args` (rollout.*) with
`engine_kwargs.vllm.*` after them (so they win), turned into `vllm serve` flags and parsed by vLLM's own
serve parser. vLLM is not importable here: each bound below names the vLLM file and function it was read
from, at the release it was read from; the argument names ship as `data/upstream/vllm_<release>.json`
(scripts/vllm_fields.py). `dry_run=full` builds the real objects where vLLM is installed
(validators/rollout_server.py).
"""

import difflib
import json
import math
from dataclasses import dataclass
from functools import cache
from typing import Any

from omegaconf import DictConfig, OmegaConf

from verl_qwen35.checks.problem import Problem, error, warning
from verl_qwen35.checks.verl_target import verl_in_use
from verl_qwen35.data import UPSTREAM_DIR
from verl_qwen35.installed import ASSUMED_VLLM, installed_vllm

ROLLOUT = "actor_rollout_ref.rollout"
ENGINE = f"{ROLLOUT}.engine_kwargs.vllm"
# vllm/sampling_params.py SamplingParams._verify_args: "temperature must be in [0, 2]" (and finite) is in
# vLLM 0.24.0 and not in 0.18.0 (which only refuses a negative temperature): applied from 0.24 on.
TEMPERATURE_AT_MOST_2 = (0, 24)
# vllm/model_executor/model_loader/__init__.py `LoadFormats`: the loaders vLLM ships (0.18 and 0.24; later releases
# add hf, instanttensor and modelexpress, earlier ones had gguf). verl hands `rollout.load_format` to the engine as is
# (verl/workers/rollout/vllm_rollout/vllm_async_server.py:327; 0.8.0 :255); `get_model_loader` refuses any other
# name unless a plugin registered it (`register_model_loader`), when the rollout server starts.
VLLM_LOAD_FORMATS = (
    "auto",
    "bitsandbytes",
    "dummy",
    "fastsafetensors",
    "gguf",
    "hf",
    "instanttensor",
    "mistral",
    "modelexpress",
    "npcache",
    "pt",
    "runai_streamer",
    "runai_streamer_sharded",
    "safetensors",
    "sharded_state",
    "tensorizer",
)


@dataclass(frozen=True)
class VllmInUse:
    """The vLLM whose rules apply: the installed one, or the device's assumed one (installed.ASSUMED_VLLM)."""

    release: tuple[int, ...]
    installed: bool

    @property
    def shown(self) -> str:
        version = ".".join(map(str, self.release))
        return f"{version} (installed)" if self.installed else f"{version} (assumed: not installed here)"

    @property
    def minor(self) -> tuple[int, int]:
        return (self.release + (0, 0))[:2]


def vllm_in_use(device: str) -> VllmInUse:
    found = installed_vllm()
    return VllmInUse(found, True) if found else VllmInUse(ASSUMED_VLLM[device], False)


def verl_minor(cfg: DictConfig | None = None) -> tuple[int, int]:
    """The verl release whose engine arguments apply: `plan.verl`, else the installed one."""
    return verl_in_use(cfg).minor


def shipped_snapshots() -> dict[tuple[int, int], str]:
    """(major, minor) -> file name of each shipped serve-argument list."""
    found = {}
    for path in UPSTREAM_DIR.glob("vllm_*.json"):
        major, minor = path.stem.removeprefix("vllm_").split(".")[:2]
        found[(int(major), int(minor))] = path.name
    return found


@cache
def serve_args(minor: tuple[int, int]) -> frozenset[str] | None:
    """What `vllm serve` accepts at this vLLM release (None: no list shipped for it)."""
    name = shipped_snapshots().get(minor)
    return frozenset(json.loads((UPSTREAM_DIR / name).read_text())["serve_args"]) if name else None


def validates(cfg: DictConfig) -> bool:
    """verl's trainer validates before training (val_before_train) or every test_freq steps (ray_trainer.py fit)."""
    trainer, freq = cfg.trainer, cfg.trainer.get("test_freq", -1)
    return bool(trainer.get("val_before_train", True)) or (_number(freq) and freq > 0)


def sampling_requests(cfg: DictConfig) -> list[tuple[str, dict[str, tuple[Any, str]]]]:
    """(label, {SamplingParams field: (value, user key)}) for each kind of request verl sends."""
    rollout = cfg.actor_rollout_ref.rollout
    names = ("temperature", "top_p", "top_k")
    requests = [("training", {n: (rollout.get(n), f"{ROLLOUT}.{n}") for n in names})]
    val = rollout.get("val_kwargs")
    if val is not None and validates(cfg):
        requests.append(("validation", {n: (val.get(n), f"{ROLLOUT}.val_kwargs.{n}") for n in names}))
    return requests


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def sampling_problems(cfg: DictConfig, vllm: VllmInUse) -> list[Problem]:
    """vllm/sampling_params.py SamplingParams._verify_args (0.18.0, 0.24.0) on verl's requests."""
    found = []
    for label, params in sampling_requests(cfg):
        value, key = params["temperature"]
        capped = vllm.minor >= TEMPERATURE_AT_MOST_2
        if _number(value) and (value < 0 or (capped and not (math.isfinite(value) and value <= 2))):
            bound = "[0, 2]" if capped else "[0, inf)"
            found.append(error(key, f"={value}: vLLM {vllm.shown} takes a {label} temperature in {bound}"))
        value, key = params["top_p"]
        if _number(value) and not 0 < value <= 1:
            found.append(error(key, f"={value}: vLLM {vllm.shown} takes a {label} top_p in (0, 1]"))
        value, key = params["top_k"]
        if _number(value) and (value < -1 or not isinstance(value, int)):
            found.append(
                error(key, f"={value}: vLLM {vllm.shown} takes a whole {label} top_k of -1 or 0 (all) or >= 1")
            )
    penalty = cfg.actor_rollout_ref.rollout.get("repetition_penalty", 1.0)
    if _number(penalty) and penalty != 1.0:
        # agent_loop.py sends repetition_penalty=1.0 with every request; the server's setdefault never fires.
        found.append(
            warning(
                f"{ROLLOUT}.repetition_penalty",
                f"={penalty} does not reach vLLM: verl's agent loop sends repetition_penalty=1.0 with every request",
            )
        )
    return found


def engine_arguments(cfg: DictConfig, verl: tuple[int, int]) -> dict[str, tuple[Any, str]]:
    """The `vllm serve` arguments verl builds (vllm_async_server.py launch_server), {name: (value, user key)},
    for the names the rules read, with engine_kwargs.vllm after them as verl passes them."""
    rollout = cfg.actor_rollout_ref.rollout
    ceiling = cfg.model.get("max_position_embeddings")
    max_len = rollout.get("max_model_len")
    length = (max_len if max_len is not None else ceiling, f"{ROLLOUT}.max_model_len")  # unset: the checkpoint's
    chunked = rollout.get("enable_chunked_prefill", True)
    tokens = rollout.get("max_num_batched_tokens", 8192)
    if verl >= (0, 9) and not chunked and _number(tokens) and _number(length[0]) and tokens < length[0]:
        tokens = length[0]  # verl 0.9.1 _validate_configs raises it to max_model_len (0.8.0 does not)
    args = {
        "max_model_len": length,
        "max_num_seqs": (rollout.get("max_num_seqs", 1024), f"{ROLLOUT}.max_num_seqs"),
        "enable_chunked_prefill": (chunked, f"{ROLLOUT}.enable_chunked_prefill"),
        "max_num_batched_tokens": (tokens, f"{ROLLOUT}.max_num_batched_tokens"),
        "gpu_memory_utilization": (rollout.get("gpu_memory_utilization"), f"{ROLLOUT}.gpu_memory_utilization"),
    }
    captures = rollout.get("cudagraph_capture_sizes")
    if verl < (0, 9) and captures:  # verl 0.8.0 launch_server: engine_kwargs["cuda_graph_sizes"] = ...
        args["cuda_graph_sizes"] = (captures, f"{ROLLOUT}.cudagraph_capture_sizes")
    engine = OmegaConf.select(cfg, ENGINE, default=None)
    for name, value in (OmegaConf.to_container(engine, resolve=True) if engine else {}).items():
        if value is not None:  # launch_server drops None values
            args[name] = (value, f"{ENGINE}.{name}")
    return args


def known_argument(name: str, known: frozenset[str]) -> bool:
    """`vllm serve` takes a name in either spelling, or a unique prefix of one (argparse's allow_abbrev)."""
    name = name.replace("-", "_")
    return name in known or len([k for k in known if k.startswith(name)]) == 1


def engine_problems(cfg: DictConfig, vllm: VllmInUse, verl: tuple[int, int]) -> list[Problem]:
    found = []
    args = engine_arguments(cfg, verl)
    known = serve_args(vllm.minor)
    passed = {n: vk for n, vk in args.items() if vk[0] is not False and vk[0] != []}  # build_cli_args drops these
    if known is None and any(key.startswith(ENGINE) for _, key in passed.values()):
        found.append(
            warning(
                ENGINE,
                f"no list of vLLM {vllm.shown}'s serve arguments ships with verl_qwen35 (shipped: "
                f"{sorted(shipped_snapshots())}); engine_kwargs names are checked by dry_run=full only",
            )
        )
    for name, (_, key) in passed.items() if known else ():
        if not known_argument(name, known):
            close = difflib.get_close_matches(name, known, n=1)
            hint = f"; did you mean {close[0]}?" if close else ""
            instead = (
                "; use engine_kwargs.vllm.compilation_config.cudagraph_capture_sizes"
                if name == "cuda_graph_sizes"
                else ""
            )
            found.append(
                error(
                    key,
                    f"verl passes it to `vllm serve` as --{name}, which vLLM {vllm.shown} does not have "
                    f"(its serve parser stops the rollout server){hint}{instead}",
                )
            )
    value, key = args["gpu_memory_utilization"]
    if key.startswith(ENGINE) and (not _number(value) or not 0 < value <= 1):
        # vllm/config/cache.py CacheConfig.gpu_memory_utilization: Field(gt=0, le=1) (0.18.0, 0.24.0)
        found.append(error(key, f"={value!r}: vLLM {vllm.shown} takes a fraction in (0, 1]"))
    seqs, seqs_key = args["max_num_seqs"]
    tokens, tokens_key = args["max_num_batched_tokens"]
    for value, key in ((seqs, seqs_key), (tokens, tokens_key)):
        if _number(value) and value < 1:  # vllm/config/scheduler.py SchedulerConfig: Field(ge=1)
            found.append(error(key, f"={value}: vLLM {vllm.shown} needs at least 1"))
    if not (isinstance(seqs, int) and isinstance(tokens, int)) or seqs < 1 or tokens < 1:
        return found
    # vllm/config/scheduler.py SchedulerConfig.verify_max_model_len (0.18.0, 0.24.0)
    if tokens < seqs:
        found.append(
            error(
                (tokens_key, seqs_key),
                f"max_num_batched_tokens={tokens} is below max_num_seqs={seqs}: vLLM {vllm.shown} refuses it; "
                f"raise {tokens_key} to at least {seqs} or lower {seqs_key}",
            )
        )
    length, length_key = args["max_model_len"]
    chunked, chunked_key = args["enable_chunked_prefill"]
    if chunked is False and isinstance(length, int) and tokens < length:
        raised = " (verl 0.9 raises rollout.max_num_batched_tokens to rollout.max_model_len, not this one)"
        found.append(
            error(
                (tokens_key, chunked_key, length_key),
                f"max_num_batched_tokens={tokens} is below max_model_len={length} with chunked prefill off: "
                f"vLLM {vllm.shown} refuses it{raised if verl >= (0, 9) and tokens_key.startswith(ENGINE) else ''}; "
                f"raise {tokens_key} to at least {length} or enable chunked prefill",
            )
        )
    return found


def load_format_problems(cfg: DictConfig) -> list[Problem]:
    value = OmegaConf.select(cfg, f"{ROLLOUT}.load_format", default="dummy")
    if value in VLLM_LOAD_FORMATS:
        return []
    close = difflib.get_close_matches(str(value), VLLM_LOAD_FORMATS, n=1)
    return [
        warning(
            f"{ROLLOUT}.load_format",
            f"={value!r} is not a load format vLLM ships (vllm/model_executor/model_loader/__init__.py LoadFormats: "
            f"{', '.join(VLLM_LOAD_FORMATS)}); verl hands it to the engine as is (vllm_async_server.py:327) and "
            "vLLM refuses it when the rollout server starts unless a plugin registers that name"
            + (f"; did you mean {close[0]}?" if close else "; verl's rollout uses dummy (weights come from the actor)"),
        )
    ]


def vllm_problems(cfg: DictConfig, device: str) -> list[Problem]:
    """The sampling and engine rules of the vLLM in use, for a vLLM rollout."""
    if cfg.actor_rollout_ref.rollout.get("name") != "vllm":
        return []
    vllm = vllm_in_use(device)
    return sampling_problems(cfg, vllm) + engine_problems(cfg, vllm, verl_minor(cfg)) + load_format_problems(cfg)
