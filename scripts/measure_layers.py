"""Measure forward + backward time and peak memory of Qwen3.5 MoE decoder layers on one device; write calibration rows.

    python scripts/measure_layers.py --model 122b                      # 4096 tokens, both layer kinds, bf16, cuda
    python scripts/measure_layers.py --model 35b --tokens 8192 --out my_layers.yaml

Builds a few `Qwen3_5MoeDecoderLayer`s of transformers' own implementation (`transformers.models.qwen3_5_moe`)
at the real sizes of `conf/model/<model>.yaml` (hidden size, heads, Gated DeltaNet heads, experts), with
random weights, and times each layer kind apart: Gated DeltaNet (`linear_attention`) and full attention
(`full_attention`), each followed by its MoE block, as in the model. One row per kind: seconds per layer of
the forward and of the backward (the median of `--repeats` after `--warmup`), and the device's peak memory
during one forward + backward above what the layers' weights already hold.

The rows name the machine (device name, torch, transformers, CUDA/CANN) and the kernels that ran (Gated
DeltaNet through flash-linear-attention and causal-conv1d when installed, else transformers' torch fallback;
attention through `--attention`), in the shape of `verl_qwen35/data/calibration/measurements.yaml` rows
(`id`, `kind`, `source`, `measured`, `derived`, `measured_seconds`, `model`, `hardware`, `run`), into
`verl_qwen35/data/calibration/layers_<machine>.yaml` unless `--out` says where. The step-time calibration
does not read these rows by itself: they are measurements for it to fit on.

`--tiny` shrinks every width (for a check on CPU in seconds: tests/unit/test_measure_layers.py); its rows
say `tiny: true` and are no calibration.
"""

import argparse
import datetime
import platform
import re
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
MODELS = ROOT / "conf" / "model"
CALIBRATION = ROOT / "verl_qwen35" / "data" / "calibration"
KINDS = ("linear_attention", "full_attention")
GIB = 1 << 30
# The text_config facts transformers' Qwen3_5MoeTextConfig takes, as our model facts name them.
FACTS = {
    "hidden_size": "hidden_size",
    "num_attention_heads": "num_attention_heads",
    "num_key_value_heads": "num_key_value_heads",
    "head_dim": "head_dim",
    "num_experts": "num_experts",
    "num_experts_per_tok": "num_experts_per_tok",
    "moe_intermediate_size": "moe_intermediate_size",
    "shared_expert_intermediate_size": "shared_expert_intermediate_size",
    "linear_num_key_heads": "linear_num_key_heads",
    "linear_num_value_heads": "linear_num_value_heads",
    "linear_key_head_dim": "linear_key_head_dim",
    "linear_value_head_dim": "linear_value_head_dim",
}
# --tiny: every width small enough for a CPU (the head and expert counts keep their ratios' spirit).
TINY = {
    "hidden_size": 64,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 32,
    "num_experts": 4,
    "num_experts_per_tok": 2,
    "moe_intermediate_size": 32,
    "shared_expert_intermediate_size": 32,
    "linear_num_key_heads": 2,
    "linear_num_value_heads": 4,
    "linear_key_head_dim": 16,
    "linear_value_head_dim": 16,
}
PARTIAL_ROTARY = 0.25  # Qwen3.5's rope: a quarter of head_dim rotates (config.json rope_parameters)
ROPE_THETA = 10_000_000


class Refused(SystemExit):
    """A usage mistake: one line naming the option, exit 2."""

    def __init__(self, message: str) -> None:
        print(f"measure_layers: {message}", file=sys.stderr)
        super().__init__(2)


def model_facts(name: str) -> dict[str, Any]:
    """The `model` node of conf/model/<name>.yaml (plain numbers; no interpolation is read)."""
    path = MODELS / f"{name}.yaml"
    if not path.is_file():
        known = sorted(p.stem for p in MODELS.glob("*.yaml"))
        raise Refused(f"--model {name}: no {path.relative_to(ROOT)}; one of {known}")
    node = (yaml.safe_load(path.read_text()) or {}).get("model") or {}
    missing = [k for k in FACTS if not isinstance(node.get(k), int)]
    if missing:
        raise Refused(f"--model {name}: {path.relative_to(ROOT)} lacks {missing}")
    return node


def text_config(facts: dict[str, Any], layers: int, kind: str, attention: str, experts: str) -> Any:
    from transformers.models.qwen3_5_moe import Qwen3_5MoeTextConfig

    sizes = {ours: facts[ours] for ours in FACTS}
    rotary_pairs = int(sizes["head_dim"] * PARTIAL_ROTARY) // 2
    third = rotary_pairs // 3
    mrope = [rotary_pairs - 2 * third, third, third]  # 32 pairs at head_dim 256: [12, 10, 10] ~ Qwen3.5's [11, 11, 10]
    if sizes["head_dim"] == 256:
        mrope = [11, 11, 10]
    config = Qwen3_5MoeTextConfig(
        **{FACTS[k]: v for k, v in sizes.items()},
        num_hidden_layers=layers,
        layer_types=[kind] * layers,
        vocab_size=1024,  # no embedding or lm_head is built: decoder layers only
        rope_parameters={
            "rope_type": "default",
            "rope_theta": ROPE_THETA,
            "partial_rotary_factor": PARTIAL_ROTARY,
            "mrope_section": mrope,
            "mrope_interleaved": True,
        },
        attn_implementation=attention,
        experts_implementation=experts,
    )
    return config


