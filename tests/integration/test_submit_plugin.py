"""A submission backend added as docs/extending.md says: one module and one conf option, no other file.

The stand-in's module is written to a temporary directory put on `verl_qwen35.run.submit`'s package path (where
a new backend's file would sit) and its conf option to a `--config-dir`; nothing of the product is edited. The
real composition, schema, preflight and the job's own submission step then take it as they take slurm.
"""

import sys

import pytest
from omegaconf import OmegaConf

import verl_qwen35.run.submit as submit_package
from verl_qwen35.checks.submit import choices, submit_problems
from verl_qwen35.config import compose
from verl_qwen35.config.backends import backends
from verl_qwen35.errors import UserError
from verl_qwen35.run.job import submit_run
from verl_qwen35.run.submit import run_dir_problems, submitting

MODULE = '''
"""submit=standin: writes standin.job (the relaunch command) and queues nothing."""
from dataclasses import dataclass

from verl_qwen35 import shell
from verl_qwen35.checks.problem import error
from verl_qwen35.run.submit.base import Backend, relaunch_argv


@dataclass
class SubmitStandin:
    backend: str = "standin"
    queue: str = "default"
    retries: int = 0
    python: str = "python"


def problems(cfg):
    q = cfg.submit.queue
    return [] if q.isidentifier() else [error("submit.queue", f"submit.queue={q!r}: one word, e.g. default")]


def submit(cfg, run_dir, dry, write_launch_file):
    record = write_launch_file()
    (run_dir / "standin.job").write_text(shell.command(relaunch_argv(cfg, str(run_dir))) + "\\n")
    return None if dry else f"{cfg.submit.queue}-1 ({record.name})"


BACKEND = Backend(name="standin", options=SubmitStandin, problems=problems, submit=submit)
'''
CONF = """defaults:
  - /verl_qwen35_schema/submit_standin@_here_
  - _self_

backend: standin
queue: batch
"""


@pytest.fixture
def standin(tmp_path, monkeypatch):
    """The conf dir holding submit/standin.yaml, with the module on the backends' package path."""
    plugin, conf = tmp_path / "plugin", tmp_path / "conf"
    plugin.mkdir()
    (plugin / "standin.py").write_text(MODULE)
    (conf / "submit").mkdir(parents=True)
    (conf / "submit" / "standin.yaml").write_text(CONF)
    monkeypatch.setattr(submit_package, "__path__", [*submit_package.__path__, str(plugin)])
    monkeypatch.delitem(sys.modules, "verl_qwen35.run.submit.standin", raising=False)
    backends.cache_clear()
    yield conf
    backends.cache_clear()


def test_a_new_backend_is_its_module_and_its_conf(standin, tmp_path):
    assert "submit=standin" in choices()
    base = ["model=35b", "device=gpu", "submit=standin"]
    with pytest.raises(UserError, match="submit.retries"):  # its typed options, while composing
        compose([*base, "submit.retries=often"], config_dirs=[standin])
    bad = compose([*base, "submit.queue='a b'"], config_dirs=[standin])
    assert [(p.keys, p.level) for p in submit_problems(bad)] == [(("submit.queue",), "error")]

    cfg = compose([*base, "trainer.default_local_dir=/ckpt"], config_dirs=[standin])
    OmegaConf.resolve(cfg)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    assert submit_problems(cfg) == [] and run_dir_problems(cfg, run_dir) == [] and submitting(cfg)
    submit_run(cfg, str(run_dir), None, dry=True)  # the job's own submission step, as a dry run takes it
    assert (run_dir / "standin.job").read_text() == f"python -m verl_qwen35 relaunch {run_dir}\n"
    assert OmegaConf.load(run_dir / "launch.yaml").config.submit.queue == "batch"
