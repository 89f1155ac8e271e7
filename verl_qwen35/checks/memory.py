"""Will it fit? The memory estimate (verl_qwen35/model/memory.py) against the device and host capacities.

An error when a phase needs more than the device (or the node's host memory) has, a warning
above 90%; each names what to change. The estimate is arithmetic on the resolved config: it
runs in `dry_run=true` too.
"""

from __future__ import annotations

from typing import Any

from omegaconf import DictConfig

from verl_qwen35.checks.layout import KEYS, positive_problems
from verl_qwen35.checks.problem import Problem, error, warning
from verl_qwen35.model import memory as memory_model
from verl_qwen35.model.layout import Layout

WARN_FRACTION = 0.9
ROLLOUT = "actor_rollout_ref.rollout"
UTIL = f"{ROLLOUT}.gpu_memory_utilization"
OPTIM = "actor_rollout_ref.actor.optim.override_optimizer_config"
DEVICE_CAP = "hardware.device_memory_gib"
HOST_CAP = "hardware.host_memory_gib"


def applies(cfg: DictConfig) -> bool:
    """Configs of this package have capacities and model facts; a plain verl config or an older launch.yaml not."""
    return "hardware" in cfg and "num_layers" in (cfg.get("model") or {})


def input_problems(cfg: DictConfig) -> list[Problem]:
    """A value the estimate reads that it cannot use (null, a string, zero, out of range), named by key."""
    if not applies(cfg):
        return []
    try:
        memory_model.read_inputs(cfg)
    except memory_model.InputError as err:
        return [error(err.key, str(err))]
    return []


def estimable(cfg: DictConfig) -> bool:
    """The estimate needs usable inputs and a layout whose DP, expert-DP and rollout groups are whole."""
    return applies(cfg) and not input_problems(cfg) and splits_evenly(cfg, Layout.of(cfg))


def splits_evenly(cfg: DictConfig, lo: Layout) -> bool:
    """A layout whose sizes are positive and whose DP, expert-DP and rollout groups are whole."""
    if positive_problems(lo) or not (lo.vpp is None or (isinstance(lo.vpp, int) and lo.vpp > 0)):
        return False
    return (
        lo.world % (lo.tp * lo.pp * lo.cp) == 0
        and lo.world % (lo.etp * lo.ep * lo.pp) == 0
        and cfg.model.num_experts % lo.ep == 0
        and lo.world % lo.gen_tp == 0
    )


def estimate_of(cfg: DictConfig) -> memory_model.MemoryEstimate | None:
    return memory_model.estimate(cfg) if estimable(cfg) else None


def _percent(used: float, capacity: float) -> str:
    return f"{used:.1f} GiB of {capacity:g} GiB ({100 * used / capacity:.0f}%)"


def _training_advice(e: memory_model.MemoryEstimate) -> str:
    parts = e.train_breakdown
    advice = ["more model parallelism: parallel.ep (routed experts), parallel.pp (layers), parallel.tp, or more nodes"]
    if parts["optimizer"] > 0:
        advice.append(f"offload the optimizer ({OPTIM}.optimizer_cpu_offload=true, optimizer_offload_fraction=1)")
    if parts["activations"] + parts["logits"] > 0.2 * e.train_gib:
        advice.append(
            "shorter sequences (data.max_prompt_length / data.max_response_length) or a smaller "
            "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu"
        )
    if e.log_prob_gib >= e.update_gib:
        passes = e.log_prob_breakdown
        which = "old-policy" if passes["old_log_prob"] >= passes["ref_log_prob"] else "reference"
        advice.insert(  # first: the pass's logits grow with its micro-batch, which no parallelism splits
            0,
            f"the {which} log-prob pass is the peak ({e.log_prob_gib:.1f} GiB, logits "
            f"{passes['old_log_prob_logits']:.1f}): lower actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu "
            "(and the ref's)",
        )
    if parts["reference"] > 0:
        advice.append("megatron.param_offload=true (the reference model stays on the device otherwise)")
    return "; ".join(advice)


