"""Number formats and kernels the planned machine (`hardware.*`, conf/hardware/NAME.yaml) does not have.

The chip is read from `hardware.name`; a machine whose chip is not in the tables below is not judged here.
Facts, each with its source:
- Ascend 910B (Atlas A2) and 910C (Atlas A3) have no FP8 (or FP4) arithmetic: Huawei's model-zoo page for
  DeepSeek-V3 on Ascend, quoted in deepseek-ai/DeepSeek-V3 PR #903 ("Huawei Ascend NPU support both INT8 and
  BF16 modes, but FP8 is not supported"); vllm-project/vllm-ascend issue #8102 (maintainer: "FP8 is not
  support in A3"; `kv_cache_dtype=fp8` crashes on a 910B2). Ascend's quantised rollout is vllm-ascend's own
  "ascend" method (W8A8; `@register_quantization_config(ASCEND_QUANTIZATION_METHOD)` in
  vllm_ascend/quantization), which verl 0.9.1 passes through (`vllm_async_server.py` 1239
  `_SUPPORTED_QUANTIZATION = ["fp8", "torchao", "ascend"]`) and stock vLLM on GPU does not register.
- megatron-core's flex token dispatcher is DeepEP or HybridEP (megatron/core/transformer/moe/fused_a2a.py:
  `from deep_ep import Buffer`, `from deep_ep import HybridEPBuffer`; token_dispatcher.py raises "DeepEP is
  not installed" / "HybridEP is not installed"); DeepEP runs on NVIDIA GPUs over NVLink and NVSHMEM
  (deepseek-ai/DeepEP README, Requirements) and has no Ascend build: on NPU, MindSpeed's dispatchers are
  alltoall and allgather (the NPU presets use alltoall).
- TransformerEngine's recipes by compute capability (transformer_engine/pytorch/quantization.py,
  `_compute_fp8_support`, `_compute_mxfp8_support`, `_compute_nvfp4_support`,
  `_compute_fp8_block_scaling_support`, enforced by `check_recipe_support` at the first FP8 forward):
  FP8 delayed/tensorwise >= 8.9, blockwise >= 9.0 (with CUDA >= 12.9), MXFP8 and NVFP4 >= 10.0;
  megatron-core's default `fp8_recipe` is "delayed" (transformer_config.py 436).
- Compute capability by chip: NVIDIA's CUDA GPUs table (developer.nvidia.com/cuda-gpus): A100/A800 8.0,
  L40S 8.9, H100/H800/H200/H20 9.0, B200/GB200 10.0.
"""

import re

from omegaconf import DictConfig, OmegaConf

from verl_qwen35.checks.problem import Problem, error
from verl_qwen35.model.layout import device_of

OTC = "megatron.override_transformer_config"
ROLLOUT = "actor_rollout_ref.rollout"
NO_FP8_NPUS = ("910B", "910C")
COMPUTE_CAPABILITY = {
    "A100": (8, 0),
    "A800": (8, 0),
    "L40S": (8, 9),
    "H100": (9, 0),
    "H800": (9, 0),
    "H200": (9, 0),
    "H20": (9, 0),
    "B200": (10, 0),
    "GB200": (10, 0),
}
# fp8_recipe -> the compute capability TransformerEngine needs for it (quantization.py).
FP8_RECIPE_NEEDS = {"delayed": (8, 9), "tensorwise": (8, 9), "blockwise": (9, 0), "mxfp8": (10, 0)}
NVFP4_NEEDS = (10, 0)


def chip(name: object, chips: tuple[str, ...] | dict) -> str | None:
    """The first chip of `chips` named as a whole word in `hardware.name` ("H20" is not "H200")."""
    text = str(name or "")
    return next((c for c in chips if re.search(rf"(?<![A-Za-z0-9]){c}(?![A-Za-z0-9])", text)), None)


def _shown(cc: tuple[int, int]) -> str:
    return f"{cc[0]}.{cc[1]}"


