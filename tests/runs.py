"""The preflight of a config as a dry run judges it: the Run the builder makes of it (the config is copied, not
edited), then the preflight of that Run (which takes a Run only)."""

from omegaconf import DictConfig

from verl_qwen35.builder.build import build_run
from verl_qwen35.checks import preflight as run_preflight
from verl_qwen35.checks.problem import Level, Problem


def preflight(cfg: DictConfig, machine_missing: Level = "error") -> list[Problem]:
    return run_preflight(build_run(cfg, mode="dry")[0], machine_missing)
