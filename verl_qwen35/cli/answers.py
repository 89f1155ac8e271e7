"""How the command ends: a user mistake in one message and exit 2, Ctrl-C 130, SIGTERM 143, a closed pipe quietly."""

import os
import signal
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from verl_qwen35.config.errors import explain
from verl_qwen35.config.prewrite import Refused
from verl_qwen35.errors import UserError
from verl_qwen35.run.stops import exit_code, signal_name, signal_of, stops_held
from verl_qwen35.terminal import say

PROG = "verl-qwen35"
# Read at import, before the command sets HYDRA_FULL_ERROR itself: the user's own wish for tracebacks.
USER_WANTS_TRACEBACKS = bool(os.environ.get("HYDRA_FULL_ERROR"))


@contextmanager
def answered(
    prog: str = PROG, full_error: bool = USER_WANTS_TRACEBACKS, on_interrupt: Callable[[str], None] | None = None
) -> Iterator[None]:
    """User mistakes -> one message and exit 2; Ctrl-C -> exit 130, SIGTERM -> 143 (raised where
    `run.stops` lets it land), `on_interrupt` told which; a closed pipe (`| head`) -> quiet.

    Everything else propagates with its traceback: it is a bug to report, not a mistake to fix.
    `full_error` (the user set HYDRA_FULL_ERROR) keeps the tracebacks of Hydra's and OmegaConf's errors.
    """
    try:
        yield
    except KeyboardInterrupt as stop:
        with stops_held():  # a second signal must not cut the summary short
            if on_interrupt is not None:
                on_interrupt(signal_name(stop))
            told = "interrupted" if signal_of(stop) == signal.SIGINT else f"terminated ({signal_name(stop)})"
            say(f"\n{prog}: {told}", file=sys.stderr)
        sys.exit(exit_code(stop))
    except Refused as refused:  # raised by a pre-write check inside Hydra's callback
        _answer(refused.error, prog, full_error)
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        sys.exit(141)  # 128 + SIGPIPE, as a shell tool killed by the closed pipe
    except Exception as err:
        _answer(err, prog, full_error)


def _answer(err: Exception, prog: str, full_error: bool) -> None:
    message = explain(err)
    if message is None or (full_error and not isinstance(err, UserError)):
        raise err
    say(f"{prog}: error: {message}", file=sys.stderr)
    sys.exit(2)
