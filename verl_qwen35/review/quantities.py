"""The quantities a run report shows, each with the metric names verl 0.8.0 and 0.9.1 really log and where.

The names were read in the installed verl (both versions log the same ones): the trainer's step metrics
(verl/trainer/ppo/metric_utils.py), the actor's update metrics, which the trainer prefixes with `actor/`
(`rename_dict(output, "actor/")` in verl/trainer/ppo/ray_trainer.py `_update_actor` and, verl 0.9.1's default
trainer, verl/trainer/ppo/v1/trainer_base.py), and the entropy the trainer takes from the old-policy log-prob
pass. tests/integration/test_report.py checks each name against the installed verl's source.

Memory: verl logs one peak, not one per phase. verl/workers/engine_workers.py `_postprocess_output` adds
`perf/max_memory_allocated_gb` (torch's `max_memory_allocated() / 1024**3`: GiB) to the metrics of each
training mini-batch (`train_batch`); the log-prob passes (`infer_batch`) compute it too, but the trainer keeps
only their `mfu`. verl never resets the peak in the training path, so it is the actor worker's peak since it
started: the update and the log-prob passes (old policy, reference) of every step so far. vLLM runs in
processes of its own (vllm_async_server.py: `distributed_executor_backend="mp"`), so the rollout's memory is
not in it and verl logs none. It comes from the ranks that return outputs (megatron engine
`is_mp_src_rank_with_outputs`: TP rank 0, CP rank 0, the LAST pipeline stage), and `reduce_metrics` takes the
max of a key whose name holds "max" (verl/utils/metric/utils.py).
"""

import statistics
from dataclasses import dataclass

from verl_qwen35.records.metrics import Metrics

# Paths under the verl package. The actor's metrics get their `actor/` prefix in the trainer (module docstring).
METRIC_UTILS = "trainer/ppo/metric_utils.py"
ENGINE_MEMORY = "workers/engine_workers.py _postprocess_output"


@dataclass(frozen=True)
class Quantity:
    """One row of the report: the first of `keys` the run logged, with the verl code that logs it."""

    name: str
    label: str
    keys: tuple[tuple[str, str], ...]  # (metric name, "<file under verl/> <function>" logging it), preferred first
    headline: str  # the one number a sweep row shows: "last" (a trend), "median" (a rate), "max" (a peak)
    unit: str = ""


QUANTITIES: tuple[Quantity, ...] = (
    Quantity(
        "reward",
        "reward",
        (
            # The reward function's score of each sequence; `rewards` is the score after a KL penalty in the
            # reward (algorithm.use_kl_in_reward), the same without one.
            ("critic/score/mean", f"{METRIC_UTILS} compute_data_metrics"),
            ("critic/rewards/mean", f"{METRIC_UTILS} compute_data_metrics"),
        ),
        "last",
    ),
    Quantity(
        "response_length",
        "response length",
        (("response_length/mean", f"{METRIC_UTILS} compute_data_metrics"),),
        "last",
        "tokens",
    ),
    Quantity(
        "kl",
        "KL",
        (
            # KL to the reference model in the loss (actor.use_kl_loss; kl_loss_type), GRPO's.
            ("actor/kl_loss", "workers/utils/losses.py ppo_loss"),
            # Without a KL loss: the KL between the old and the current policy of the PPO clip.
            ("actor/ppo_kl", "trainer/ppo/core_algos.py compute_policy_loss_vanilla"),
            # The KL penalty in the reward (algorithm.use_kl_in_reward).
            ("actor/reward_kl_penalty", "trainer/ppo/ray_trainer.py apply_kl_penalty"),
        ),
        "last",
    ),
    Quantity(
        "entropy",
        "entropy",
        # The old-policy log-prob pass; the same in v1/trainer_base.py, verl 0.9.1's default trainer.
        (("actor/entropy", "trainer/ppo/ray_trainer.py fit"),),
        "last",
    ),
    Quantity(
        "tokens_per_second",
        "tokens/s per device",
        # total_num_tokens / (time * n_gpus): prompt + response tokens of the step, per device.
        (("perf/throughput", f"{METRIC_UTILS} compute_throughout_metrics"),),
        "median",
    ),
    Quantity(
        "step_time",
        "step time",
        (
            ("timing_s/step", f"{METRIC_UTILS} compute_timing_metrics"),
            ("perf/time_per_step", f"{METRIC_UTILS} compute_throughout_metrics"),
        ),
        "median",
        "s",
    ),
    Quantity(
        "rollout_time",
        "rollout time",
        (("timing_s/gen", f"{METRIC_UTILS} compute_timing_metrics"),),
        "median",
        "s",
    ),
    Quantity(
        "memory_allocated",
        "peak memory allocated",
        (("actor/perf/max_memory_allocated_gb", ENGINE_MEMORY),),
        "max",
        "GiB",
    ),
    Quantity(
        "memory_reserved",
        "peak memory reserved",
        (("actor/perf/max_memory_reserved_gb", ENGINE_MEMORY),),
        "max",
        "GiB",
    ),
    Quantity(
        "host_memory",
        "host memory used",
        # psutil.virtual_memory().used: the whole node's, every process.
        (("actor/perf/cpu_memory_used_gb", ENGINE_MEMORY),),
        "max",
        "GiB",
    ),
)
BY_NAME = {q.name: q for q in QUANTITIES}


@dataclass(frozen=True)
class Measured:
    """One quantity over a run's steps; `median` leaves out the warm-up steps (the first of each start)."""

    quantity: Quantity
    key: str | None = None
    source: str = ""
    points: tuple[tuple[int, float], ...] = ()
    median: float | None = None

    @property
    def first(self) -> float | None:
        return self.points[0][1] if self.points else None

    @property
    def last(self) -> float | None:
        return self.points[-1][1] if self.points else None

    @property
    def low(self) -> float | None:
        return min(v for _, v in self.points) if self.points else None

    @property
    def high(self) -> float | None:
        return max(v for _, v in self.points) if self.points else None

    @property
    def headline(self) -> float | None:
        return {"last": self.last, "median": self.median, "max": self.high}[self.quantity.headline]

    def as_dict(self) -> dict[str, object]:
        return {
            "label": self.quantity.label,
            "key": self.key,
            "source": self.source,
            "unit": self.quantity.unit,
            "steps": len(self.points),
            "first": self.first,
            "last": self.last,
            "median": self.median,
            "min": self.low,
            "max": self.high,
        }


def measure(quantity: Quantity, metrics: Metrics) -> Measured:
    """The first of the quantity's metric names the run logged (nothing logged: an empty `Measured`)."""
    for key, source in quantity.keys:
        if points := metrics.series(key):
            steady = [v for step, v in points if step not in metrics.warm_up] or [v for _, v in points]
            return Measured(quantity, key, source, tuple(points), statistics.median(steady))
    return Measured(quantity)


def measure_all(metrics: Metrics) -> dict[str, Measured]:
    return {q.name: measure(q, metrics) for q in QUANTITIES}
