"""A sweep's directories: one sweep's, never a single run's, and nothing in them written through a link.

A reused sweep directory may hold what someone planted: a link named `multirun.yaml` or `summary.csv`, a job
directory `0` that is a link, a link inside a job's `.hydra/`. Hydra's launcher writes each job's `.hydra/` with
plain `open` (hydra/core/utils.py `_save_config`) after making the job directory with `mkdir(parents=True,
exist_ok=True)`, both of which follow links. So before anything is written:

- `check_sweep_dir` refuses a sweep directory that holds a single run's records (its `.hydra/`) or a link where
  the sweep writes a file (multirun.yaml, the summaries) or a job directory;
- `check_job_dir` refuses a job directory that is (or lies below) a link, holds a link, or holds a single run's
  records; an earlier sweep's job there (see `_sweep_job`) is this sweep's to replace, as the sweep holds the
  directory's lock (run/sweep_lock.py);
- `claim_job_dir` makes the job directory without following links and its `.hydra/` new (mkdir is atomic),
  so Hydra's files go into a directory this sweep just made, as a single run's do (config/prewrite.py
  `claim_run_dir`).
"""

import os
import re
import shutil
from collections.abc import Iterable
from pathlib import Path

from verl_qwen35.config.yaml_files import load_json, read_text
from verl_qwen35.disk import kind_at, open_below
from verl_qwen35.errors import UserError
from verl_qwen35.records.summary import SUMMARY_CSV, SUMMARY_JSON
from verl_qwen35.records.verdict import VERDICT  # every sweep job writes it first, with its sweep's id

RECORDS = ".hydra"  # Hydra's default `hydra.output_subdir`
SWEEP_FILES = ("multirun.yaml", SUMMARY_CSV, SUMMARY_JSON)
MULTIRUN = re.compile(r"^  mode: MULTIRUN$", re.M)  # hydra.yaml of a sweep's job (hydra.mode, Hydra's RunMode)
MAX_ENTRIES = 10_000  # entries of a job directory looked at for links; a larger one is refused, not listed


def _key(sweep_dir: Path) -> str:
    return f"hydra.sweep.dir={sweep_dir}"


def check_sweep_dir(sweep_dir: Path, records: str = RECORDS) -> None:
    """The sweep directory itself: not a single run's, no link where the sweep writes its own files."""
    if not sweep_dir.is_dir():
        return
    fd = os.open(sweep_dir, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        if kind_at(fd, records) is not None:
            raise UserError(
                f"{_key(sweep_dir)}: holds a single run's records ({sweep_dir / records}); a sweep never writes "
                "into a run's directory (hydra.run.dir). Give the sweep its own directory (leave hydra.sweep.dir "
                "out: the default ends in a random tag)"
            )
        for name in SWEEP_FILES:
            if kind_at(fd, name) not in (None, "file"):
                raise UserError(
                    f"{_key(sweep_dir)}: {sweep_dir / name} is a symbolic link or not a regular file; nothing is "
                    "written through a link planted in a sweep directory (remove it, or give the sweep another "
                    "hydra.sweep.dir)"
                )
    finally:
        os.close(fd)


def check_job_dirs(sweep_dir: Path, job_dirs: Iterable[Path], records: str | None = RECORDS) -> None:
    """Every job directory of the sweep (see `check_job_dir`), and no two jobs given one directory."""
    seen: dict[Path, int] = {}
    for num, job_dir in enumerate(job_dirs):
        if (first := seen.setdefault(job_dir, num)) != num:
            raise UserError(
                f"hydra.sweep.subdir: jobs {first} and {num} both write {job_dir}; give each job its own directory "
                "(leave hydra.sweep.subdir out: the default is the job's number)"
            )
        check_job_dir(sweep_dir, job_dir, records)


def check_job_dir(sweep_dir: Path, job_dir: Path, records: str | None = RECORDS) -> None:
    """Nothing written: `job_dir` below `sweep_dir` without a link on the way or in it, and no single run's records."""
    where = f"{_key(sweep_dir)}: job directory {job_dir}"
    try:
        fd = open_below(sweep_dir, job_dir, make=False)
    except FileNotFoundError:
        return  # made by the claim, fresh
    except UserError as err:
        raise UserError(f"{where}: {err}") from None
    except OSError as err:
        raise UserError(f"{where} cannot be opened ({err.strerror or err}); give the sweep another directory") from None
    try:
        _check_entries(fd, where)
        kind = kind_at(fd, records) if records else None
        if kind is not None and (kind != "dir" or not _sweep_job(job_dir, records)):
            raise UserError(
                f"{where} holds a single run's records ({records}/ without a sweep job's {VERDICT}); a sweep never "
                "replaces a run's records (hydra.run.dir). Give the sweep its own hydra.sweep.dir"
            )
    finally:
        os.close(fd)


def _check_entries(dir_fd: int, where: str) -> None:
    """No link among the job directory's own entries: each is a name the job writes (its log, verdict.json,
    launch.yaml, ...) and none of them is ever a link a sweep made."""
    with os.scandir(dir_fd) as entries:
        for count, entry in enumerate(entries):
            if count >= MAX_ENTRIES:
                raise UserError(f"{where} holds more than {MAX_ENTRIES} entries; not a sweep's job directory")
            if entry.is_symlink():
                raise UserError(
                    f"{where}: {entry.name} is a symbolic link; nothing is written through a link planted in a "
                    "sweep directory (remove it, or give the sweep another hydra.sweep.dir)"
                )


def _sweep_job(job_dir: Path, records: str) -> bool:
    """An earlier sweep's job: its records directory still empty (claimed, the job never started), its
    verdict.json naming a sweep (a single run's names none: `sweep_id` null), or its Hydra record saying it
    was a multirun's job (a job stopped before its first verdict)."""
    try:
        with os.scandir(job_dir / records) as entries:
            if next(entries, None) is None:
                return True
    except OSError:
        return False
    try:
        record = load_json(job_dir / VERDICT)
        if isinstance(record, dict) and isinstance(record.get("sweep_id"), str):
            return True
    except UserError:
        pass
    try:
        return MULTIRUN.search(read_text(job_dir / records / "hydra.yaml")) is not None
    except UserError:
        return False


def claim_job_dir(sweep_dir: Path, job_dir: Path, records: str | None = RECORDS) -> None:
    """`job_dir` made below `sweep_dir` without following links, checked (`check_job_dir`), and its `records`
    directory (None: Hydra writes none) made new by this sweep: an earlier sweep's records there are removed first."""
    check_job_dir(sweep_dir, job_dir, records)
    where = f"{_key(sweep_dir)}: job directory {job_dir}"
    try:
        fd = open_below(sweep_dir, job_dir, make=True)
    except UserError as err:
        raise UserError(f"{where}: {err}") from None
    except OSError as err:
        raise UserError(f"{where} cannot be made ({err.strerror or err}); give the sweep another directory") from None
    try:
        if records is None:
            return
        if kind_at(fd, records) == "dir":  # an earlier sweep's job (check_job_dir): replaced, never written into
            shutil.rmtree(records, dir_fd=fd)
        os.mkdir(records, dir_fd=fd)
    except FileExistsError:
        raise UserError(
            f"{where}: {records} appeared while the sweep claimed it (another run?); nothing written"
        ) from None
    except OSError as err:
        raise UserError(f"{where}: {records} cannot be made ({err.strerror or err})") from None
    finally:
        os.close(fd)
