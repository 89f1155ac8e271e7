"""`verl-qwen35 import SCRIPT`: a verl launch script (or a .txt list of overrides) as a --config-dir preset."""

from pathlib import Path

from verl_qwen35.cli.answers import answered
from verl_qwen35.config.yaml_files import read_text
from verl_qwen35.imports.preset import check_out, import_preset, report, residual
from verl_qwen35.imports.script import read_overrides, run_script
from verl_qwen35.run.stops import stops_deferred
from verl_qwen35.terminal import SafeParser, say

PROG = "verl-qwen35 import"


def main(argv: list[str] | None = None) -> int:
    parser = SafeParser(prog=PROG, description=__doc__.splitlines()[0])
    parser.add_argument("script", type=Path, help="a bash launch script calling main_ppo, or a .txt list of overrides")
    parser.add_argument(
        "--device",
        choices=("gpu", "npu"),
        help="DEVICE for the script and the preset (default: gpu, or the script's trainer.device)",
    )
    parser.add_argument("--out", type=Path, default=Path("imported"), help="new or empty directory (default: imported)")
    args = parser.parse_args(argv)
    with answered(PROG), stops_deferred():  # SIGTERM stops the script's process group and removes its temp dir
        check_out(args.out)
        if args.script.suffix == ".txt":
            recorded, other = read_overrides(args.script), None
        else:
            read_text(args.script, kind="bash script")  # the loader's limits: size, binary, not UTF-8
            device = args.device or "gpu"
            recorded = run_script(args.script, device)
            other = run_script(args.script, "npu" if device == "gpu" else "gpu", fail_quietly=True)
        result = import_preset(recorded, args.device, args.out, other)
        say(report(result, args.out, residual(result, recorded, args.out), recorded.notes), flush=True)
    return 0
