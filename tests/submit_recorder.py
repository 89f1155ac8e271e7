"""`python -m tests.submit_recorder -m MODULE ARGS...`: `python -m MODULE ARGS...`, recording a relaunch.

The submission tests point `submit.python` at a wrapper running this, so the cluster side
runs our real `verl_qwen35 relaunch` and verl's real `main_ppo.main`, with only verl's task
runner replaced by the recording one of tests/system/test_forwarding.py (record: one JSON line in
$RECORD_TO). The Ray address verl's `ray.init` connected to is recorded too, in
$RECORD_TO.ray_init, so a test can tell the submitted cluster from a stray local Ray.
"""

import json
import os
import runpy
import sys
from pathlib import Path


def install_recorder(out: Path) -> None:
    import ray
    from verl.trainer import main_ppo

    from tests.system.test_forwarding import recording_runner

    if hasattr(main_ppo, "TaskRunnerV1"):  # verl 0.9, as the forwarding fixture does
        main_ppo.TaskRunnerV1 = ray.remote(recording_runner(out, validate_in_worker=False))
    else:  # verl 0.8
        main_ppo.TaskRunner = recording_runner(out, validate_in_worker=True)

    real_init = ray.init

    def recording_init(*args, **kwargs):
        context = real_init(*args, **kwargs)
        info = {"gcs_address": context.address_info["gcs_address"], "runtime_env": kwargs.get("runtime_env")}
        Path(f"{out}.ray_init").write_text(json.dumps(info))
        return context

    ray.init = recording_init


def main() -> None:
    flag, module, *args = sys.argv[1:]
    assert flag == "-m", f"usage: python -m tests.submit_recorder -m MODULE ARGS (got {sys.argv[1:]})"
    if module == "verl_qwen35" and args[:1] == [
        "relaunch"
    ]:  # installed when the relaunch launches (importing verl takes seconds)
        from verl_qwen35.run import launch

        real_launch = launch.launch

        def recording_launch(cfg):
            install_recorder(Path(os.environ["RECORD_TO"]))
            real_launch(cfg)

        launch.launch = recording_launch
    sys.argv = [module, *args]
    runpy.run_module(module, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
