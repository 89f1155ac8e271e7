"""`python -m verl_qwen35 ...` (and the `verl-qwen35` console script) is the command.

The stop signals are taken over before the command's modules are imported (a fraction of a second of Hydra and
OmegaConf): a Ctrl-C, SIGTERM, SIGHUP or SIGQUIT that lands there ends the command quietly with 128 + the
signal, as one that lands later does (run/stops.py), never with a traceback of the import it cut.
"""

import sys

from verl_qwen35.run.stops import exit_code, stops_raised


def entry() -> None:
    stops_raised()
    try:
        from verl_qwen35.cli.main import main

        code = main()
    except KeyboardInterrupt as stop:  # before the command could answer it: nothing was started yet
        code = exit_code(stop)
    sys.exit(code)


if __name__ == "__main__":
    entry()