def npu_problems(cfg: DictConfig, name: str) -> list[Problem]:
    found = []
    otc = OmegaConf.select(cfg, OTC, default=None) or {}
    dispatcher = otc.get("moe_token_dispatcher_type")
    if dispatcher == "flex" or otc.get("moe_enable_deepep"):
        key = f"{OTC}.moe_token_dispatcher_type" if dispatcher == "flex" else f"{OTC}.moe_enable_deepep"
        found.append(
            error(
                key,
                f"asks for megatron-core's flex dispatcher (DeepEP / HybridEP, fused_a2a.py), NVIDIA GPU libraries "
                f"over NVLink and NVSHMEM with no Ascend build; on {name} use {OTC}.moe_token_dispatcher_type="
                "alltoall (MindSpeed's; the NPU presets') and drop moe_enable_deepep",
            )
        )
    npu = chip(name, NO_FP8_NPUS)
    if npu is None:
        return found
    why = f"the Ascend {npu} of {name} has no FP8 or FP4 arithmetic (BF16, FP16 and INT8 only)"
    for field in ("fp8", "fp4"):
        if otc.get(field) is not None:
            found.append(error(f"{OTC}.{field}", f"={otc.get(field)!r}: {why}; drop it (train in bf16)"))
    quantization = OmegaConf.select(cfg, f"{ROLLOUT}.quantization", default=None)
    if quantization == "fp8":
        found.append(
            error(
                f"{ROLLOUT}.quantization",
                f"=fp8: {why}; use {ROLLOUT}.quantization=ascend (vllm-ascend's W8A8, with a quantised checkpoint) "
                "or null",
            )
        )
    cache = OmegaConf.select(cfg, f"{ROLLOUT}.engine_kwargs.vllm.kv_cache_dtype", default=None)
    if isinstance(cache, str) and cache.startswith("fp8"):
        found.append(
            error(
                f"{ROLLOUT}.engine_kwargs.vllm.kv_cache_dtype",
                f"={cache}: {why} (vllm-ascend issue #8102: an fp8 KV cache crashes there); use auto",
            )
        )
    return found


def gpu_problems(cfg: DictConfig, name: str) -> list[Problem]:
    found = []
    if OmegaConf.select(cfg, f"{ROLLOUT}.quantization", default=None) == "ascend":
        found.append(
            error(
                f"{ROLLOUT}.quantization",
                f"=ascend is vllm-ascend's quantisation method, which vLLM on {name} does not have; use fp8, "
                "torchao or null",
            )
        )
    gpu = chip(name, COMPUTE_CAPABILITY)
    if gpu is None:
        return found
    cc = COMPUTE_CAPABILITY[gpu]
    otc = OmegaConf.select(cfg, OTC, default=None) or {}
    if otc.get("fp8") is not None:
        recipe = otc.get("fp8_recipe", "delayed")
        needs = FP8_RECIPE_NEEDS.get(recipe)
        if needs is not None and cc < needs:
            fits = [r for r, n in FP8_RECIPE_NEEDS.items() if cc >= n]
            instead = f"fp8_recipe may be one of {fits}" if fits else "drop fp8 (train in bf16)"
            found.append(
                error(
                    (f"{OTC}.fp8_recipe", f"{OTC}.fp8"),
                    f"={recipe}: TransformerEngine runs it from compute capability {_shown(needs)}, and the {gpu} of "
                    f"{name} has {_shown(cc)} (quantization.py check_recipe_support raises at the first FP8 "
                    f"forward); {instead}",
                )
            )
    if otc.get("fp4") is not None and cc < NVFP4_NEEDS:
        found.append(
            error(
                f"{OTC}.fp4",
                f"={otc.get('fp4')!r}: NVFP4 needs compute capability {_shown(NVFP4_NEEDS)} (Blackwell; "
                f"TransformerEngine quantization.py), and the {gpu} of {name} has {_shown(cc)}; drop it",
            )
        )
    return found


def device_feature_problems(cfg: DictConfig) -> list[Problem]:
    hardware = cfg.get("hardware") or {}
    kind = hardware.get("device")
    kind = kind if kind in ("gpu", "npu") else device_of(cfg)
    name = str(hardware.get("name") or kind.upper())
    return npu_problems(cfg, name) if kind == "npu" else gpu_problems(cfg, name)