def randomize(module: Any) -> None:
    """Random weights (std 0.02) for every matrix; vectors keep their constructors' values unless not finite."""
    import torch

    with torch.no_grad():
        for p in module.parameters():
            if p.ndim >= 2:
                p.normal_(0.0, 0.02)
            elif not torch.isfinite(p).all():
                p.zero_()


def accelerator(device: str) -> Any:
    """torch.cuda or torch.npu (the same memory and synchronize API), None on CPU."""
    import torch

    kind = device.split(":")[0]
    if kind == "cpu":
        return None
    if kind == "npu":
        import torch_npu  # noqa: F401  (registers torch.npu)
    module = getattr(torch, kind, None)
    if module is None or not module.is_available():
        raise Refused(f"--device {device}: no {kind} device here; use --device cpu (with --tiny) or run on the machine")
    return module


def machine(device: str, acc: Any) -> dict[str, Any]:
    import torch
    import transformers

    out: dict[str, Any] = {
        "name": acc.get_device_name() if acc is not None else f"CPU {platform.processor() or platform.machine()}",
        # The device kind as measurements.yaml and conf/hardware/*.yaml name it (gpu / npu), and torch's name.
        "device": {"cuda": "gpu"}.get(device.split(":")[0], device.split(":")[0]),
        "torch_device": device,
        "torch": str(torch.__version__),
        "transformers": str(transformers.__version__),
        "python": platform.python_version(),
    }
    if acc is not None and getattr(torch.version, "cuda", None):
        out["cuda"] = torch.version.cuda
    if acc is not None:
        out["device_memory_gib"] = round(acc.get_device_properties(device).total_memory / GIB, 2)
    return out


def kernels() -> dict[str, str]:
    from transformers.models.qwen3_5_moe import modeling_qwen3_5_moe as modeling

    fast = getattr(modeling, "is_fast_path_available", False)
    return {"gated_deltanet": "flash-linear-attention + causal-conv1d" if fast else "transformers torch fallback"}


def measure_kind(facts: dict[str, Any], kind: str, args: argparse.Namespace, acc: Any) -> dict[str, float | str | None]:
    """Seconds per layer of the forward and the backward, and the peak memory of one forward + backward."""
    import torch
    from transformers.models.qwen3_5_moe.modeling_qwen3_5_moe import (
        Qwen3_5MoeDecoderLayer,
        Qwen3_5MoeTextRotaryEmbedding,
    )

    dtype = {"bf16": torch.bfloat16, "fp32": torch.float32}[args.dtype]
    config = text_config(facts, args.layers, kind, args.attention, args.experts)
    layers = torch.nn.ModuleList(Qwen3_5MoeDecoderLayer(config, i) for i in range(args.layers))
    randomize(layers)
    layers.to(device=args.device, dtype=dtype).train()
    rotary = Qwen3_5MoeTextRotaryEmbedding(config).to(args.device)

    def sync() -> None:
        if acc is not None:
            acc.synchronize()

    x = torch.randn(args.batch, args.tokens, config.hidden_size, device=args.device, dtype=dtype) * 0.02
    positions = torch.arange(args.tokens, device=args.device)[None].expand(args.batch, -1)
    cos_sin = rotary(x, positions)
    forward, backward, peak = [], [], None
    for i in range(args.warmup + args.repeats):
        if acc is not None and i == args.warmup:
            sync()
            acc.reset_peak_memory_stats()
            resident = acc.memory_allocated()
        h = x.detach().requires_grad_(True)
        sync()
        start = time.perf_counter()
        for layer in layers:
            h = layer(h, position_embeddings=cos_sin, position_ids=positions)
        sync()
        middle = time.perf_counter()
        h.float().square().mean().backward()
        sync()
        end = time.perf_counter()
        layers.zero_grad(set_to_none=True)
        if i == args.warmup and acc is not None:
            peak = (acc.max_memory_allocated() - resident) / GIB
        if i >= args.warmup:
            forward.append((middle - start) / args.layers)
            backward.append((end - middle) / args.layers)
    return {
        "forward_seconds": statistics.median(forward),
        "backward_seconds": statistics.median(backward),
        "peak_memory_gib": peak,
        "weights_gib": sum(p.numel() * p.element_size() for p in layers.parameters()) / args.layers / GIB,
    }


def machine_tag(name: str) -> str:
    """`NVIDIA H200` -> `nvidia-h200`: the machine part of the default file name."""
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "unknown"


