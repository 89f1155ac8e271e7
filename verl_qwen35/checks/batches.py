"""Batch arithmetic verl asserts deep inside its workers, checked up front.

Upstream (verl 0.9.1 unless noted):
- `verl/utils/config.py` `validate_config`: train_batch_size * n divisible by DP * ppo_micro_batch_size_per_gpu;
- `verl/workers/config/actor.py` `ActorConfig.validate`: train_batch_size >= ppo_mini_batch_size;
- `verl/workers/engine_workers.py` `train_mini_batch`: mini-batch sequences divisible by DP, and each DP
  rank's share of the step a whole number of mini-batches (`verl/utils/tensordict_utils.py` `make_iterator`
  asserts `batch_size % mini_batch_size == 0`);
- `verl/workers/engine/utils.py` `prepare_micro_batches`: each DP rank's share divisible by the micro-batch
  (training micro-batch, and the log-prob micro-batches of actor/rollout and ref);
- megatron-core 0.16.1 `pipeline_parallel/schedules.py` `forward_backward_pipelining_with_interleaving`:
  with VPP, PP <= microbatch_group_size_per_vp_stage (default PP) <= micro-batches, and the last group
  either full or at least PP micro-batches.
"""

from omegaconf import DictConfig

from verl_qwen35.checks.layout import KEYS
from verl_qwen35.checks.problem import Problem, error
from verl_qwen35.model.layout import Layout

ACTOR = "actor_rollout_ref.actor"
GROUP = "megatron.override_transformer_config.microbatch_group_size_per_vp_stage"


def interleaving_problem(micro_batches: int, pp: int, group: int | None) -> str | None:
    """Why megatron's interleaved schedule refuses this many micro-batches, or None."""
    group = pp if group is None else group
    if group > micro_batches or group < pp:
        return (
            f"{micro_batches} micro-batch(es) per step with microbatch_group_size_per_vp_stage={group}: "
            f"the interleaved (VPP) schedule needs pp={pp} <= group <= micro-batches"
        )
    rest = micro_batches % group
    if 0 < rest < pp:
        return (
            f"{micro_batches} micro-batches leave a last group of {rest} < pp={pp} "
            f"(microbatch_group_size_per_vp_stage={group}); use a multiple of {group} micro-batches"
        )
    return None


