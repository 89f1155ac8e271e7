"""The job: preflight the composed config, then print the plan (dry run) or launch verl."""

import sys

from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig, OmegaConf

from verl_qwen35.checks import Problem, preflight
from verl_qwen35.environment import apply_env, from_shell
from verl_qwen35.plan import plan_lines
from verl_qwen35.versions import installed_verl_schema

MODES = {False: "launch", True: "dry", "full": "full"}


class LaunchRefused(SystemExit):
    """Exit code 2: the reasons are already printed."""


def _choices() -> tuple[dict[str, str], str | None]:
    if not HydraConfig.initialized():
        return {}, None
    hydra_cfg = HydraConfig.get()
    return dict(hydra_cfg.runtime.choices), hydra_cfg.runtime.output_dir


def mode_of(cfg: DictConfig) -> str:
    if cfg.dry_run not in MODES:
        raise LaunchRefused(f"dry_run={cfg.dry_run!r}: use dry_run=false (launch), true or full")
    return MODES[cfg.dry_run]


def problems(cfg: DictConfig, choices: dict[str, str], mode: str) -> list[Problem]:
    found = preflight(cfg, machine_missing="warning" if mode == "dry" else "error")
    schema = choices.get("verl_schema")
    if mode != "dry" and schema and schema != installed_verl_schema():
        found.append(
            Problem(
                "error",
                ("verl_schema",),
                (
                    f"verl_schema={schema} but the installed verl needs {installed_verl_schema()}: drop the "
                    "override to launch (it is for composing another verl's config)"
                ),
            )
        )
    return found


def run(cfg: DictConfig) -> None:
    mode = mode_of(cfg)
    choices, output_dir = _choices()
    OmegaConf.resolve(cfg)
    found = problems(cfg, choices, mode)
    for problem in found:
        print(problem, file=sys.stderr)
    errors = [p for p in found if p.level == "error"]
    if mode != "launch":
        print("\n".join(plan_lines(cfg, choices, output_dir)))
        for name, value in from_shell(cfg).items():
            print(f"env        {name}={value} (from your shell; config says {cfg.env.set[name]})")
    if errors:
        print(f"verdict    REFUSED: {len(errors)} error(s), nothing launched", file=sys.stderr)
        raise LaunchRefused(2)
    if mode == "full":
        from verl_qwen35.verl_check import verl_validate

        try:
            verl_validate(cfg)
        except Exception as err:  # verl raises AssertionError, ValueError, TypeError, ...
            print(f"ERROR   [verl] verl's own checks refused this config: {type(err).__name__}: {err}", file=sys.stderr)
            raise LaunchRefused(2) from err
    if mode != "launch":
        warned = len(found)
        print(f"verdict    OK ({warned} warning(s)): dry run, nothing launched")
        return
    apply_env(cfg)
    from verl_qwen35.launch import launch

    launch(cfg)
