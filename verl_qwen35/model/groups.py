"""Which global rank sits where, and which process groups it joins: the layout as megatron-core and vLLM build it.

Pure arithmetic (no torch, no megatron import), so a picture or a check can ask for any layout on a laptop.

Training (megatron-core 0.16.1 `megatron/core/parallel_state.py` `initialize_model_parallel`): verl 0.8.0 and
0.9.1 call it without `order` (`verl/workers/engine/megatron/transformer_impl.py` `_init_device_mesh`; the
MindSpeed engine calls the same method), so megatron-core's default order "tp-cp-ep-dp-pp" holds. It builds two
`RankGenerator`s on that order:
- decoder: tp, cp, ep=1, dp = world / (tp*cp*pp), pp -> the TP, CP, DP, PP groups (and tp-cp, tp-pp, dp-cp, ...);
- expert: tp = etp, ep, dp = expert-DP = world / (etp*ep*pp), pp, cp=1 -> EP, expert-TP, expert-DP groups.
`RankGenerator.get_ranks(token)` (`generate_masked_orthogonal_rank_groups`): a rank's coordinate along each
dimension is read from the rank in mixed radix, the first dimension of the order fastest; a group holds the ranks
that differ only in the token's dimensions.

Placement (verl `single_controller/ray/base.py` `RayWorkerGroup._init_with_resource_pool`): the placement groups,
one per node sorted by node IP (`sort_placement_group_by_node_ip`), get ranks in order, so global rank r runs
on node r // devices_per_node, local device r % devices_per_node.

Rollout (verl `workers/rollout/llm_server.py` builds world // (tp*dp*pp) replicas; `workers/rollout/replica.py`
`RolloutReplica.init_hybrid` gives replica k the workers [k*W, (k+1)*W), W = tp*dp*pp, so a replica's ranks are
contiguous). Inside a replica, vLLM numbers its ranks `arange(W).reshape(dp, pp, tp)`
(`vllm/distributed/parallel_state.py` `initialize_model_parallel`: TP = consecutive ranks, EP =
`transpose(dp, pp)` = every dp x tp rank of one pipeline stage) and verl hands each node's workers to
`data_parallel_start_rank = node_rank * (devices_per_node // tp)` (`vllm_async_server.py` `launch_server`), which is
the same order. Expert parallelism is on when `expert_parallel_size > 1` (`enable_expert_parallel`); then an EP
group spans tp x dp devices (verl `workers/config/rollout.py` requires expert_parallel_size == tp * dp).
"""

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from itertools import product

from verl_qwen35.model.layout import Layout

# megatron-core 0.16.1 initialize_model_parallel's default `order`, which verl leaves as it is.
ORDER = ("tp", "cp", "ep", "dp", "pp")

# The groups megatron-core builds (initialize_model_parallel's get_ranks calls), by the generator that builds them.
DECODER_TOKENS = ("tp", "cp", "dp", "pp", "dp-cp", "tp-cp", "tp-pp", "tp-dp", "tp-dp-cp")
EXPERT_TOKENS = ("ep", "tp", "dp", "tp-ep", "tp-ep-pp")


@dataclass(frozen=True)
class Generator:
    """One megatron-core RankGenerator: sizes along ORDER (the first fastest)."""

    sizes: tuple[tuple[str, int], ...]

    @classmethod
    def of(cls, **sizes: int) -> "Generator":
        return cls(tuple((name, sizes.get(name, 1)) for name in ORDER))

    @property
    def world(self) -> int:
        out = 1
        for _, size in self.sizes:
            out *= size
        return out

    def coordinates(self, rank: int) -> dict[str, int]:
        """The rank's index along each dimension (mixed radix, ORDER's first dimension fastest)."""
        out = {}
        for name, size in self.sizes:
            out[name] = rank % size
            rank //= size
        return out

    def groups(self, token: str) -> list[list[int]]:
        """The groups `RankGenerator.get_ranks(token)` returns, in its order: the groups by the other dimensions'
        indices, inside a group by the token's dimensions' indices, the first dimension of ORDER fastest
        (megatron-core 0.16.1 parallel_state.py generate_masked_orthogonal_rank_groups; the token's dimensions
        are taken in ORDER's order, as RankGenerator.get_mask does, so "pp-tp" is "tp-pp")."""
        names = set(token.split("-"))
        if unknown := names - set(ORDER):
            raise ValueError(f"unknown parallel dimension(s) {sorted(unknown)} in {token!r}")
        strides, stride = {}, 1
        for name, size in self.sizes:
            strides[name] = stride
            stride *= size
        inside = [(name, size) for name, size in self.sizes if name in names]
        outside = [(name, size) for name, size in self.sizes if name not in names]
        return [
            [_rank(inner, inside, strides) + _rank(outer, outside, strides) for inner in _indices(inside)]
            for outer in _indices(outside)
        ]


