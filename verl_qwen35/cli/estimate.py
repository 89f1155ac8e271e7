"""`verl-qwen35 estimate [overrides] [--format json]`: memory per device and host memory per node, every term
named (the training update, the log-prob passes, the rollout, the host; docs/planning.md lists the JSON keys),
and the whole configured run (steps, wall time, device-hours, checkpoints: planner/whole_run.py)."""

import json
import sys
from pathlib import Path
from typing import Any

from verl_qwen35.builder.build import build_run
from verl_qwen35.checks.layout import layout_problems, positive_problems
from verl_qwen35.checks.memory import memory_lines, memory_problems
from verl_qwen35.cli.answers import answered
from verl_qwen35.config import compose
from verl_qwen35.model.memory import InputError, MemoryEstimate
from verl_qwen35.model.run import Run
from verl_qwen35.planner.whole_run import inputs, layout_of, whole_run, whole_run_lines
from verl_qwen35.terminal import SafeParser, say

PROG = "verl-qwen35 estimate"


def _text(e: MemoryEstimate, run: Run) -> str:
    lines = memory_lines(run.config, e, run.layout, run.settings)
    lines.append("training   " + ", ".join(f"{k} {v:.2f}" for k, v in e.train_breakdown.items()) + " GiB")
    lines.append("log-prob   " + ", ".join(f"{k} {v:.2f}" for k, v in e.log_prob_breakdown.items()) + " GiB")
    lines.append("rollout    " + ", ".join(f"{k} {v:.2f}" for k, v in e.rollout_breakdown.items()))
    start = "fits" if e.startup_fits else "does NOT fit"
    lines.append(f"vLLM start-up: one max_model_len={e.startup_length} sequence {start} the cache")
    lines.append("host/node  " + ", ".join(f"{k} {v:.2f}" for k, v in e.host_breakdown.items()) + " GiB")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """`verl-qwen35 estimate device=npu model=122b [--format json]`: exit 0 when it fits, 2 when not."""
    parser = SafeParser(prog=PROG, description=main.__doc__)
    parser.add_argument("overrides", nargs="*", help="the same overrides as python -m verl_qwen35")
    parser.add_argument("--format", choices=("text", "json"), default="text")
    parser.add_argument("--json", dest="format", action="store_const", const="json", help="the same as --format json")
    parser.add_argument(
        "--config-dir", "-cd", type=Path, help="a directory of your own config groups, as for the entrypoint"
    )
    args = parser.parse_intermixed_args(argv)
    # The entrypoint's answers: Hydra/OmegaConf/YAML mistakes and refusals exit 2, `| head` ends quietly.
    with answered(PROG):
        code = _report(args.overrides, args.format, [args.config_dir] if args.config_dir else [])
        sys.stdout.flush()  # a closed pipe shows here, inside `answered`, not at interpreter exit
    return code


def _report(overrides: list[str], fmt: str, config_dirs: list[Path]) -> int:
    run, broken = build_run(compose(overrides, config_dirs=config_dirs), mode="dry")
    cfg = run.config
    for problem in broken:
        say(problem, file=sys.stderr)
    if broken:
        say(f"{PROG}: no estimate until those sections are back", file=sys.stderr)
        return 2
    try:
        inputs(run)  # the builder's model inputs, or the error naming the key it could not use
    except InputError as err:
        say(f"ERROR   [{err.key}] {err}", file=sys.stderr)
        say(f"{PROG}: no estimate until that value is fixed", file=sys.stderr)
        return 2
    if (e := run.estimate) is None:  # the builder estimates what `estimable` accepts
        layout = layout_of(run)
        found = positive_problems(layout) or layout_problems(layout, cfg.model, str(cfg.trainer.get("device", "gpu")))
        for problem in found:
            say(problem, file=sys.stderr)
        say(f"{PROG}: no estimate for this layout; fix the parallel.* values above", file=sys.stderr)
        return 2
    if fmt == "json":
        try:
            whole: dict[str, Any] | str = whole_run(run).as_dict()
        except InputError as err:
            whole = f"not computed: {err}"
        say(json.dumps(e.as_dict() | {"whole_run": whole}, indent=2))
    else:
        say(_text(e, run))
        say("\n".join(whole_run_lines(run)))
    for problem in memory_problems(cfg, e):
        say(problem, file=sys.stderr)
    return 0 if e.fits else 2
