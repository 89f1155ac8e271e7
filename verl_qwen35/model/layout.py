"""The layout verl will really run: the parallel sizes read from verl's own keys."""

from dataclasses import dataclass
from typing import Any

from omegaconf import DictConfig


def device_of(cfg: Any) -> str:
    """The device kind verl runs on: the planned machine's (`hardware.device`), whatever `trainer.device` says,
    since verl's `auto_set_device` rewrites that to the machine's (checks/rewrites.py); without a machine,
    `trainer.device` npu is Ascend, anything else a GPU."""
    hardware = cfg.get("hardware") if hasattr(cfg, "get") else None
    kind = hardware.get("device") if hasattr(hardware, "get") else None
    if kind in ("gpu", "npu"):
        return kind
    trainer = cfg.get("trainer") if hasattr(cfg, "get") else None
    return "npu" if hasattr(trainer, "get") and trainer.get("device") == "npu" else "gpu"


def _one_if_null(value: object) -> object:
    return 1 if value is None else value


@dataclass(frozen=True)
class Layout:
    """The numbers verl will actually use, read from verl's own keys."""

    nnodes: int
    devices_per_node: int
    tp: int
    pp: int
    cp: int
    ep: int
    etp: int
    vpp: int | None
    gen_tp: int
    gen_dp: int = 1
    gen_pp: int = 1
    gen_ep: int = 1

    @property
    def world(self) -> int:
        return self.nnodes * self.devices_per_node

    @property
    def dp(self) -> int:
        return self.world // (self.tp * self.pp * self.cp)

    @property
    def expert_dp(self) -> int:
        return self.world // (self.etp * self.ep * self.pp)

    @classmethod
    def of(cls, cfg: DictConfig) -> "Layout":
        m, r = cfg.actor_rollout_ref.actor.megatron, cfg.actor_rollout_ref.rollout
        return cls(
            nnodes=cfg.trainer.nnodes,
            devices_per_node=cfg.trainer.n_gpus_per_node,
            tp=m.tensor_model_parallel_size,
            pp=m.pipeline_model_parallel_size,
            cp=m.context_parallel_size,
            ep=m.expert_model_parallel_size,
            etp=m.expert_tensor_parallel_size or m.tensor_model_parallel_size,
            vpp=m.virtual_pipeline_model_parallel_size,
            gen_tp=r.tensor_model_parallel_size,
            # null or absent: verl's default 1 (trainer/config/rollout/rollout.yaml); 0 stays 0 and is refused.
            gen_dp=_one_if_null(r.get("data_parallel_size")),
            gen_pp=_one_if_null(r.get("pipeline_model_parallel_size")),
            gen_ep=_one_if_null(r.get("expert_parallel_size")),
        )


def divisors(n: int) -> list[int]:
    """Divisors of n: the valid alternatives most messages offer."""
    return [d for d in range(1, n + 1) if n % d == 0]
