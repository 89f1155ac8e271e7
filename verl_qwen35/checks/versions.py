"""Which versions the version- and backend-dependent rules followed, for the line printed with the verdict."""

from verl_qwen35.checks.megatron_keys import mcore_in_use
from verl_qwen35.checks.vllm import vllm_in_use
from verl_qwen35.installed import installed_verl_version

BACKENDS = {"gpu": "stock, GPU", "npu": "with MindSpeed, NPU"}


def rules_line(device: str, planned_mcore: tuple[int, int] | None = None) -> str:
    """`rules      verl 0.9.1, megatron-core 0.16 (installed; stock, GPU), vLLM 0.24.0 (assumed: ...)`;
    `planned_mcore`: the release `plan.megatron_core` named, which the rules then followed."""
    _, mcore = mcore_in_use(planned_mcore)
    mcore = (
        mcore.replace("(installed)", f"(installed; {BACKENDS[device]})")
        .replace("(assumed:", f"({BACKENDS[device]}; assumed:")
        .replace("(plan.megatron_core)", f"(plan.megatron_core; {BACKENDS[device]})")
    )
    return f"rules      verl {installed_verl_version()}, megatron-core {mcore}, vLLM {vllm_in_use(device).shown}"
