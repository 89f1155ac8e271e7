"""What the command line offers: `--presets`, a short `--help`, and quiet shell completion.

Groups and options are read from conf/ and every `--config-dir`, so a preset someone adds
(a model, a layout, a submit option) shows up here without an edit. Hydra keeps its own
flags: `--hydra-help`, `--cfg job`, `-sc install=bash`; `--help-full` is Hydra's `--help`
(every group, verl's too, and the whole config).
"""

import contextlib
import io
import os
import shlex
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from verl_qwen35.cli.presets import COMMAND, default_choices, default_text, discover, presets_text
from verl_qwen35.config.choices import OUR_GROUPS
from verl_qwen35.terminal import SafeParser, say

PRESETS_FLAG = "--presets"
HELP_FLAGS = ("--help", "-h")
FULL_HELP_FLAG = "--help-full"
HYDRA_HELP_FLAG = "--hydra-help"
COMPLETION_FLAGS = ("--shell-completion", "-sc")
_CONFIG_DIR_FLAGS = ("--config-dir", "-cd")


# The three `dry_run` values (run/job.py MODES reads them).
DRY_RUN_MODES = (
    ("dry_run=false", "default: preflight, then launch verl"),
    ("dry_run=true", "compose, preflight, print the plan; imports no torch, Ray or verl"),
    ("dry_run=full", "dry_run=true plus verl's own validate_config and config dataclasses (launch install)"),
)


def config_dirs(argv: Sequence[str]) -> list[Path]:
    """The `--config-dir` values of a command line (`--config-dir D`, `-cd D`, `--config-dir=D`)."""
    found = []
    for i, arg in enumerate(argv):
        name, has_value, value = arg.partition("=")
        if name in _CONFIG_DIR_FLAGS:
            value = value if has_value else (argv[i + 1] if i + 1 < len(argv) else "")
            if value:
                found.append(Path(value))
    return found


def help_text(extra_dirs: Iterable[Path] = (), subcommands: Iterable[str] = ()) -> str:
    """The short `--help`: usage, groups and options, dry_run modes, flags, related commands."""
    groups = discover(extra_dirs)
    defaults = default_choices()
    lines = [
        f"usage: {COMMAND} [GROUP=OPTION ...] [KEY=VALUE ...] [dry_run=true|full] [-m] [--cfg job] [--presets]",
        f"       {COMMAND} SUBCOMMAND ...   (python -m verl_qwen35 ... is the same program)",
        "",
        "Qwen3.5 MoE GRPO on verl + Megatron + vLLM, on NVIDIA GPU or Ascend NPU: compose the config",
        "with Hydra, preflight it, then launch verl's main_ppo. Any verl key can be overridden.",
        "",
        f"groups ({COMMAND} {PRESETS_FLAG} shows what each option holds and every layout's nodes x devices):",
    ]
    width = max(len(g) for g in groups) + 2
    for group, options in groups.items():
        lines.append(f"  {group:<{width}}{', '.join(options)}  (default: {default_text(group, defaults)})")
    lines += ["", "dry_run:"]
    lines += [f"  {mode:<15}{what}" for mode, what in DRY_RUN_MODES]
    lines += [
        "",
        "examples:",
        f"  {COMMAND} device=npu model=122b dry_run=true",
        f"  {COMMAND} device=gpu model=35b parallel.tp=4 parallel.gen_tp=4 actor_rollout_ref.rollout.n=8",
        f"  {COMMAND} -m device=npu model=122b parallel.pp=2,4 parallel.ep=8,16 dry_run=true   # a sweep",
        f"  {COMMAND} --config-dir my_conf device=npu model=122b parallel=my_layout dry_run=true",
        "",
        "options:",
        f"  {PRESETS_FLAG:<24}list models, devices, layouts, tunings (with those of --config-dir)",
        "  --cfg job [--resolve]   print the whole composed config (verl's keys and ours); -p KEY for one node",
        "  --config-dir DIR        add your own presets: DIR/<group>/<name>.yaml",
        "  -m, --multirun          sweep comma-separated values; one summary table at the end",
        f"  {FULL_HELP_FLAG:<24}Hydra's help: every config group (verl's too) and the whole config",
        f"  {HYDRA_HELP_FLAG:<24}Hydra's own flags",
        f'  -sc install=bash        shell completion: eval "$({COMMAND} -sc install=bash)"',
        "",
        "subcommands (each with its own --help):",
    ]
    lines += [f"  {COMMAND} {usage}" for usage in subcommands]
    return "\n".join(lines) + "\n"


