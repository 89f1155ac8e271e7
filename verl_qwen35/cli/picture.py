"""`plan.picture=FILE` in a dry run: the command draws the layout after the job, since run/ never draws.

The file is checked before the job starts (a bad suffix or directory exits 2 before the preflight); the layout is
drawn only when the preflight passed. A launch prints no plan, so it draws nothing. Nothing is imported unless
the key is set.
"""

from omegaconf import DictConfig, OmegaConf

from verl_qwen35.builder.build import mode_of
from verl_qwen35.run.job import PreflightRefused, run_job
from verl_qwen35.terminal import say

PICTURE = "plan.picture"
NOT_DRAWN = "picture    not drawn: the preflight refuses this config (the errors above)"


def picture_of(cfg: DictConfig) -> str | None:
    """The dry run's `plan.picture`, its file checked; None when not set or at launch."""
    value = OmegaConf.select(cfg, PICTURE, default=None)
    if value is None or mode_of(cfg) == "launch":
        return None
    from verl_qwen35.review.picture import require_matplotlib, target

    target(value, PICTURE)
    require_matplotlib(PICTURE)
    return str(value)


def job_and_picture(cfg: DictConfig, choices: dict[str, str], output_dir: str | None, record: bool = True) -> None:
    """The job (run/job.py), then the plan's `picture` line: where the layout was drawn, or why not."""
    value = picture_of(cfg)
    if value is None:
        run_job(cfg, choices, output_dir, record)
        return
    try:
        passed = run_job(cfg, choices, output_dir, record)
    except PreflightRefused:
        say(NOT_DRAWN)
        raise
    if not passed:
        say(NOT_DRAWN)
        return
    from verl_qwen35.review.picture import draw_config

    say(f"picture    {draw_config(cfg, value, PICTURE).absolute()}")
