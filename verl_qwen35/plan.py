"""The short plan a dry run prints: what would launch, where, and on how many devices."""

from omegaconf import DictConfig


def plan_lines(cfg: DictConfig, choices: dict[str, str], output_dir: str | None) -> list[str]:
    p, m = cfg.parallel, cfg.model
    world = p.nnodes * p.devices_per_node
    layout = f"tp={p.tp} pp={p.pp} cp={p.cp} ep={p.ep} etp={p.etp} vpp={p.vpp} gen_tp={p.gen_tp}"
    return [
        f"model     {m.name} ({choices.get('model')}), weights {cfg.actor_rollout_ref.model.path}",
        f"device    {choices.get('device')}, layout preset {choices.get('parallel')}",
        f"world     {p.nnodes} node(s) x {p.devices_per_node} = {world} devices",
        f"layout    {layout}",
        f"data      {cfg.data.train_files} | {cfg.data.val_files}",
        f"ckpt      {cfg.trainer.default_local_dir}",
        f"outputs   {output_dir or '(not a Hydra run)'}",
        f"verl      schema {choices.get('verl_schema')}",
    ]
