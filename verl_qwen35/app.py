"""The job: refuse a config that must not launch, then dry-run or launch it."""

import sys

from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig, OmegaConf

from verl_qwen35.environment import apply_env, from_shell, secret_errors
from verl_qwen35.parity import parity_errors
from verl_qwen35.plan import plan_lines
from verl_qwen35.versions import installed_verl_schema


class LaunchRefused(SystemExit):
    """Raised with exit code 2 after the reasons are printed."""


def _choices() -> tuple[dict[str, str], str | None]:
    if not HydraConfig.initialized():
        return {}, None
    hydra_cfg = HydraConfig.get()
    return dict(hydra_cfg.runtime.choices), hydra_cfg.runtime.output_dir


def errors(cfg: DictConfig, choices: dict[str, str], launching: bool) -> list[str]:
    found = parity_errors(cfg) + secret_errors(cfg)
    schema = choices.get("verl_schema")
    if launching and schema and schema != installed_verl_schema():
        found.append(
            f"verl_schema={schema} but the installed verl needs verl_schema={installed_verl_schema()}: "
            "drop the verl_schema override to launch (it is for composing another verl's config)."
        )
    return found


def run(cfg: DictConfig) -> None:
    choices, output_dir = _choices()
    launching = not cfg.dry_run
    found = errors(cfg, choices, launching)
    for message in found:
        print(f"ERROR  {message}", file=sys.stderr)
    if found:
        raise LaunchRefused(2)
    OmegaConf.resolve(cfg)
    if not launching:
        print("\n".join(plan_lines(cfg, choices, output_dir)))
        for name, value in from_shell(cfg).items():
            print(f"env       {name}={value} (from your shell; config says {cfg.env.set[name]})")
        print("verdict   OK: dry run, nothing launched")
        return
    apply_env(cfg)
    from verl_qwen35.launch import launch

    launch(cfg)