def _peak_keys(e: memory_model.MemoryEstimate) -> tuple[str, ...]:
    """The keys that move the training peak: the log-prob pass's micro-batch where that pass is the peak (its
    logits grow with it), else the model parallelism that splits the weights and optimizer states."""
    if e.log_prob_gib >= e.update_gib:
        passes = e.log_prob_breakdown
        side = ROLLOUT if passes["old_log_prob"] >= passes["ref_log_prob"] else "actor_rollout_ref.ref"
        return (f"{side}.log_prob_micro_batch_size_per_gpu", DEVICE_CAP)
    return (KEYS["ep"], KEYS["pp"], DEVICE_CAP)


def memory_problems(
    cfg: DictConfig, estimate: memory_model.MemoryEstimate | None = None, layout: Layout | None = None
) -> list[Problem]:
    """`estimate`: this config's, when the caller has it (a `Run`'s); else computed here. `layout`: the layout
    `estimate` is of when it is not the config's own (a planner candidate's)."""
    if estimate is None and (bad_input := input_problems(cfg)):
        return bad_input
    e = estimate or estimate_of(cfg)
    if e is None:
        return []
    cap, found = e.device_memory_gib, []
    where = f"per device ({DEVICE_CAP}={cap:g})"
    t, lp = e.train_breakdown, e.log_prob_breakdown
    hccl = f", HCCL buffers {t['hccl_buffers']:.1f}" if t["hccl_buffers"] else ""
    train_detail = (
        f"pipeline stage {e.train_stage}: weights {t['weights']:.1f}, gradients {t['gradients']:.1f}, "
        f"optimizer {t['optimizer']:.1f}, activations {t['activations']:.1f}, logits {t['logits']:.1f}, "
        f"reference {t['reference']:.1f}, reserved {t['reserved']:.1f}{hccl} GiB; forward-only log-prob pass "
        f"{t['log_prob_pass']:.1f} GiB (old policy {lp['old_log_prob']:.1f} with logits {lp['old_log_prob_logits']:.1f}"
        f", reference {lp['ref_log_prob']:.1f})"
    )
    if e.train_gib > cap:
        found.append(
            error(
                _peak_keys(e),
                f"training needs {_percent(e.train_gib, cap)} {where} ({train_detail}); {_training_advice(e)}",
            )
        )
    elif e.train_gib > WARN_FRACTION * cap:
        found.append(
            warning(
                _peak_keys(e),
                f"training needs {_percent(e.train_gib, cap)} {where}, little headroom ({train_detail}); to gain "
                f"some: {_training_advice(e)}",
            )
        )
    r = e.rollout_breakdown
    util = cfg.actor_rollout_ref.rollout.gpu_memory_utilization
    fixed = r["actor_residue"] + r["reserved"] + r["hccl_buffers"]
    if e.rollout_gib > cap:
        highest = max(0.0, (cap - fixed) / cap)
        offload = "" if r["actor_residue"] == 0 else " or megatron.param_offload/optimizer_offload=true"
        hccl = f" and {r['hccl_buffers']:.1f} GiB of HCCL buffers (env.set.HCCL_BUFFSIZE)" if r["hccl_buffers"] else ""
        found.append(
            error(
                (UTIL, "megatron.param_offload"),
                f"rollout needs {_percent(e.rollout_gib, cap)} {where}: vLLM takes {UTIL}={util} of the device "
                f"({r['vllm_budget']:.1f} GiB) beside {r['actor_residue']:.1f} GiB the actor keeps and "
                f"{r['reserved']:.1f} GiB reserved{hccl}; set {UTIL} to at most {highest:.2f}{offload}",
            )
        )
    elif e.rollout_gib > WARN_FRACTION * cap:
        found.append(warning(UTIL, f"rollout needs {_percent(e.rollout_gib, cap)} {where}, little headroom"))
    needed = r["vllm_weights"] + r["vllm_workspace"]
    if e.sequences_fit < 1:
        held = "does not even hold" if needed >= r["vllm_budget"] else "holds"
        found.append(
            error(
                (UTIL, KEYS["gen_tp"], "data.max_response_length"),
                f"vLLM's budget {r['vllm_budget']:.1f} GiB ({UTIL}={util} x {cap:g}) {held} its weights and "
                f"workspace ({needed:.1f} GiB at gen_tp={(layout or Layout.of(cfg)).gen_tp}) and has no room for one "
                f"full-length sequence ({r['kv_per_token_kib']:.1f} KiB KV per token, "
                f"{r['gdn_state_per_sequence_mib']:.1f} MiB Gated DeltaNet state); raise {UTIL}, raise "
                "parallel.gen_tp (or the rollout expert_parallel_size), or shorten data.max_prompt_length / "
                "data.max_response_length",
            )
        )
    elif not e.startup_fits:  # vllm/v1/core/kv_cache_utils.py check_enough_kv_cache_memory
        found.append(
            error(
                (UTIL, f"{ROLLOUT}.max_model_len", KEYS["gen_tp"]),
                f"vLLM would refuse to start: its cache ({r['kv_and_state_cache']:.1f} GiB) holds "
                f"{e.sequences_fit} sequence(s) of the rollout's length but not one of max_model_len="
                f"{e.startup_length} tokens, which vLLM's start-up check needs; raise {UTIL}, lower "
                f"{ROLLOUT}.max_model_len (or engine_kwargs.vllm.max_model_len), or raise parallel.gen_tp",
            )
        )
    host = e.host_memory_gib
    h = e.host_breakdown
    host_detail = (
        f"offloaded weights and optimizer states {h['training_offload']:.1f} GiB, sleeping vLLM weights "
        f"{h['vllm_sleeping_weights']:.1f} GiB"
    )
    if e.host_per_node_gib > host:
        found.append(
            error(
                (HOST_CAP, "megatron.optimizer_offload", KEYS["nnodes"]),
                f"host memory per node: needs {_percent(e.host_per_node_gib, host)} ({host_detail}); "
                f"use more nodes (parallel.nnodes), offload less (megatron.optimizer_offload, "
                f"{OPTIM}.optimizer_offload_fraction) if the devices have room, or set {HOST_CAP} to the real size",
            )
        )
    elif e.host_per_node_gib > WARN_FRACTION * host:
        found.append(
            warning(HOST_CAP, f"host memory per node: needs {_percent(e.host_per_node_gib, host)}, little headroom")
        )
    return found


