"""The installed verl's config schema, read from package metadata (no import)."""

from functools import cache
from importlib.metadata import PackageNotFoundError, version

SCHEMAS = {"0.8": "v0_8", "0.9": "v0_9"}


@cache
def installed_verl_version() -> str:
    try:
        return version("verl")
    except PackageNotFoundError as err:
        from verl_qwen35.install import VerlNotInstalled, verl_missing_message

        raise VerlNotInstalled(verl_missing_message()) from err


def installed_verl_schema() -> str:
    """The `verl_schema` option matching the installed verl, or a clear refusal."""
    found = installed_verl_version()
    minor = ".".join(found.split(".")[:2])
    if minor not in SCHEMAS:
        supported = ", ".join(f"{m}.x" for m in SCHEMAS)
        raise RuntimeError(f"verl {found} is installed; verl_qwen35 supports verl {supported}")
    return SCHEMAS[minor]