def _completion_filter(output: str, extra_dirs: Iterable[Path]) -> str:
    """Drop `model=hf_model` and the like: verl's options that Hydra offers under our group names.

    Keeps Hydra's layout: one line of words for bash and zsh, one word a line for fish.
    """
    groups = discover(extra_dirs)

    def foreign(word: str) -> bool:
        group, has_value, value = word.partition("=")
        return has_value and bool(value) and group in OUR_GROUPS and value not in groups.get(group, {})

    kept = [" ".join(w for w in line.split(" ") if not foreign(w)) for line in output.rstrip("\n").split("\n")]
    return "\n".join(line for line, was in zip(kept, output.split("\n"), strict=False) if line or not was)


def _complete(hydra_main: Callable[[], None], argv: list[str]) -> None:
    """Hydra's completion untouched, except foreign options of our groups; prints nothing else."""
    sys.argv = [sys.argv[0], *argv]
    if not any(a.startswith("query=") for a in argv):
        hydra_main()  # install / uninstall: the script as Hydra writes it
        return
    captured = io.StringIO()
    with contextlib.redirect_stdout(captured):
        hydra_main()
    line_dirs = config_dirs(shlex.split(os.environ.get("COMP_LINE", "")))
    say(_completion_filter(captured.getvalue(), line_dirs))


def serve_listing(argv: list[str], subcommands: Iterable[str] = ()) -> int:
    """Print `--help` or `--presets` (with every `--config-dir` of argv)."""
    dirs = config_dirs(argv)
    if missing := [str(d) for d in dirs if not d.is_dir()]:
        say(f"verl-qwen35: error: --config-dir {', '.join(missing)}: no such directory", file=sys.stderr)
        raise SystemExit(2)
    if any(a in HELP_FLAGS for a in argv):
        say(help_text(dirs, subcommands), end="")
    else:
        say(presets_text(dirs), end="")
    return 0


def presets_main(argv: list[str]) -> int:
    """`verl-qwen35 presets [--config-dir DIR]`: the listing `--presets` prints; its own `--help`."""
    parser = SafeParser(
        prog=f"{COMMAND} presets",
        description="List every group's options (models, devices, layouts with nodes x devices, tunings), "
        "read from conf/ and each --config-dir; pick one with GROUP=OPTION.",
    )
    parser.add_argument(
        *_CONFIG_DIR_FLAGS,
        dest="config_dirs",
        action="append",
        default=[],
        metavar="DIR",
        help="your own presets, DIR/<group>/<name>.yaml, listed beside ours (may be repeated)",
    )
    args = parser.parse_args(argv)
    return serve_listing([PRESETS_FLAG, *(f"--config-dir={d}" for d in args.config_dirs)])


def handled(argv: list[str], hydra_main: Callable[[], None], subcommands: Iterable[str] = ()) -> bool:
    """Serve --help, --presets, --help-full, --hydra-help and shell completion; False for a run."""
    if any(a in COMPLETION_FLAGS or a.startswith("--shell-completion=") for a in argv):
        _complete(hydra_main, argv)
        return True
    if any(a in HELP_FLAGS for a in argv) or PRESETS_FLAG in argv:
        serve_listing(argv, subcommands)
        return True
    if FULL_HELP_FLAG in argv or HYDRA_HELP_FLAG in argv:  # Hydra's own, without our filled-in overrides
        sys.argv = [sys.argv[0], *("--help" if a == FULL_HELP_FLAG else a for a in argv)]
        hydra_main()
        return True
    return False