def _indices(dims: Sequence[tuple[str, int]]) -> list[tuple[int, ...]]:
    """Every index tuple over dims, the first dimension fastest."""
    return [tuple(reversed(t)) for t in product(*(range(size) for _, size in reversed(dims)))]


def _rank(index: tuple[int, ...], dims: Sequence[tuple[str, int]], strides: dict[str, int]) -> int:
    return sum(i * strides[name] for i, (name, _) in zip(index, dims, strict=True))


@dataclass(frozen=True)
class Place:
    """One training rank: where it runs and its index in each of its groups."""

    rank: int
    node: int
    device: int
    tp: int
    cp: int
    pp: int
    dp: int
    ep: int
    etp: int
    edp: int  # expert data parallel


@dataclass(frozen=True)
class RolloutPlace:
    """One rank during rollout: its vLLM replica (server) and its indices inside it."""

    rank: int
    node: int
    device: int
    replica: int
    tp: int
    pp: int
    dp: int
    ep: int | None  # None: expert parallelism off (experts split by TP)


def _check_divides(world: int, parts: dict[str, int], what: str) -> None:
    product_ = 1
    for size in parts.values():
        if not isinstance(size, int) or size < 1:
            raise ValueError(f"{what}: sizes must be positive integers, got {parts}")
        product_ *= size
    if world % product_:
        shown = "*".join(f"{k}={v}" for k, v in parts.items())
        raise ValueError(f"{what}: world {world} is not divisible by {shown} = {product_}")


