"""Bytes per logit that verl's own Megatron logits path holds at its peak, measured on CPU.

The memory estimate (verl_qwen35/model/memory.py UPDATE_LOGIT_BYTES, UPDATE_ENTROPY_LOGIT_BYTES,
OLD_LOG_PROB_LOGIT_BYTES, REF_LOG_PROB_LOGIT_BYTES) counts the output layer's logits per token x vocabulary
shard. This script runs the real code on small tensors and reads the allocations from torch.profiler's memory
events (profile_memory=True):

- the output layer's bf16 logits and megatron-core's GPTModel._postprocess `logits.transpose(0, 1).contiguous()`
  (megatron/core/models/gpt/gpt_model.py, labels=None as verl calls it);
- megatron-core's Float16Module.forward upcast of the last stage's output (`float16_to_fp32`,
  megatron/core/transformer/module.py, fp32_output=True as verl leaves it);
- verl 0.9.1's MegatronEngineWithLMHead._lm_head_logits_processor (verl/workers/engine/megatron/transformer_impl.py):
  temperature in place, `logits.clone()` when it computes entropy, vocab_parallel_entropy
  (verl/utils/megatron/tensor_parallel.py _VocabParallelEntropy) and vocab_parallel_log_probs_from_logits
  (megatron-core tensor_parallel.vocab_parallel_cross_entropy).

Four passes, as verl's trainer runs them (verl/trainer/ppo/ray_trainer.py): the old-policy log-probs
(_compute_old_log_prob: calculate_entropy=True, no grad), the reference log-probs (_compute_ref_log_prob:
calculate_entropy=False, no grad) and the update (_update_actor: forward and backward of the loss; with
calculate_entropy only when entropy_coeff != 0 or actor.calculate_entropy). Peak = the highest running sum of
allocations minus frees over the pass, divided by tokens x vocabulary shard. verl 0.8.0 runs the same processor
inline (a closure in MegatronEngineWithLMHead.forward_step), so this measures verl 0.9.1's.
Usage: python scripts/measure_logit_bytes.py [--json]
"""

import argparse
import json
import os
import sys
from types import SimpleNamespace

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile

TOKENS, VOCAB, HIDDEN = 512, 4096, 8  # hidden tiny: weight and hidden-state buffers are negligible next to logits


def _init_single_process() -> None:
    """One gloo rank and megatron-core's groups at TP = PP = 1 (the all-reduces in verl's entropy need them)."""
    from megatron.core import parallel_state

    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", str(29500 + os.getpid() % 1000))
    if not dist.is_initialized():
        dist.init_process_group("gloo", rank=0, world_size=1)
    if not parallel_state.model_parallel_is_initialized():
        parallel_state.initialize_model_parallel()


def _logits_path(hidden: torch.Tensor, weight: torch.Tensor, label: torch.Tensor, entropy: bool) -> dict:
    """Output layer -> GPTModel's [b, s, V] copy -> Float16Module's fp32 upcast -> verl's logits processor."""
    from megatron.core.transformer.module import float16_to_fp32
    from verl.workers.engine.megatron.transformer_impl import MegatronEngineWithLMHead

    logits = F.linear(hidden, weight)  # [s, b, V] bf16, as ColumnParallelLinear returns it
    logits = logits.transpose(0, 1).contiguous()  # gpt_model.py _postprocess, labels is None
    logits = float16_to_fp32(logits)  # module.py Float16Module.forward on the last stage
    engine = SimpleNamespace(engine_config=SimpleNamespace(entropy_from_logits_with_chunking=False))
    temperature = torch.ones(label.shape, dtype=torch.float32)
    return MegatronEngineWithLMHead._lm_head_logits_processor(
        engine,
        logits,
        label,
        temperature,
        calculate_sum_pi_squared=False,
        calculate_entropy=entropy,
        distillation_use_topk=False,
        distillation_only=False,
        logits_processor_func=None,
        batch=None,
        data_format="thd",
    )


def _peak_bytes(run) -> int:
    """The highest running total of CPU allocations minus frees while `run()` executes (profiler memory events)."""
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        run()
    events = sorted((e.start_ns(), e.nbytes()) for e in prof.profiler.kineto_results.events() if e.name() == "[memory]")
    total = peak = 0
    for _, nbytes in events:
        total += nbytes
        peak = max(peak, total)
    return peak


def measure() -> dict[str, float]:
    """Bytes per logit (token x vocabulary shard) at the peak of each pass."""
    _init_single_process()
    torch.manual_seed(0)
    hidden = torch.randn(TOKENS, 1, HIDDEN, dtype=torch.bfloat16)
    weight = torch.randn(VOCAB, HIDDEN, dtype=torch.bfloat16) * 0.1
    label = torch.randint(0, VOCAB, (1, TOKENS))

    def old_log_prob() -> None:
        with torch.no_grad():
            _logits_path(hidden, weight, label, entropy=True)

    def ref_log_prob() -> None:
        with torch.no_grad():
            _logits_path(hidden, weight, label, entropy=False)

    trainable = weight.clone().requires_grad_(True)

    def update() -> None:
        out = _logits_path(hidden, trainable, label, entropy=False)
        out["log_probs"].sum().backward()
        trainable.grad = None

    def update_with_entropy() -> None:  # entropy_coeff != 0 or actor.calculate_entropy: the loss uses entropy too
        out = _logits_path(hidden, trainable, label, entropy=True)
        (out["log_probs"].sum() + out["entropy"].sum()).backward()
        trainable.grad = None

    passes = {
        "old_log_prob": old_log_prob,
        "ref_log_prob": ref_log_prob,
        "update": update,
        "update_with_entropy": update_with_entropy,
    }
    for warm in passes.values():  # torch.compile of verl's mul_reduce happens here, once
        warm()
    logits = TOKENS * VOCAB
    return {name: _peak_bytes(run) / logits for name, run in passes.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print the numbers as JSON")
    args = parser.parse_args(argv)
    found = measure()
    if args.json:
        print(json.dumps(found))
    else:
        print(f"bytes per logit at the peak (tokens={TOKENS}, vocabulary shard={VOCAB}, verl's own path on CPU):")
        for name, value in found.items():
            print(f"  {name:<20}{value:6.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
