"""How the sub-commands (estimate, doctor, layouts) end: `... | head` ends quietly, not with a traceback.

A reader that stops early (head, less quit) closes the pipe; Python then raises BrokenPipeError on
the next write and once more when it flushes stdout at exit. As the Python docs advise
(library/signal.html, "Note on SIGPIPE"), stdout is pointed at /dev/null and the command exits
with 141, the shell's status for a process ended by SIGPIPE.
"""

import os
import sys
from collections.abc import Callable
from typing import NoReturn

SIGPIPE_STATUS = 141


def exit_with(main: Callable[[], int]) -> NoReturn:
    """sys.exit(main()), with a closed stdout pipe ending quietly."""
    try:
        code = main()
        sys.stdout.flush()
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(SIGPIPE_STATUS)
    sys.exit(code)
