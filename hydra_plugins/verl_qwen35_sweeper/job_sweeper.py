"""verl-qwen35's sweeper (conf/hydra/sweeper/verl_qwen35.yaml): Hydra's basic sweep, job for job, where a job
Hydra cannot compose is that job's refusal instead of the end of the sweep.

Hydra's basic sweeper composes every job of a batch before any runs (`Sweeper.validate_batch_is_legal`), and
one value the typed schema refuses (`parallel.vpp=two,null`) ends the whole sweep there, with no summary. This
one makes the same check job by job, through the same public method, so a job is composed no more often
than by the basic sweeper (once here, once by the launcher); the jobs that fit run with their own numbers,
in runs of consecutive jobs, through the configured launcher. Hydra loads sweepers only from the
`hydra_plugins` namespace (hydra/core/plugins.py); verl_qwen35/run/sweep.py runs the sweep and
verl_qwen35/records/ holds what it records.
"""

from collections.abc import Iterator, Sequence
from pathlib import Path

from hydra.core.hydra_config import HydraConfig
from hydra.core.plugins import Plugins
from hydra.core.utils import JobReturn
from hydra.plugins.launcher import Launcher
from hydra.plugins.sweeper import Sweeper
from hydra.types import HydraContext, TaskFunction
from omegaconf import DictConfig, OmegaConf, open_dict


class JobSweeper(Sweeper):
    """The basic sweeper's product of swept values, in its order and batches (`max_batch_size`)."""

    def __init__(self, max_batch_size: int | None = None, params: dict[str, str] | None = None) -> None:
        super().__init__()
        if max_batch_size is not None and max_batch_size < 1:
            raise ValueError(f"hydra.sweeper.max_batch_size={max_batch_size}: give a positive number or null")
        self.max_batch_size = max_batch_size
        self.params = params or {}
        self.hydra_context: HydraContext | None = None
        self.config: DictConfig | None = None
        self.launcher: Launcher | None = None

    def setup(self, *, hydra_context: HydraContext, task_function: TaskFunction, config: DictConfig) -> None:
        self.hydra_context = hydra_context
        self.config = config
        self.launcher = Plugins.instance().instantiate_launcher(
            hydra_context=hydra_context, task_function=task_function, config=config
        )

    def sweep(self, arguments: list[str]) -> list[Sequence[JobReturn]]:
        from verl_qwen35.disk import write_file  # loaded when a sweep runs, not at Hydra's scan
        from verl_qwen35.errors import UserError
        from verl_qwen35.run.stops import stop_point
        from verl_qwen35.run.sweep import expand, refuse_unstarted
        from verl_qwen35.run.sweep_dirs import check_job_dirs, check_sweep_dir, claim_job_dir

        assert self.config is not None and self.launcher is not None and self.hydra_context is not None
        jobs = expand([f"{k}={v}" for k, v in self.params.items()] + list(arguments), self.hydra_context.config_loader)
        sweep_dir = Path(str(self.config.hydra.sweep.dir)).absolute()
        records = _records(self.config)
        # Every job composed (a user mistake is that job's refusal) and its directory checked before anything is
        # written: a link or a single run's records where a job will write refuse the whole sweep.
        dirs: dict[int, Path] = {}
        for num, job in enumerate(jobs):
            stop_point()  # a Ctrl-C or SIGTERM stops the sweep between jobs, never inside Hydra's composition
            try:
                dirs[num] = self._job_dir(num, job, sweep_dir)
            except Exception as err:  # noqa: BLE001 - a user mistake is this job's refusal; a bug is re-raised
                refuse_unstarted(num, job, err)
        check_sweep_dir(sweep_dir, records or ".hydra")
        check_job_dirs(sweep_dir, dirs.values(), records or ".hydra")
        # As the basic sweeper saves it, by the one writer (never through a link planted as multirun.yaml).
        try:
            write_file(sweep_dir / "multirun.yaml", OmegaConf.to_yaml(self.config))
        except UserError as err:
            raise UserError(f"{err} (hydra.sweep.dir={sweep_dir}: no job started)") from None
        returns: list[Sequence[JobReturn]] = []
        size = self.max_batch_size or max(len(jobs), 1)
        for start in range(0, len(jobs), size):
            fits = [num for num in range(start, min(start + size, len(jobs))) if num in dirs]
            for first, count in _consecutive(fits):
                for num in range(first, first + count):
                    claim_job_dir(sweep_dir, dirs[num], records)  # before Hydra makes it and writes its records
                results = self.launcher.launch(jobs[first : first + count], initial_job_idx=first)
                for result in results:
                    _ = result.return_value  # as the basic sweeper: a job that raised raises here
                returns.append(results)
        return returns

    def _job_dir(self, num: int, overrides: list[str], sweep_dir: Path) -> Path:
        """Job `num`'s output directory, as Hydra's launcher will make it (hydra/core/utils.py run_job): the job's
        config composed (what `validate_batch_is_legal` does) and its `hydra.sweep.subdir` resolved with the job's
        number, the Hydra config set to the job's while it resolves, as run_job sets it."""
        assert self.hydra_context is not None and self.config is not None
        config = self.hydra_context.config_loader.load_sweep_config(self.config, list(overrides))
        with open_dict(config):
            config.hydra.job.id = num
            config.hydra.job.num = num
        before = HydraConfig.instance().cfg
        HydraConfig.instance().set_config(config)
        try:
            return (sweep_dir / str(OmegaConf.select(config, "hydra.sweep.subdir"))).absolute()
        finally:
            HydraConfig.instance().cfg = before


def _records(config: DictConfig) -> str | None:
    """The directory Hydra writes a job's records into (`hydra.output_subdir`, first component), None for none
    (null, or an absolute path typed on the command line: outside the sweep, the user's own)."""
    subdir = OmegaConf.select(config, "hydra.output_subdir", default=None)
    if subdir is None or Path(str(subdir)).is_absolute():
        return None
    return Path(str(subdir)).parts[0]


def _consecutive(nums: list[int]) -> Iterator[tuple[int, int]]:
    """(first, count) of each run of consecutive numbers: a launcher numbers its jobs from the first on."""
    start = 0
    for end in range(1, len(nums) + 1):
        if end == len(nums) or nums[end] != nums[end - 1] + 1:
            yield nums[start], end - start
            start = end
