"""Every value written into a shell script (the Slurm job's job.sbatch) goes through here: validated or quoted.

A bash word is safe once shlex.quote has single-quoted it; what quoting cannot make safe is refused:
a variable name that is not one (`X$(touch M)`), a NUL byte (bash cannot hold one), and, on an
`#SBATCH` line, anything Slurm itself would cut or split. Slurm reads a script's options from its
`#SBATCH` lines (src/sbatch/opt.c, `_get_argument`): a line is split at whitespace, quotes are
stripped and an unquoted `#` starts a comment; and it stops reading options at the first line that
is neither a comment nor blank, so a line break inside a value would drop every option after it.
The preflight (checks/submit.py) asks the `*_problem` functions first, naming the key; the writers
raise UnsafeValue only for what no preflight saw (a run directory's path).
"""

import re
import shlex
from collections.abc import Iterable

# POSIX's portable name for an environment variable (XBD 8.1): what `export NAME=...` accepts.
VARIABLE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# A Slurm job name written as one plain word (squeue, sacct and log file names show it as is).
JOB_NAME = re.compile(r"[A-Za-z0-9_.+-]+")
_NOT_JOB_NAME = re.compile(r"[^A-Za-z0-9_.+-]+")
# One `#SBATCH` option word: no whitespace, quote, backslash, `#` or control character.
_SBATCH_WORD = re.compile(r"[^\s'\"\\#\x00-\x1f\x7f]+")


class UnsafeValue(ValueError):
    """A value that cannot be written into the script; the message says why."""


def variable_problem(name: object) -> str | None:
    """Why `name` is not an environment variable name a shell can export, or None."""
    if isinstance(name, str) and VARIABLE.fullmatch(name):
        return None
    return f"{name!r} is not a variable name (letters, digits and '_', not starting with a digit)"


def value_problem(value: object) -> str | None:
    """Why `value` cannot be a shell word even quoted (a NUL byte), or None."""
    if "\0" in str(value):
        return "holds a NUL byte, which no shell word (and no environment variable) can hold"
    return None


def sbatch_problem(word: object) -> str | None:
    """Why `word` cannot be one `#SBATCH` option word, or None."""
    if isinstance(word, str) and _SBATCH_WORD.fullmatch(word):
        return None
    return f"{word!r} cannot be one `#SBATCH` word: no whitespace, line break, quote, backslash or '#'"


def job_name_problem(name: object) -> str | None:
    if isinstance(name, str) and JOB_NAME.fullmatch(name):
        return None
    return f"{name!r}: a Slurm job name here is one word of letters, digits and _ . + -"


def job_name(name: str) -> str:
    """A job name made of `name` (trainer.experiment_name, which verl lets be any text): unsafe runs become '_'."""
    return _NOT_JOB_NAME.sub("_", name).strip("_") or "verl_qwen35"


def quote(value: object) -> str:
    """`value` as one bash word that expands to exactly its text."""
    if problem := value_problem(value):
        raise UnsafeValue(f"{str(value)!r} {problem}")
    return shlex.quote(str(value))


def array(values: Iterable[object]) -> str:
    """A bash array literal, `(w1 w2 ...)`, each element quoted."""
    return "(" + " ".join(quote(v) for v in values) + ")"


def command(argv: Iterable[object]) -> str:
    """A command line a shell runs as exactly these words (a Ray job's entrypoint runs under `sh -c`)."""
    return " ".join(quote(word) for word in argv)


def assign(name: str, value: object) -> str:
    """`NAME=value`, the value quoted."""
    if problem := variable_problem(name):
        raise UnsafeValue(problem)
    return f"{name}={quote(value)}"


def export(name: str, value: object) -> str:
    return f"export {assign(name, value)}"


def unset(name: str) -> str:
    if problem := variable_problem(name):
        raise UnsafeValue(problem)
    return f"unset {name}"


def sbatch_line(option: str) -> str:
    """`#SBATCH <option>` for one option that Slurm reads as one word and that cannot end the block."""
    if problem := sbatch_problem(option):
        raise UnsafeValue(problem)
    return f"#SBATCH {option}"


def comment(text: str) -> str:
    """`text` as comment lines: each line starts with '# ', so a line break in a value cannot end the comment."""
    return "\n".join(f"# {line}".rstrip() for line in text.splitlines() or [""])