def memory_lines(
    cfg: DictConfig,
    estimate: memory_model.MemoryEstimate | None = None,
    layout: Layout | None = None,
    settings: memory_model.Settings | None = None,
) -> list[str]:
    """A few plan lines: parameters, the two device phases, host memory (`estimate`, `layout`, `settings`: the
    config's, when the caller has them: a `Run`'s)."""
    e = estimate or estimate_of(cfg)
    if e is None:
        if not applies(cfg):
            why = "this config has no hardware.* capacities or model.num_layers"
        else:
            why = "; ".join(str(p) for p in input_problems(cfg)) or "the parallel.* layout does not split evenly"
        return [f"memory     (no estimate: {why})"]
    t, r, lp = e.train_breakdown, e.rollout_breakdown, e.log_prob_breakdown
    s = cfg.data.max_prompt_length + cfg.data.max_response_length
    settings, layout = settings or memory_model.Settings.of(cfg), layout or Layout.of(cfg)
    why = memory_model.zero_reasons(settings, e.train_stage == layout.pp - 1)
    fixed = [("reserve", t["reserved"], None), ("HCCL buffers", t["hccl_buffers"], "hccl_buffers")]
    update = e.update_gib - t["reserved"] - t["hccl_buffers"]
    log_prob = e.log_prob_gib - t["reserved"] - t["hccl_buffers"]
    if e.update_gib >= e.log_prob_gib:
        phase = f"the update on pipeline stage {e.train_stage}"
        parts = [(name, t[key], key) for name, key in TRAIN_PARTS]
        other = f"log-prob pass {log_prob:.1f} (below the update's {update:.1f})"
    else:
        side = "old_log_prob" if lp["old_log_prob"] >= lp["ref_log_prob"] else "ref_log_prob"
        which = "old-policy" if side == "old_log_prob" else "reference"
        phase = f"the {which} log-prob pass on pipeline stage {e.train_stage}"
        parts = [
            ("resident", lp["resident"], "resident"),
            ("loaded weights", lp["loaded_weights"], "loaded_weights"),
            ("activations", lp[f"{side}_activations"], None),
            ("logits", lp[f"{side}_logits"], "log_prob_logits"),
        ]
        other = f"update {update:.1f} (below the pass's {log_prob:.1f})"
    rollout_parts = [
        ("actor residue", r["actor_residue"], "actor_residue"),
        ("reserve", r["reserved"], None),
        ("HCCL buffers", r["hccl_buffers"], "hccl_buffers"),
    ]
    util = cfg.actor_rollout_ref.rollout.gpu_memory_utilization
    vllm = (
        f"vLLM {r['vllm_budget']:.1f} (gpu_memory_utilization={util}: "
        f"weights {r['vllm_weights']:.1f}, workspace {r['vllm_workspace']:.1f}, cache {r['kv_and_state_cache']:.1f} = "
        f"{e.sequences_fit} sequences of {s} tokens, {e.sequences_wanted} wanted at once)"
    )
    return [
        f"params     {e.params_total / 1e9:.1f}B total, {e.params_active / 1e9:.2f}B active; "
        f"{e.params_per_rank / 1e9:.2f}B per training rank, {e.rollout_params_per_rank / 1e9:.2f}B per rollout rank"
        + (f"; vision tower {e.vision_params / 1e9:.2f}B" if e.vision_params else ""),
        f"memory     train {_percent(e.train_gib, e.device_memory_gib)} per device, at {phase} = "
        f"{_sum(parts + fixed, why)}; {other}",
        f"           rollout {_percent(e.rollout_gib, e.device_memory_gib)} = {vllm} + {_sum(rollout_parts, why)}",
        f"host       {_percent(e.host_per_node_gib, e.host_memory_gib)} per node; fits: {'yes' if e.fits else 'NO'}",
    ]


