"""The plan a dry run prints: what would launch, on how many devices, split how."""

from functools import cache

from omegaconf import DictConfig, OmegaConf

from verl_qwen35.checks.layout import layers_per_stage
from verl_qwen35.checks.megatron_keys import mcore_in_use, planned_mcore
from verl_qwen35.checks.memory import memory_lines
from verl_qwen35.checks.rewrites import DEVICE_NAMES
from verl_qwen35.checks.schedule import train_rows, training_steps
from verl_qwen35.checks.tracking import KEY, backends, local_options, syncs
from verl_qwen35.checks.verl_target import verl_in_use
from verl_qwen35.config.choices import options
from verl_qwen35.config.tracking import MODE, PLACE
from verl_qwen35.config.yaml_files import load_yaml
from verl_qwen35.data.matrices import stack_ids
from verl_qwen35.installed import conf_dir, installed_verl, installed_verl_version
from verl_qwen35.model.layout import Layout
from verl_qwen35.model.memory import or_unusable
from verl_qwen35.model.run import Run
from verl_qwen35.planner.whole_run import layout_of, predicted_step, whole_run_lines
from verl_qwen35.verl_release import NEWEST, shown, standing


@or_unusable("step       not predicted")
def step_lines(run: Run, steps: int | None = None) -> list[str]:
    """The predicted step time of the run's own layout, by part (docs/planning.md, "Step time")."""
    t = predicted_step(run)
    p = t.phases
    return [
        f"time       {t.phrase(steps)}, {t.tokens_per_second_per_device:.0f} tokens/s per device: "
        + ", ".join(f"{k} {v:.1f}" for k, v in p.items())
        + " s",
        f"           assumes {t.assumption()}; {t.calibration.describe()} (docs/planning.md, Step time)",
    ]


def logs_line(cfg: DictConfig) -> str:
    """Each backend of trainer.logger and where env.set says it writes (the launching shell's value wins)."""
    env = cfg.env.set
    parts = []
    for name in backends(cfg):
        mode = f" {env[MODE[name]]}" if name in MODE and MODE[name] in env else ""
        place = f" {env[PLACE[name]]}" if name in PLACE and PLACE[name] in env else ""
        parts.append(f"{name}{mode}{place}")
    return f"logs       {' | '.join(parts) or 'none (trainer.logger is empty)'}"


def online_lines(cfg: DictConfig) -> list[str]:
    """Each backend that syncs over the network at run time, with what it needs and the option that keeps it local:
    the default logger is wandb online, which a dry run needs neither network nor key to accept."""
    online = [b for b in backends(cfg) if syncs(cfg, b)]
    if not online:
        return []
    needs = " and ".join(f"{KEY[b]} (or a saved `{b} login`)" for b in online)
    return [
        f"           {', '.join(online)} online: the run needs the network and {needs} where it starts; "
        f"logger=[{','.join(local_options(cfg))}] keeps it on disk, logger=[console,file] needs no account "
        "(the options: conf/logger/, verl-qwen35 presets)"
    ]


@cache
def machines(device: str) -> tuple[str, ...]:
    """The shipped machines of a device (conf/hardware/NAME.yaml with `device: <device>`)."""
    found = []
    for name in options("hardware"):
        data = load_yaml(conf_dir() / "hardware" / f"{name}.yaml")
        if isinstance(data, dict) and data.get("device") == device:
            found.append(name)
    return tuple(found)


def judged_line(cfg: DictConfig, choices: dict[str, str], device: str) -> str:
    """The first line of a plan: the verl the rules judged for and the machine the plan assumes, each with the
    key that changes it (a preset's machine is its upstream script's, e.g. H20 for the 122B GPU script)."""
    verl = verl_in_use(cfg)
    newer = standing(verl.version).newer if verl.planned else installed_verl().newer
    unverified = f"newer than {shown(NEWEST)}, its rules not verified; " if newer else ""
    schema = f"verl_schema={installed_verl().schema}"
    if verl.planned:
        files = f"composed from the installed verl {installed_verl_version()}'s files, {schema}"
        said = f"verl {verl.version} (plan.verl, {unverified}{files})"
    else:
        said = f"verl {verl.version} (installed, {unverified}{schema}; plan.verl=X.Y.Z judges for the cluster's)"
    _, mcore = mcore_in_use(planned_mcore(cfg)[0])
    stack = choices.get("npu_stack")
    if stack and stack != "mindspeed" and device == "npu":
        mcore = f"{mcore} npu_stack={stack}"
    said += f", megatron-core {mcore}"
    stack_id = OmegaConf.select(cfg, "plan.stack", default=None)
    if stack_id in stack_ids():
        said = f"stack {stack_id} ({stack_ids()[stack_id][1]['name']}, plan.stack): {said}"
    hw, chosen = cfg.hardware, choices.get("hardware", "?")
    if chosen.startswith("tested_on/"):
        whose = "the machine the upstream script ran on" if chosen.count("_") else "this device's default machine"
        mine = "|".join(machines(device)) or "NAME"
        why = f"hardware={chosen}: {whose}; plan for yours with hardware={mine} or hardware.device_memory_gib=N"
    else:
        why = f"hardware={chosen}"
    return (
        f"judged     for {said} on {hw.get('name', '?')} x {cfg.trainer.nnodes * cfg.trainer.n_gpus_per_node} ({why})"
    )