@dataclass(frozen=True)
class Groups:
    """The training and rollout groups of one layout (see the module docstring for where each rule lives)."""

    layout: Layout

    def __post_init__(self) -> None:
        lo = self.layout
        _check_divides(lo.world, {"tp": lo.tp, "cp": lo.cp, "pp": lo.pp}, "training")
        _check_divides(lo.world, {"etp": lo.etp, "ep": lo.ep, "pp": lo.pp}, "experts")
        _check_divides(lo.world, {"tp": lo.gen_tp, "dp": lo.gen_dp, "pp": lo.gen_pp}, "rollout")

    @property
    def decoder(self) -> Generator:
        lo = self.layout
        return Generator.of(tp=lo.tp, cp=lo.cp, dp=lo.dp, pp=lo.pp)

    @property
    def expert(self) -> Generator:
        lo = self.layout
        return Generator.of(tp=lo.etp, ep=lo.ep, dp=lo.expert_dp, pp=lo.pp)

    def node_of(self, rank: int) -> int:
        return rank // self.layout.devices_per_node

    @cached_property
    def places(self) -> list[Place]:
        """Every rank's node and device (verl single_controller/ray/base.py _init_with_resource_pool: ranks in
        order over the placement groups, one a node) and its coordinates in both generators."""
        n = self.layout.devices_per_node
        out = []
        for rank in range(self.layout.world):
            d, e = self.decoder.coordinates(rank), self.expert.coordinates(rank)
            out.append(Place(rank, rank // n, rank % n, d["tp"], d["cp"], d["pp"], d["dp"], e["ep"], e["tp"], e["dp"]))
        return out

    def training(self, kind: str) -> list[list[int]]:
        """Training groups by name: a decoder token (tp, cp, dp, pp, tp-cp, ...), or ep / etp / edp / tp-ep
        (the expert generator's ep, tp, dp, tp-ep: initialize_model_parallel's _EXPERT_MODEL_PARALLEL_GROUP,
        _EXPERT_TENSOR_PARALLEL_GROUP, _EXPERT_DATA_PARALLEL_GROUP, _EXPERT_TENSOR_AND_MODEL_PARALLEL_GROUP)."""
        expert = {"ep": "ep", "etp": "tp", "edp": "dp", "tp-ep": "tp-ep", "tp-ep-pp": "tp-ep-pp"}
        if kind in expert:
            return self.expert.groups(expert[kind])
        return self.decoder.groups(kind)

    # Rollout -------------------------------------------------------------------------------------------

    @property
    def replica_world(self) -> int:
        lo = self.layout
        return lo.gen_tp * lo.gen_dp * lo.gen_pp

    @property
    def replicas(self) -> int:
        return self.layout.world // self.replica_world

    @property
    def expert_parallel_rollout(self) -> bool:
        """vLLM's enable_expert_parallel, as verl sets it (vllm_async_server.py: expert_parallel_size > 1)."""
        return self.layout.gen_ep > 1

    def _vllm(self, rank: int) -> tuple[int, int, int, int]:
        """(replica, dp, pp, tp) of a global rank: replicas contiguous (verl replica.py init_hybrid), inside one
        vLLM's arange(W).reshape(dp, pp, tp) (vllm/distributed/parallel_state.py initialize_model_parallel)."""
        lo = self.layout
        replica, i = divmod(rank, self.replica_world)
        return replica, i // (lo.gen_tp * lo.gen_pp), (i // lo.gen_tp) % lo.gen_pp, i % lo.gen_tp

    @cached_property
    def rollout_places(self) -> list[RolloutPlace]:
        lo, n = self.layout, self.layout.devices_per_node
        out = []
        for rank in range(lo.world):
            replica, dp, pp, tp = self._vllm(rank)
            ep = dp * lo.gen_tp + tp if self.expert_parallel_rollout else None
            out.append(RolloutPlace(rank, rank // n, rank % n, replica, tp, pp, dp, ep))
        return out

    def rollout(self, kind: str) -> list[list[int]]:
        """Rollout groups: replica (one vLLM server's ranks), tp, pp, dp, ep (empty when EP is off)."""
        if kind == "ep" and not self.expert_parallel_rollout:
            return []
        key = {
            "replica": lambda p: (p.replica,),
            "tp": lambda p: (p.replica, p.dp, p.pp),
            "pp": lambda p: (p.replica, p.dp, p.tp),
            "dp": lambda p: (p.replica, p.pp, p.tp),
            "ep": lambda p: (p.replica, p.pp),
        }[kind]
        found: dict[tuple[int, ...], list[int]] = {}
        order = {"ep": lambda p: p.ep, "dp": lambda p: p.dp, "pp": lambda p: p.pp}.get(kind, lambda p: p.rank)
        for p in sorted(self.rollout_places, key=order):
            found.setdefault(key(p), []).append(p.rank)
        return [found[k] for k in sorted(found)]

    # Node boundaries -----------------------------------------------------------------------------------

    def crosses_nodes(self, group: Sequence[int]) -> bool:
        return len({self.node_of(r) for r in group}) > 1

    def crossing(self, groups: Sequence[Sequence[int]]) -> int:
        """How many of these groups have members on more than one node."""
        return sum(self.crosses_nodes(g) for g in groups)


# The groups a picture outlines or names, by panel: (name shown, kind).
TRAINING_SHOWN = (("TP", "tp"), ("CP", "cp"), ("EP", "ep"), ("ETP", "etp"), ("PP", "pp"), ("DP", "dp"), ("EDP", "edp"))
ROLLOUT_SHOWN = (("replica", "replica"), ("TP", "tp"), ("EP", "ep"), ("DP", "dp"))


def crossing_summary(groups: Groups) -> dict[str, dict[str, tuple[int, int, int]]]:
    """Per panel and group name: (group size, groups, groups that cross a node boundary); size-1 groups left out."""
    out: dict[str, dict[str, tuple[int, int, int]]] = {"training": {}, "rollout": {}}
    for panel, shown, get in (
        ("training", TRAINING_SHOWN, groups.training),
        ("rollout", ROLLOUT_SHOWN, groups.rollout),
    ):
        for name, kind in shown:
            found = get(kind)
            if found and len(found[0]) > 1:
                out[panel][name] = (len(found[0]), len(found), groups.crossing(found))
    return out