def rows(args: argparse.Namespace) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    facts = model_facts(args.model)
    used = {**facts, **(TINY if args.tiny else {})}
    acc = accelerator(args.device)
    where = machine(args.device, acc)
    ran = kernels() | {"attention": args.attention, "experts": args.experts}
    today = datetime.date.today().isoformat()
    found = []
    for kind in KINDS:
        m = measure_kind(used, kind, args, acc)
        per_layer = m["forward_seconds"] + m["backward_seconds"]
        short = "gdn" if kind == "linear_attention" else "attention"
        found.append(
            {
                "id": f"layers-{args.model}-{short}-{machine_tag(where['name'])}-{args.tokens}" + ("-tiny" * args.tiny),
                "kind": "layers",
                "fit": [],  # a layer's kernel time, not one of verl's phases: printed, never fitted
                "phases": {},
                "tiny": args.tiny,
                "layer": kind,
                "source": (
                    f"scripts/measure_layers.py on {where['name']}, {today}: transformers Qwen3_5MoeDecoderLayer "
                    f"({kind} + MoE), random weights"
                ),
                "measured": (
                    f"{args.layers} {kind} layer(s), batch {args.batch} x {args.tokens} tokens, {args.dtype}: forward "
                    f"{m['forward_seconds']:.6f} s, backward {m['backward_seconds']:.6f} s a layer (median of "
                    f"{args.repeats} after {args.warmup} warm-up)"
                ),
                "derived": "measured_seconds = forward_seconds + backward_seconds, one layer",
                "measured_seconds": round(per_layer, 6),
                "forward_seconds": round(m["forward_seconds"], 6),
                "backward_seconds": round(m["backward_seconds"], 6),
                "peak_memory_gib": None if m["peak_memory_gib"] is None else round(m["peak_memory_gib"], 3),
                "weights_gib_per_layer": round(m["weights_gib"], 4),
                "kernels": dict(ran),
                "model": {"name": facts.get("name", args.model), **{k: used[k] for k in FACTS}},
                "hardware": dict(where),  # a copy: no YAML alias between rows
                "run": {
                    "layers": args.layers,
                    "batch": args.batch,
                    "sequence_length": args.tokens,
                    "dtype": args.dtype,
                    "repeats": args.repeats,
                    "warmup": args.warmup,
                },
            }
        )
    return where, found


def write(path: Path, where: dict[str, Any], new: list[dict[str, Any]]) -> None:
    """Rows into `path`: a row of the same id is replaced, others kept (one file a machine, rows from many runs)."""
    old = yaml.safe_load(path.read_text()) if path.is_file() else None
    kept = [r for r in (old or {}).get("measurements", []) if r.get("id") not in {n["id"] for n in new}]
    header = (
        "# Layer measurements written by scripts/measure_layers.py (forward + backward of transformers'\n"
        "# Qwen3_5MoeDecoderLayer, random weights, one device). Not read by the step-time fit by itself.\n"
    )
    body = yaml.safe_dump({"machine": where, "measurements": [*kept, *new]}, sort_keys=False, width=120)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.partial")
    partial.write_text(header + body)
    partial.replace(path)


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="35b", help="conf/model/<MODEL>.yaml: 35b, 122b, 397b, ...")
    parser.add_argument("--layers", type=int, default=2, help="layers of each kind, timed together (default 2)")
    parser.add_argument("--tokens", type=int, default=4096, help="sequence length (default 4096)")
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--dtype", choices=("bf16", "fp32"), default="bf16")
    parser.add_argument("--attention", choices=("sdpa", "eager", "flash_attention_2"), default="sdpa")
    parser.add_argument("--device", default="cuda", help="cuda, cuda:N, npu or cpu")
    parser.add_argument(
        "--experts",
        choices=("eager", "batched_mm", "grouped_mm"),
        help="transformers' MoE experts implementation (default: grouped_mm on cuda, eager elsewhere)",
    )
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--tiny", action="store_true", help="tiny widths, for a CPU check (not a calibration)")
    parser.add_argument("--out", type=Path, help="the YAML file (default data/calibration/layers_<machine>.yaml)")
    args = parser.parse_args(argv)
    for name in ("layers", "tokens", "batch", "repeats"):
        if getattr(args, name) < 1:
            raise Refused(f"--{name} {getattr(args, name)}: must be >= 1")
    if args.warmup < 0:
        raise Refused(f"--warmup {args.warmup}: must be >= 0")
    args.experts = args.experts or ("grouped_mm" if args.device.startswith("cuda") else "eager")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    where, found = rows(args)
    path = args.out or CALIBRATION / f"layers_{machine_tag(where['name'])}.yaml"
    write(path, where, found)
    for row in found:
        memory = "n/a" if row["peak_memory_gib"] is None else f"{row['peak_memory_gib']:.2f} GiB"
        print(
            f"{row['layer']:16} forward {row['forward_seconds'] * 1e3:9.3f} ms  backward "
            f"{row['backward_seconds'] * 1e3:9.3f} ms a layer  peak {memory}"
        )
    print(f"written: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