def hardware_line(hw: DictConfig) -> str:
    return (
        f"hardware   {hw.get('name', '?')}: {hw.device_memory_gib:g} GiB a device as torch sees it, "
        f"{hw.devices_per_node} a node, {hw.bf16_tflops:g} bf16 TFLOPS"
    )


def rollout_line(name: str, lo: Layout) -> str:
    """How verl places vLLM: world // (TP*DP*PP) replicas, each one server of DP engines of TP (x PP) devices
    (verl workers/rollout/llm_server.py, replica.py); EP > 1 spreads each replica's routed experts over its
    TP*DP devices (vllm_async_server.py enable_expert_parallel; workers/config/rollout.py: EP == TP*DP)."""
    per = lo.gen_tp * lo.gen_dp * lo.gen_pp
    replicas = lo.world // per if per and lo.world % per == 0 else "?"
    nodes = f" ({per // lo.devices_per_node} nodes)" if per > lo.devices_per_node else ""
    pp = f" x PP {lo.gen_pp}" if lo.gen_pp > 1 else ""
    engines = f"DP {lo.gen_dp} engine(s) of TP {lo.gen_tp}{pp}"
    experts = (
        f"EP {lo.gen_ep}: routed experts split over the replica's {lo.gen_ep} devices"
        if lo.gen_ep > 1
        else f"EP off: each engine holds every expert, split by TP {lo.gen_tp}"
    )
    return f"rollout    {name}: {replicas} replica(s) of {per} devices{nodes}, each one server of {engines}; {experts}"


def plan_lines(run: Run) -> list[str]:
    """What a dry run prints after the verdict: the run's layout, memory, step time, data, env and outputs."""
    cfg, choices, output_dir, e = run.config, run.choices, run.output_dir, run.estimate
    lo, m = layout_of(run), cfg.model
    split = run.split
    prompts, mini = cfg.data.train_batch_size, cfg.actor_rollout_ref.actor.ppo_mini_batch_size
    unset = cfg.env.unset
    rollout = cfg.actor_rollout_ref.rollout
    layout = f"tp={lo.tp} pp={lo.pp} cp={lo.cp} ep={lo.ep} etp={lo.etp} vpp={lo.vpp}"
    return [
        judged_line(cfg, choices, run.device),
        f"model      {m.name} ({choices.get('model', '?')}), weights {cfg.actor_rollout_ref.model.path}",
        f"device     {DEVICE_NAMES[run.device]} ({choices.get('device', '?')}), preset {choices.get('parallel', '?')}",
        hardware_line(cfg.hardware),
        f"world      {lo.nnodes} node(s) x {lo.devices_per_node} = {lo.world} devices",
        f"training   {layout}",
        f"           DP {lo.dp}, expert-DP {lo.expert_dp}, layers per pipeline stage {layers_per_stage(lo, m, split)}",
        rollout_line(rollout.name, lo),
        f"step       {prompts} prompts x n={rollout.n} = {prompts * rollout.n} sequences, mini-batch {mini}",
        *memory_lines(cfg, e, run.layout, run.settings),
        *step_lines(run, training_steps(cfg, train_rows(cfg)).total),
        *whole_run_lines(run),
        f"data       {cfg.data.train_files} | {cfg.data.val_files}",
        f"env        {len(cfg.env.set)} variables to the driver and every Ray worker; cleared: {', '.join(unset)}",
        f"checkpoint {cfg.trainer.default_local_dir}",
        logs_line(cfg),
        *online_lines(cfg),
        f"outputs    {output_dir or '(not a Hydra run)'}",
    ]
