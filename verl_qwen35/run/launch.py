"""Hand the resolved config to verl's own main_ppo; the only module that imports verl, torch or ray."""

from omegaconf import DictConfig

from verl_qwen35.run.stops import stoppable


def launch(cfg: DictConfig) -> None:
    """Run verl's `main_ppo.main` body (auto_set_device, validate_config, run_ppo) on `cfg`.

    Hydra's decorated `main` runs its body directly when given a config. verl starts Ray
    only if it is not running and never stops it, so we stop it: the next job of a sweep
    must not inherit this job's Ray or runtime_env. `ray.init` also takes over SIGTERM for good
    (ray/_private/worker.py init and node.py Node.__init__: `set_sigterm_handler`, which exits); the
    handler from before the job is put back, so a SIGTERM after this job stops the sweep as Ctrl-C does.
    """
    import signal

    import ray
    from verl.trainer import main_ppo

    before = signal.getsignal(signal.SIGTERM)
    try:
        with stoppable():  # a training run is stopped where it stands, as verl's own script is
            main_ppo.main(cfg)
    finally:
        if ray.is_initialized():
            ray.shutdown()
        if before is not None:  # None: a handler not set from Python, which cannot be put back
            signal.signal(signal.SIGTERM, before)