# The update's parts, as the plan names them, and their train_breakdown keys.
TRAIN_PARTS = (
    ("weights", "weights"),
    ("grads", "gradients"),
    ("optimizer", "optimizer"),
    ("activations", "activations"),
    ("logits", "logits"),
    ("reference", "reference"),
)


def _sum(parts: list[tuple[str, float, str | None]], why: dict[str, str]) -> str:
    """'a 1.0 + b 0.0 (why it is 0) + ...' in GiB: every part of a total, a zero one with its reason.
    HCCL buffers are left out on GPU, where the reserve holds NCCL's."""
    shown = []
    for name, gib, key in parts:
        if key == "hccl_buffers" and gib == 0:
            continue
        reason = why.get(key or "") if round(gib, 1) == 0 else None
        shown.append(f"{name} {gib:.1f}" + (f" ({reason})" if reason else ""))
    return " + ".join(shown) + " GiB"


def memory_numbers(cfg: DictConfig, estimate: memory_model.MemoryEstimate | None = None) -> dict[str, Any] | None:
    """The sweep summary's memory columns, as numbers: peak GiB per device of the update and the rollout, the
    capacity, and whether it fits (`estimate`: the config's, if known); None without an estimate."""
    e = estimate or estimate_of(cfg)
    if e is None:
        return None
    return {
        "train_gib": round(e.train_gib, 2),
        "rollout_gib": round(e.rollout_gib, 2),
        "device_gib": e.device_memory_gib,
        "host_gib": round(e.host_per_node_gib, 2),
        "fits": e.fits,
    }


def headroom_warnings(cfg: DictConfig, estimate: memory_model.MemoryEstimate | None = None) -> list[Problem]:
    """The "little headroom" warnings of `memory_problems` (a phase above WARN_FRACTION of its capacity): the dry
    run's own text, for the sweep summary and the plan's rows."""
    return [p for p in memory_problems(cfg, estimate) if p.level == "warning"]
