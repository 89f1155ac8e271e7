"""Hydra config package that launches Qwen3.5 MoE GRPO on verl (GPU and Ascend NPU)."""

from verl_qwen35 import config_cache, merge_cache, speedups
from verl_qwen35.paths import register_resolvers

__version__ = "0.1.0"

register_resolvers()
config_cache.register()
merge_cache.install()
speedups.install()