def share_problems(
    sequences: int, dp: int, micro: int, pp: int, vpp: int | None, group: int | None
) -> tuple[str | None, str | None]:
    """(why `sequences` do not split over DP ranks into micro-batches, why VPP refuses the count)."""
    if sequences % (dp * micro):
        return f"{sequences} sequences do not split into DP={dp} ranks x micro-batches of {micro}", None
    if vpp is None:
        return None, None
    return None, interleaving_problem(sequences // (dp * micro), pp, group)


def batch_problems(cfg: DictConfig, lo: Layout, uses_ref: bool) -> list[Problem]:
    actor, rollout = cfg.actor_rollout_ref.actor, cfg.actor_rollout_ref.rollout
    train, mini, n = cfg.data.train_batch_size, actor.ppo_mini_batch_size, rollout.n
    group = cfg.megatron.override_transformer_config.get("microbatch_group_size_per_vp_stage")
    found = []
    if train < mini:
        found.append(
            error(
                ("data.train_batch_size", f"{ACTOR}.ppo_mini_batch_size"),
                f"train_batch_size={train} is smaller than ppo_mini_batch_size={mini}; "
                f"lower the mini batch to at most {train}",
            )
        )
    elif train % mini:
        # verl/utils/tensordict_utils.py make_iterator: each DP rank's share of the step must be a whole
        # number of its mini-batch share, i.e. train_batch_size a multiple of ppo_mini_batch_size.
        whole = [d for d in range(1, train + 1) if train % d == 0]
        found.append(
            error(
                (f"{ACTOR}.ppo_mini_batch_size", "data.train_batch_size"),
                f"train_batch_size={train} is not a whole number of ppo_mini_batch_size={mini} mini-batches "
                f"(verl's make_iterator asserts it at the first update); use a divisor of {train}: {whole}",
            )
        )
    found += dynamic_agreement_problems(cfg)
    # Each log-prob pass follows its own dynamic-batch switch, whatever the training pass does.
    found += log_prob_problems(cfg, lo, uses_ref, group)
    if actor.use_dynamic_bsz:
        return found
    micro = actor.ppo_micro_batch_size_per_gpu
    if micro is None:
        found.append(error(f"{ACTOR}.ppo_micro_batch_size_per_gpu", "is not set and dynamic batch size is off; set it"))
        return found
    step_keys = ("data.train_batch_size", "actor_rollout_ref.rollout.n", f"{ACTOR}.ppo_micro_batch_size_per_gpu")
    mini_keys = (f"{ACTOR}.ppo_mini_batch_size", f"{ACTOR}.ppo_micro_batch_size_per_gpu", "actor_rollout_ref.rollout.n")
    layout_keys = (KEYS["tp"], KEYS["pp"], KEYS["cp"])
    for keys, what, sequences in (
        (step_keys, f"train_batch_size*n={train}*{n}", train * n),
        (mini_keys, f"ppo_mini_batch_size*n={mini}*{n}", mini * n),
    ):
        split, vpp_why = share_problems(sequences, lo.dp, micro, lo.pp, lo.vpp, group)
        if split:
            found.append(
                error(
                    keys + layout_keys,
                    f"{what}: {split} (DP = world {lo.world} / tp*pp*cp); make it a multiple of "
                    f"{lo.dp * micro} or change the micro-batch or layout",
                )
            )
        elif vpp_why:
            found.append(error((keys[0], KEYS["vpp"], GROUP), f"{what} for training: {vpp_why}"))
    return found


def dynamic_agreement_problems(cfg: DictConfig) -> list[Problem]:
    """The actor's training and log-prob passes share one engine, so one dynamic-batch switch.

    verl 0.8.0 and 0.9.1 `verl/workers/engine_workers.py` ActorRolloutRefWorker.init_model:
    `assert self.config.actor.use_dynamic_bsz == self.config.rollout.log_prob_use_dynamic_bsz` (the ref has
    its own engine and its own switch)."""
    actor, rollout = cfg.actor_rollout_ref.actor, cfg.actor_rollout_ref.rollout
    training, log_prob = bool(actor.use_dynamic_bsz), bool(rollout.get("log_prob_use_dynamic_bsz"))
    if training == log_prob:
        return []
    return [
        error(
            ("actor_rollout_ref.rollout.log_prob_use_dynamic_bsz", f"{ACTOR}.use_dynamic_bsz"),
            f"={log_prob} but {ACTOR}.use_dynamic_bsz={training}: verl's actor worker runs both passes on one "
            "engine and asserts they agree when it starts; set "
            f"actor_rollout_ref.rollout.log_prob_use_dynamic_bsz={str(training).lower()}",
        )
    ]


def log_prob_problems(cfg: DictConfig, lo: Layout, uses_ref: bool, group: int | None) -> list[Problem]:
    """The old-log-prob pass (actor, keys under rollout) and the ref's, each without dynamic batches."""
    rollout = cfg.actor_rollout_ref.rollout
    train, n = cfg.data.train_batch_size, rollout.n
    found = []
    sides = [("actor_rollout_ref.rollout", rollout)] + (
        [("actor_rollout_ref.ref", cfg.actor_rollout_ref.ref)] if uses_ref else []
    )
    for name, side in sides:
        if side.get("log_prob_use_dynamic_bsz"):
            continue
        key = f"{name}.log_prob_micro_batch_size_per_gpu"
        log_micro = side.get("log_prob_micro_batch_size_per_gpu")
        if log_micro is None:
            if side.get("log_prob_micro_batch_size") is None:
                found.append(error(key, "is not set and dynamic batch size is off; set it (1 fits every preset)"))
            continue
        split, vpp_why = share_problems(train * n, lo.dp, log_micro, lo.pp, lo.vpp, group)
        if split:
            found.append(
                error(
                    (key, "data.train_batch_size", "actor_rollout_ref.rollout.n"),
                    f"log-prob pass over train_batch_size*n={train * n}: {split}; each DP rank computes "
                    f"{train * n // lo.dp if train * n % lo.dp == 0 else 'a fraction of'} sequences, so "
                    f"{key} must divide that",
                )
            )
        elif vpp_why:
            found.append(error((key, KEYS["vpp"], GROUP), f"log-prob pass: {vpp_why}"))
    return found


def uses_reference(cfg: DictConfig) -> bool:
    """verl builds the ref model for a KL loss or an in-reward KL penalty."""
    return bool(cfg.actor_rollout_ref.actor.use_kl_loss or cfg.algorithm.use_kl_in_reward)
