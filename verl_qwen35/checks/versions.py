"""Which versions the version- and backend-dependent rules followed, for the line printed with the verdict."""

from verl_qwen35.checks.megatron_keys import mcore_in_use
from verl_qwen35.checks.verl_target import VerlInUse, verl_in_use
from verl_qwen35.checks.vllm import vllm_in_use
from verl_qwen35.installed import installed_verl
from verl_qwen35.verl_release import NEWEST, shown, standing

BACKENDS = {"gpu": "stock, GPU", "npu": "with MindSpeed, NPU"}


def verl_shown(verl: VerlInUse | None = None) -> str:
    """`0.9.1 (installed)`, `0.8.0 (plan.verl)`, or a newer one's `0.10.0.dev0 (installed; newer than 0.9.x:
    the rules of 0.9.x, not verified)`."""
    verl = verl or verl_in_use()
    newer = standing(verl.version).newer if verl.planned else installed_verl().newer
    if not newer:
        return verl.shown
    return verl.shown.replace(")", f"; newer than {shown(NEWEST)}: the rules of {shown(NEWEST)}, not verified)")


def rules_line(device: str, planned_mcore: tuple[int, int] | None = None, verl: VerlInUse | None = None) -> str:
    """`rules      verl 0.9.1 (installed), megatron-core 0.16 (installed; stock, GPU), vLLM 0.24.0 (assumed: ...)`;
    `planned_mcore`: the release `plan.megatron_core` named, which the rules then followed; `verl`: the verl the
    rules followed (`plan.verl`, else the installed one)."""
    _, mcore = mcore_in_use(planned_mcore)
    mcore = (
        mcore.replace("(installed)", f"(installed; {BACKENDS[device]})")
        .replace("(assumed:", f"({BACKENDS[device]}; assumed:")
        .replace("(plan.megatron_core)", f"(plan.megatron_core; {BACKENDS[device]})")
    )
    return f"rules      verl {verl_shown(verl)}, megatron-core {mcore}, vLLM {vllm_in_use(device).shown}"
