"""The resume drill submitted to a cluster: its resume job (trial=drill_resume) must start after its save job
(trial=drill_save) has written the checkpoint (docs/planning.md, Trial runs).

Run here with `-m`, Hydra's launcher runs a sweep's jobs one after another and the order holds. Submitted, each job
is queued on its own and may start first. The jobs of one sweep are submitted in order by one process, so the save
job's submission is on record before the resume job's: its verdict.json (records/verdict.py) carries the checkpoint
it writes (`drill_save`) beside its cluster job id. Slurm then queues the resume job with
`--dependency=afterok:<that id>` (run/submit/slurm.py); Ray's Job API and KubeRay have no job dependencies, so the Ray
backends refuse the resume job in the same sweep as its save job (run/submit/ray_job.py, kuberay.py): it is
submitted alone once the save job has finished. On Slurm, a resume job whose checkpoint is neither saved yet nor
saved by a job of this sweep is refused, never submitted blind.
"""

from dataclasses import dataclass
from pathlib import Path

from omegaconf import DictConfig

from verl_qwen35.checks.trainer import TRACKER, drill_path
from verl_qwen35.records.verdict import VERDICT, note, read_record
from verl_qwen35.run.submit.base import SubmitError
from verl_qwen35.run.sweep import active_sweep

DRILL_SAVE = "drill_save"  # verdict.json: the checkpoint a submitted save job writes (dry or not)


@dataclass(frozen=True)
class SaveJob:
    """The save job of this sweep that writes the checkpoint a resume job reads."""

    job: int  # its number in the sweep
    job_id: str | None  # its cluster job id; None: submitted in a dry run
    option: str  # its `trial=` override, as typed


def is_resume(cfg: DictConfig) -> bool:
    trial = cfg.get("trial")
    return hasattr(trial, "get") and trial.get("drill") == "resume"


def note_submitted(cfg: DictConfig, output_dir: str, job_id: str | None) -> None:
    """Record a submission in the job's verdict: its cluster job id, and for a drill's save job the checkpoint."""
    fields: dict[str, str] = {"job_id": job_id} if job_id else {}
    trial = cfg.get("trial")
    if hasattr(trial, "get") and trial.get("drill") == "save":
        fields[DRILL_SAVE] = str(drill_path(cfg))
    if fields:
        note(output_dir, fields)


def save_job(cfg: DictConfig) -> SaveJob | None:
    """The latest job of this sweep submitted as the save job of this resume job's checkpoint, or None."""
    sweep, wanted = active_sweep(), drill_path(cfg)
    if sweep is None or wanted is None:
        return None
    found = []
    for path in sweep.sweep_dir.glob(f"*/{VERDICT}"):
        record = read_record(path)
        if record and record.get("sweep_id") == sweep.sweep_id and record.get(DRILL_SAVE) == wanted:
            found.append(record)
    if not found:
        return None
    last = max(found, key=lambda r: r.get("job", -1) if type(r.get("job")) is int else -1)
    job_id = last.get("job_id")
    overrides = last.get("overrides") if isinstance(last.get("overrides"), list) else []
    option = next((o for o in overrides if isinstance(o, str) and o.startswith("trial=")), "trial=drill_save")
    return SaveJob(last.get("job", -1), job_id if isinstance(job_id, str) else None, option)


def saved(cfg: DictConfig) -> bool:
    """The checkpoint is there already: its actor folder, and verl's tracker file, written once a save is whole
    (ray_trainer.py 1046-1049, `_save_checkpoint`: after the actor's save)."""
    path = drill_path(cfg)
    return path is not None and (Path(path) / "actor").is_dir() and (Path(path).parent / TRACKER).is_file()


def wait_for(cfg: DictConfig) -> SaveJob | None:
    """For a resume job about to be submitted: the save job of this sweep it must start after; None when it is no
    drill resume or its checkpoint is saved already. SubmitError, naming trial=drill_resume, when neither."""
    if not is_resume(cfg) or saved(cfg):
        return None
    if found := save_job(cfg):
        return found
    raise SubmitError(
        f"trial={cfg.trial.name}: the resume drill's second job resumes {drill_path(cfg)}, which is not saved yet, "
        "and no job submitted earlier in this sweep saves it (trial=drill_save with the same trial.steps and "
        "trial.checkpoint_dir; a refused save job submits nothing); submit both in one -m sweep, the save job first "
        "(as `verl-qwen35 plan --trial` writes it), or this job alone once the save job has finished"
    )


def refuse_unordered(cfg: DictConfig, backend: str) -> None:
    """A backend without job dependencies (Ray's Job API, KubeRay) cannot start the resume job after the save job:
    both in one sweep would run at once, so the resume job is refused, saying how to submit it. Alone, it is
    submitted: the checkpoint is on the cluster's storage, which this machine may not see (the relaunch there
    refuses a missing one)."""
    if is_resume(cfg) and (save := save_job(cfg)):
        raise SubmitError(
            f"trial={cfg.trial.name}: submit={backend} has no job dependencies, so the resume drill's second job "
            f"could start before sweep job {save.job} ({save.option}) has saved {drill_path(cfg)}; submit this job "
            "alone once that job has finished, or use submit=slurm, which queues it after the save job "
            "(--dependency=afterok)"
        )
