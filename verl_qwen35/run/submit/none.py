"""submit=none (the default): nothing is submitted; the run launches here, now."""

from dataclasses import dataclass

from verl_qwen35.run.submit.base import Backend


@dataclass
class SubmitNone:
    backend: str = "none"


BACKEND = Backend(name="none", options=SubmitNone)
