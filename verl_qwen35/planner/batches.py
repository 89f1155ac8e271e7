"""Smaller micro-batches for a training layout whose activations do not fit at the configured ones.

A layout's training phase (the update, the old-policy and reference log-prob passes) holds one micro-batch's
activations and logits per pass (`model.memory`). When that phase does not fit at the config's micro-batch
sizes (or dynamic token budgets), the planner halves the size of the pass that is the peak, down to one
sequence (or the smallest budget verl starts with, `checks.startup.token_budget_floor`), skipping sizes the
batch rules refuse (`checks.batches.batch_problems`), until the phase fits: each pass keeps the largest size
on its halving chain that fits. Never a larger size than configured; a layout that fits as configured keeps
the config's sizes.
"""

import dataclasses
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from verl_qwen35.checks.batches import batch_problems
from verl_qwen35.checks.startup import token_budget_floor
from verl_qwen35.model.layout import Layout
from verl_qwen35.model.memory import MemoryEstimate, Settings

ARR = "actor_rollout_ref"


@dataclass(frozen=True)
class Pass:
    """One pass's micro-batch setting: the `Settings` field the estimate reads and verl's key for it."""

    phase: str  # "update", "old", "ref": which part of the estimate's training peak it decides
    field: str
    key: str
    tokens: bool  # a dynamic token budget (else sequences)


PASSES = {
    "update": (
        Pass("update", "micro_batch", f"{ARR}.actor.ppo_micro_batch_size_per_gpu", False),
        Pass("update", "max_token_len", f"{ARR}.actor.ppo_max_token_len_per_gpu", True),
    ),
    "old": (
        Pass("old", "log_prob_micro_batch", f"{ARR}.rollout.log_prob_micro_batch_size_per_gpu", False),
        Pass("old", "log_prob_max_token_len", f"{ARR}.rollout.log_prob_max_token_len_per_gpu", True),
    ),
    "ref": (
        Pass("ref", "ref_log_prob_micro_batch", f"{ARR}.ref.log_prob_micro_batch_size_per_gpu", False),
        Pass("ref", "ref_log_prob_max_token_len", f"{ARR}.ref.log_prob_max_token_len_per_gpu", True),
    ),
}
KEYS = tuple(p.key for pair in PASSES.values() for p in pair)


def in_force(s: Settings, phase: str) -> Pass | None:
    """The setting that sizes this pass's micro-batches: its token budget with dynamic batches, else its
    sequences (None: the pass does not run, i.e. no reference model)."""
    by_sequences, by_tokens = PASSES[phase]
    if getattr(s, by_tokens.field) is not None:
        return by_tokens
    return by_sequences if getattr(s, by_sequences.field) is not None else None


def floor(p: Pass, s: Settings, lo: Layout) -> int:
    return token_budget_floor(s.sequence_length, lo.cp) if p.tokens else 1


def smallest(s: Settings, lo: Layout) -> Settings:
    """Every pass at its smallest size: the least memory, and the fewest tokens per micro-batch."""
    changes = {}
    for phase in PASSES:
        p = in_force(s, phase)
        if p is not None and getattr(s, p.field) > floor(p, s, lo):
            changes[p.field] = floor(p, s, lo)
    return dataclasses.replace(s, **changes) if changes else s


def changed(configured: Settings, s: Settings) -> tuple[tuple[str, int], ...]:
    """verl's keys whose values `s` changes, with their new values, in a fixed order."""
    out = []
    for phase in PASSES:
        p = in_force(configured, phase)
        if p is not None and getattr(s, p.field) != getattr(configured, p.field):
            out.append((p.key, getattr(s, p.field)))
    return tuple(out)


def peak_pass(e: MemoryEstimate) -> str:
    """Which pass decides the training peak (at the fullest stage)."""
    if e.update_gib >= e.log_prob_gib:
        return "update"
    passes = e.log_prob_breakdown
    return "old" if passes["old_log_prob"] >= passes["ref_log_prob"] else "ref"


def _halvings(value: int, low: int) -> Iterator[int]:
    while value > low:
        value = max(low, value // 2)
        yield value


def with_keys(plain: Any, values: dict[str, Any]) -> Any:
    """A shallow copy of a `search.Plain` config with these dotted keys set (only the nodes on their paths copied)."""
    out = type(plain)(plain)
    for key, value in values.items():
        node, *path = out, *key.split(".")
        for name in path[:-1]:
            node[name] = type(node[name])(node[name])
            node = node[name]
        node[path[-1]] = value
    return out


def fitting(
    plain: Any,
    lo: Layout,
    configured: Settings,
    estimate: Callable[[Settings], MemoryEstimate],
    first: MemoryEstimate,
    uses_ref: bool,
) -> tuple[Settings, MemoryEstimate] | None:
    """Settings with smaller micro-batches under which the training phase fits (`first`: the estimate at
    `configured`, which does not fit), with their estimate; None when even the smallest sizes do not fit."""
    cap = first.device_memory_gib
    least = smallest(configured, lo)
    if least is configured or estimate(least).train_gib > cap:
        return None  # nothing to halve, or one sequence (the floor budget) a pass is still too much
    s, e = configured, first
    while e.train_gib > cap:
        p = in_force(s, peak_pass(e))
        if p is None:
            return None
        for value in _halvings(getattr(s, p.field), floor(p, s, lo)):
            trial = dataclasses.replace(s, **{p.field: value})
            refused = not p.tokens and any(
                problem.level == "error" for problem in batch_problems(with_keys(plain, {p.key: value}), lo, uses_ref)
            )
            if not refused:
                s = trial
                break
        else:
            return None  # no smaller size of this pass the batch rules accept
        e = estimate(s)
    return s, e
