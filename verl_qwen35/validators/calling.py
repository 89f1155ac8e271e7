"""How the validators call upstream code: quietly, on a writable resolved copy, its refusal said in one line."""

import io
import traceback
import warnings
from collections.abc import Callable
from contextlib import redirect_stderr, redirect_stdout
from typing import Any

from omegaconf import DictConfig, OmegaConf


def said(err: BaseException) -> str:
    """The exception, and for a bare assert its source line (verl's and megatron-core's asserts often carry no
    message)."""
    text = f"{type(err).__name__}: {err}".rstrip(": ")
    if isinstance(err, AssertionError) and not str(err):
        frames = traceback.extract_tb(err.__traceback__)
        if frames and frames[-1].line:
            text = f"AssertionError: {frames[-1].line}"
    return text


def quietly(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """verl prints and warns as it builds (dataset sizes, progress bars, notices): not this command's output."""
    with warnings.catch_warnings(), redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


def plain_copy(cfg: DictConfig) -> DictConfig:
    """A resolved, writable copy: verl's start-up resolves the config in place and writes into it."""
    return OmegaConf.create(OmegaConf.to_container(cfg, resolve=True))
