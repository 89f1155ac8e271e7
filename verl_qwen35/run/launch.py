"""Hand the resolved config to verl's own main_ppo; the only module that imports verl, torch or ray."""

from omegaconf import DictConfig


def launch(cfg: DictConfig) -> None:
    """Run verl's `main_ppo.main` body (auto_set_device, validate_config, run_ppo) on `cfg`.

    Hydra's decorated `main` runs its body directly when given a config. verl starts Ray
    only if it is not running and never stops it, so we stop it: the next job of a sweep
    must not inherit this job's Ray or runtime_env.
    """
    import ray
    from verl.trainer import main_ppo

    try:
        main_ppo.main(cfg)
    finally:
        if ray.is_initialized():
            ray.shutdown()
