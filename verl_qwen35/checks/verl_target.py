"""Which verl the version-dependent rules follow, and what the verdict says about it.

The config is composed from the installed verl's own files (its keys, its schema, the field lists of its
release); the rules that depend on verl's behaviour (what `auto_set_device` rewrites, which arguments it hands
vLLM, what it warns is deprecated) follow `plan.verl` when a dry run names the cluster's verl, else the
installed one. A verl newer than the newest known release is judged by its own files with the newest known
release's rules, and the verdict says so (verl_qwen35/verl_release.py).
"""

from dataclasses import dataclass

from omegaconf import DictConfig, OmegaConf

from verl_qwen35.checks.problem import Problem, error, one_of, warning
from verl_qwen35.data.matrices import stack_ids
from verl_qwen35.errors import UserError
from verl_qwen35.installed import installed_verl, installed_verl_version
from verl_qwen35.verl_release import NEWEST, VerlStanding, release_of, shown, standing

PLANNED = "plan.verl"
STACK = "plan.stack"
# The one key the schemas differ by: whether verl's Megatron engine config has `grad_offload`
# (conf/verl_schema/*.yaml). A schema of a user's own --config-dir is not judged here.
GRAD_OFFLOAD = {"v0_8": True, "v0_9_0": True, "v0_9": False}
SCHEMA_OF = {
    "v0_8": "verl 0.8.x's config (its Megatron config has grad_offload)",
    "v0_9_0": "verl 0.9.0's config (grad_offload still there, as in 0.8.x)",
    "v0_9": "the config of verl 0.9.1 and later, without grad_offload",
}


@dataclass(frozen=True)
class VerlInUse:
    """The verl whose behaviour the rules follow: the planned one (`plan.verl`) or the installed one."""

    version: str
    planned: bool

    @property
    def release(self) -> tuple[int, ...]:
        return release_of(self.version)

    @property
    def minor(self) -> tuple[int, int]:
        return (self.release + (0, 0))[:2]

    @property
    def shown(self) -> str:
        return f"{self.version} ({PLANNED})" if self.planned else f"{self.version} (installed)"


def _planned(cfg: DictConfig | None) -> str | None:
    chosen = OmegaConf.select(cfg, PLANNED, default=None) if cfg is not None else None
    return None if chosen is None else str(chosen).strip()


def verl_in_use(cfg: DictConfig | None = None) -> VerlInUse:
    """`plan.verl` when it names a usable verl release, else the installed verl."""
    chosen = _planned(cfg)
    if chosen is not None and not planned_verl_problems(cfg, errors_only=True):
        return VerlInUse(chosen, True)
    return VerlInUse(installed_verl_version(), False)


def planned_standing(chosen: str) -> VerlStanding | str:
    """The standing of a planned verl, or why it cannot be planned for."""
    if len(release_of(chosen)) < 2:
        return f"={chosen!r}: give a verl release as MAJOR.MINOR.PATCH, e.g. 0.8.0 (the Ascend 9.0.0 image's)"
    try:
        return standing(chosen)
    except UserError as err:
        return f"={chosen}: {err}"


def stack_problems(cfg: DictConfig) -> list[Problem]:
    """A `plan.stack` the version matrices do not have, naming those they have."""
    chosen = OmegaConf.select(cfg, STACK, default=None)
    if chosen is None or str(chosen) in stack_ids():
        return []
    return [error(STACK, f"={chosen!r} is no stack of the version matrices; {one_of(STACK, sorted(stack_ids()), '')}")]


def planned_verl_problems(cfg: DictConfig, errors_only: bool = False) -> list[Problem]:
    """A `plan.verl` that is not a release, is older than the oldest known, or differs from the installed verl
    at a launch (which runs the installed one); in a dry run, what judging for it on these files means."""
    if not errors_only and (unknown := stack_problems(cfg)):
        return unknown
    chosen = _planned(cfg)
    if chosen is None:
        return []
    found = planned_standing(chosen)
    if isinstance(found, str):
        return [error(PLANNED, found)]
    installed = installed_verl_version()
    if cfg.get("dry_run") is False and release_of(chosen) != release_of(installed):
        return [
            error(
                PLANNED,
                f"={chosen}: a launch runs the installed verl {installed}; {PLANNED} judges for another machine in a "
                f"dry run only (remove it, or install verl {chosen})",
            )
        ]
    if errors_only:
        return []
    notes = []
    if release_of(chosen) != release_of(installed):
        notes.append(
            warning(
                PLANNED,
                f"={chosen}: verl {chosen}'s version rules were followed, on a config composed from the installed "
                f"verl {installed}'s files (verl_schema={installed_verl().schema}); keys verl {chosen}'s own files "
                f"add or lack are judged as verl {installed} has them. To judge verl {chosen}'s own files, run the "
                f"dry run where it is installed: {install_command(chosen)}",
            )
        )
    if found.newer:
        notes.append(warning(PLANNED, f"={chosen}: {unverified_rules(chosen)}"))
    return notes


def install_command(version: str) -> str:
    """pip's command for a verl release; a development build (verl main reports 0.10.0.dev) is not on the index."""
    if "dev" in version:
        return "pip install --no-deps git+https://github.com/verl-project/verl.git (verl main)"
    return f"pip install --no-deps 'verl=={version}'"


def unverified_rules(version: str) -> str:
    return (
        f"verl {version} is newer than {shown(NEWEST)}, the newest this release knows: its rules were not verified "
        f"(the rules of verl {shown(NEWEST)} were applied)"
    )


def installed_verl_problems() -> list[Problem]:
    """The installed verl newer than the newest known release: judged by its own files, its rules unverified."""
    said = installed_verl().unverified
    return [warning("verl_schema", said)] if said else []


def schema_problems(schema: str | None) -> list[Problem]:
    """A `verl_schema` that composes a key the installed verl's config files lack (or lacks one they have):
    one error naming the schema, instead of the errors about keys the user never set that would follow."""
    wanted = installed_verl().schema
    if schema is None or schema not in GRAD_OFFLOAD or GRAD_OFFLOAD[schema] == GRAD_OFFLOAD[wanted]:
        return []
    installed = installed_verl_version()
    return [
        error(
            "verl_schema",
            f"={schema} composes {SCHEMA_OF[schema]}, but the installed verl {installed}'s files need "
            f"verl_schema={wanted} ({SCHEMA_OF[wanted]}): drop the override (it is picked from the installed verl). "
            f"To judge for a cluster that runs another verl, name it: {PLANNED}=0.8.0 (its version rules, on these "
            f"files), or run the dry run where that verl is installed",
        )
    ]
