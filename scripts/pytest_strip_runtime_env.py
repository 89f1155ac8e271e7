"""Pytest plugin: the mutant the issue names, `runtime_env` stripped from every `ray.init`.

`python scripts/mutation.py` runs the Ray tests with `-p pytest_strip_runtime_env`; they must fail.
"""

import functools

import ray


def pytest_configure(config) -> None:
    real_init = ray.init

    @functools.wraps(real_init)
    def init_without_runtime_env(*args, **kwargs):
        kwargs.pop("runtime_env", None)
        return real_init(*args, **kwargs)

    ray.init = init_without_runtime_env
