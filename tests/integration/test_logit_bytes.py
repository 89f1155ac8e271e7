"""The estimate's bytes per logit are what verl's own logits path holds, measured on CPU.

The script runs megatron-core's Float16Module upcast and verl 0.9.1's MegatronEngineWithLMHead._lm_head_logits_processor
(entropy, clone, vocab-parallel cross entropy) on small tensors and reads torch.profiler's memory events.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from verl_qwen35.model import memory

REPO = Path(__file__).resolve().parents[2]
TOLERANCE = 0.5  # bytes per logit: the profiler also sees a few small tensors (maxima, sums, labels)


def test_the_estimates_bytes_per_logit_match_verls_own_path():
    engine = pytest.importorskip("verl.workers.engine.megatron.transformer_impl")
    if not hasattr(engine.MegatronEngineWithLMHead, "_lm_head_logits_processor"):
        pytest.skip("verl 0.8.0 runs the same processor inline (a closure); the script measures verl 0.9.1's")
    done = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "measure_logit_bytes.py"), "--json"],
        capture_output=True, text=True, timeout=900, cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    measured = json.loads(done.stdout.strip().splitlines()[-1])
    estimate = {
        "old_log_prob": memory.OLD_LOG_PROB_LOGIT_BYTES,
        "ref_log_prob": memory.REF_LOG_PROB_LOGIT_BYTES,
        "update": memory.UPDATE_LOGIT_BYTES,
        "update_with_entropy": memory.UPDATE_ENTROPY_LOGIT_BYTES,
    }
    assert set(measured) == set(estimate)
    for name, counted in estimate.items():
        assert measured[name] == pytest.approx(counted, abs=TOLERANCE), (name, measured)
