"""Rollout (vLLM / SGLang) layout rules for Qwen3.5's heads and the training world."""

from omegaconf import DictConfig

from verl_qwen35.checks.layout import KEYS, heads_fit, tp_choices
from verl_qwen35.checks.problem import Problem, error
from verl_qwen35.model.layout import Layout


def rollout_problems(lo: Layout, arch: DictConfig, engine: str) -> list[Problem]:
    """vLLM's head split (tensor parallel), verl's RolloutConfig (`verl/workers/config/rollout.py`) and replica
    placement (`verl/workers/rollout/replica.py`)."""
    found = []
    replica = lo.gen_tp * lo.gen_dp * lo.gen_pp
    if lo.world % replica:
        found.append(
            error(
                (KEYS["gen_tp"], KEYS["gen_dp"], KEYS["gen_pp"]),
                f"world {lo.world} is not divisible by rollout tp*dp*pp={lo.gen_tp}*{lo.gen_dp}*{lo.gen_pp}"
                f"={replica}; rollout tp may be one of {tp_choices(arch, lo.world)}",
            )
        )
    problems_with_heads = []
    if not heads_fit(lo.gen_tp, arch.num_attention_heads, arch.num_key_value_heads):
        problems_with_heads.append(f"{arch.num_attention_heads} attention heads / {arch.num_key_value_heads} KV heads")
    for name in ("linear_num_key_heads", "linear_num_value_heads"):
        if arch[name] % lo.gen_tp:
            problems_with_heads.append(f"Gated DeltaNet {name}={arch[name]}")
    if problems_with_heads:
        found.append(
            error(
                KEYS["gen_tp"],
                f"rollout tp={lo.gen_tp} does not split {' and '.join(problems_with_heads)}; "
                f"rollout tp may be one of {tp_choices(arch, lo.world)}",
            )
        )
    per_node = min(lo.devices_per_node, replica)
    if replica % per_node:  # verl/workers/rollout/replica.py RolloutReplica.__init__
        found.append(
            error(
                (KEYS["gen_tp"], KEYS["gen_dp"], KEYS["devices_per_node"]),
                f"a rollout replica spans tp*dp*pp={replica} devices, not a whole number of nodes of "
                f"{lo.devices_per_node} (verl places replicas node by node); use a divisor or multiple of "
                f"{lo.devices_per_node}",
            )
        )
    if engine == "vllm" and lo.gen_dp > 1 and per_node % lo.gen_tp:
        # verl 0.8.0 / 0.9.1 vllm_async_server.py vLLMHttpServer.launch_server, with rollout data parallel:
        # "gpus_per_node should be divisible by tensor_model_parallel_size" (the replica's devices on a node).
        found.append(
            error(
                (KEYS["gen_tp"], KEYS["gen_dp"], KEYS["devices_per_node"]),
                f"with rollout dp={lo.gen_dp}, vLLM's data-parallel ranks on a node ({per_node} devices) must each "
                f"hold a whole rollout tp={lo.gen_tp} group; use a rollout tp that divides {per_node}",
            )
        )
    if lo.gen_ep > 1 and lo.gen_ep != lo.gen_tp * lo.gen_dp:
        found.append(
            error(
                (KEYS["gen_ep"], KEYS["gen_tp"], KEYS["gen_dp"]),
                f"rollout expert_parallel_size={lo.gen_ep} must equal rollout tp*dp={lo.gen_tp * lo.gen_dp} (or be 1)",
            )
        )
    if lo.gen_pp > 1 and engine in ("vllm", "sglang"):
        found.append(
            error(
                KEYS["gen_pp"],
                f"{engine} rollout has no pipeline parallelism in verl; set "
                f"actor_rollout_ref.rollout.pipeline_model_parallel_size=1 (now {lo.gen_pp})",
            )
        )
    return found


def rollout_setting_problems(cfg: DictConfig) -> list[Problem]:
    """Rollout settings that fail only after the engines start (or train on nothing)."""
    rollout, found = cfg.actor_rollout_ref.rollout, []
    moe_tp = rollout.get("moe_tensor_parallel_size")
    if isinstance(moe_tp, int) and moe_tp > 1 and rollout.name != "trtllm":
        # verl/workers/config/rollout.py RolloutConfig.__post_init__ (0.8.0, 0.9.1)
        found.append(
            error(
                "actor_rollout_ref.rollout.moe_tensor_parallel_size",
                f"={moe_tp}: verl supports it only for the trtllm rollout, not {rollout.name}; set it to 1",
            )
        )
    if cfg.algorithm.adv_estimator == "grpo" and rollout.n < 2:
        found.append(
            error(
                "actor_rollout_ref.rollout.n",
                f"={rollout.n}: GRPO's baseline is the mean reward of each prompt's group of n samples; with one "
                "sample verl's compute_grpo_outcome_advantage takes mean 0 and std 1, so each response's advantage "
                "is its raw reward (no baseline: REINFORCE, not GRPO); use n >= 2 (the presets use 5 and 6)",
            )
        )
    return found


# A fragment of each known checkpoint's name, by preset (conf/model/*.yaml `hf_id`).
CHECKPOINT_TAGS = {"35b": "35B-A3B", "122b": "122B-A10B", "397b": "397B-A17B"}


def weights_problems(cfg: DictConfig) -> list[Problem]:
    """`model=35b actor_rollout_ref.model.path=Qwen/Qwen3.5-122B-A10B`: the checks (and the layout) would
    judge one model while verl loads another."""
    path = str(cfg.actor_rollout_ref.model.path)
    mine = next((tag for tag in CHECKPOINT_TAGS.values() if tag.lower() in str(cfg.model.hf_id).lower()), None)
    named = [tag for tag in CHECKPOINT_TAGS.values() if tag.lower() in path.lower()]
    if mine is None or not named or mine in named:
        return []
    other = next(preset for preset, tag in CHECKPOINT_TAGS.items() if tag == named[0])
    return [
        error(
            ("actor_rollout_ref.model.path", "model"),
            f"={path} names Qwen3.5-{named[0]} but model={cfg.model.name} is selected: the layout and checks "
            f"follow the model preset; use model={other} (or weights of {cfg.model.name})",
        )
    ]
