"""Sharing the defaults list and its merge between sweep jobs gives each job exactly Hydra's own config.

Every job is composed by Hydra's real config loader twice: plainly, and inside
`compositions_shared` after other jobs (with other group choices, hydra overrides, appends and
deletions) have filled the shared answers. Both must be equal, hydra node included.
"""

import gc
import os

import pytest
from hydra import initialize_config_dir
from hydra._internal import config_loader_impl
from hydra.core.global_hydra import GlobalHydra
from hydra.errors import ConfigCompositionException, MissingConfigException
from hydra.types import RunMode
from omegaconf import OmegaConf

from hydra_plugins.verl_qwen35_sweeper.shared_composition import defaults_lists_shared
from verl_qwen35 import collector
from verl_qwen35.paths import conf_dir

# Interleaved so that a job follows others with different choices: a key that missed any of
# them would serve the wrong list or merge.
JOBS = [
    ["device=npu", "model=122b", "parallel.tp=2"],
    ["device=gpu", "model=35b", "parallel.tp=2"],
    ["device=npu", "model=122b", "parallel.tp=4", "parallel.ep=16"],
    ["device=npu", "model=35b", "parallel.tp=2"],
    ["device=gpu", "model=397b"],
    ["device=npu", "model=122b", "verl_schema=v0_8"],
    ["device=npu", "model=122b", "submit=slurm"],
    ["device=npu", "model=122b", "parallel=35b_npu"],
    ["device=npu", "model=122b", "~tuning"],
    ["device=npu", "model=122b", "+megatron.use_distributed_optimizer=true"],
    ["device=npu", "model=122b", "hydra/job_logging=none"],
    ["device=npu", "model=122b", "hydra.job.chdir=true"],
    ["device=npu", "model=122b", "parallel.tp=2"],
]


@pytest.fixture
def loader_and_master(tmp_path):
    with initialize_config_dir(config_dir=str(conf_dir()), version_base=None):
        loader = GlobalHydra.instance().config_loader()
        master = loader.load_configuration(
            "config", [f"hydra.sweep.dir={tmp_path}", "dry_run=true"], run_mode=RunMode.MULTIRUN
        )
        yield loader, master


def _text(cfg) -> str:
    return OmegaConf.to_yaml(cfg)


def test_every_job_shared_equals_its_own_composition(loader_and_master):
    loader, master = loader_and_master
    plain = [_text(loader.load_sweep_config(master, job)) for job in JOBS]
    with defaults_lists_shared():
        shared = [_text(loader.load_sweep_config(master, job)) for job in JOBS]
    for job, mine, theirs in zip(JOBS, shared, plain, strict=True):
        assert mine == theirs, job
    # Every job's config differs (the last repeats the first): the comparison can tell them apart.
    assert len(set(plain)) == len(JOBS) - 1 and plain[0] == plain[-1]


def test_the_search_path_is_part_of_what_jobs_share(loader_and_master, tmp_path):
    """`parallel=extra` names another file under another `hydra.searchpath`: not the same list or merge."""
    loader, master = loader_and_master
    searchpath = list(OmegaConf.to_container(master.hydra.searchpath, resolve=True))
    jobs = []
    preset = OmegaConf.to_container(loader.load_sweep_config(master, ["device=npu", "model=122b"]).parallel)
    # The same config path, another file: a whole layout, or one with a defaults list of its own.
    files = {2: OmegaConf.to_yaml({**preset, "tp": 2}), 4: "defaults:\n  - 122b_npu\n  - _self_\ntp: 4\n"}
    for tp, text in files.items():
        extra = tmp_path / f"conf_tp{tp}" / "parallel"
        extra.mkdir(parents=True)
        extra.joinpath("extra.yaml").write_text(text)
        paths = ",".join([*searchpath, f"file://{extra.parent}"])
        jobs.append(["device=npu", "model=122b", "parallel=extra", f"hydra.searchpath=[{paths}]"])
    plain = [loader.load_sweep_config(master, job) for job in jobs]
    with defaults_lists_shared():
        shared = [loader.load_sweep_config(master, job) for job in jobs]
    assert [c.parallel.tp for c in plain] == [2, 4] == [c.parallel.tp for c in shared]
    assert [_text(c) for c in shared] == [_text(c) for c in plain]


def test_a_job_that_fails_to_compose_fails_the_same_inside(loader_and_master):
    loader, master = loader_and_master
    for bad in (["parallel=no_such_layout"], ["model=122b", "+device=npu"], ["no_such_key=1"]):
        with pytest.raises((MissingConfigException, ConfigCompositionException)) as plain:
            loader.load_sweep_config(master, bad)
        with defaults_lists_shared(), pytest.raises(type(plain.value)) as shared:
            loader.load_sweep_config(master, ["device=npu", "model=122b"])  # fills the shared answers
            loader.load_sweep_config(master, bad)
        assert str(shared.value) == str(plain.value)


def test_hydras_loader_is_itself_again_after_the_batch_even_after_an_error(loader_and_master):
    loader, master = loader_and_master
    build = config_loader_impl.create_defaults_list
    with pytest.raises(RuntimeError), defaults_lists_shared():
        assert config_loader_impl.create_defaults_list is not build
        raise RuntimeError
    assert config_loader_impl.create_defaults_list is build


def test_the_entrypoint_gives_python_its_collector_settings_back(cli):
    before = gc.get_threshold()
    cli("device=npu", "model=122b", "dry_run=true")
    assert gc.get_threshold() == before == collector.PYTHON_DEFAULT
    assert gc.get_freeze_count() == 0
    assert "HYDRA_FULL_ERROR" not in os.environ
