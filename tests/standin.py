"""Stand-ins of installed packages: a folder to put first on PYTHONPATH holding `<name>-<version>.dist-info/METADATA`
(what `importlib.metadata` reads) and, where asked, an importable package (what `find_spec` finds). Used to run the
product as a user with another stack would, in a subprocess: nothing is installed, nothing is patched."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
VERL_MAIN_CONFIG = Path(__file__).resolve().parent / "data" / "verl_main" / "verl" / "trainer" / "config"


def add_dist(root: Path, name: str, version: str, requires: tuple[str, ...] = (), module: str | None = None) -> None:
    """A distribution's metadata (and an empty importable `module`, dotted names as namespace folders)."""
    info = root / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    lines = [
        "Metadata-Version: 2.1",
        f"Name: {name}",
        f"Version: {version}",
        *(f"Requires-Dist: {r}" for r in requires),
    ]
    (info / "METADATA").write_text("\n".join(lines) + "\n")
    if module:
        *parents, last = module.split(".")
        folder = root.joinpath(*parents, last)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "__init__.py").touch()


def verl_standin(root: Path, version: str, config: Path = VERL_MAIN_CONFIG) -> Path:
    """An installed verl `version` whose trainer config files are `config` (verl main's, by default)."""
    add_dist(root, "verl", version, module="verl")
    (root / "verl" / "trainer").mkdir(exist_ok=True)
    shutil.copytree(config, root / "verl" / "trainer" / "config", dirs_exist_ok=True)
    return root


def run_with(root: Path, *argv: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """`python ARGV` with the stand-ins first on the path, in `cwd`."""
    env = os.environ | {"PYTHONPATH": os.pathsep.join([str(root), str(REPO)]), "RAY_ADDRESS": "local"}
    env.pop("HYDRA_FULL_ERROR", None)
    return subprocess.run(
        [sys.executable, *argv], cwd=cwd or root, env=env, capture_output=True, text=True, timeout=120, check=False
    )


# The product's own dependencies (what `verl-qwen35 doctor` and a fast dry run import), linked into an isolated
# path so that nothing else this venv holds is seen: an image's package set is then exactly the stand-ins.
OWN = ("omegaconf", "hydra", "antlr4", "yaml", "_yaml", "packaging", "tabulate")


def isolated(root: Path) -> Path:
    """`root` plus links to the product's own dependencies (for `run_isolated`)."""
    import importlib.util

    for name in OWN:
        spec = importlib.util.find_spec(name)
        if spec is None:
            continue
        where = Path(next(iter(spec.submodule_search_locations))) if spec.submodule_search_locations else None
        where = where or Path(spec.origin)
        if not (root / where.name).exists():
            (root / where.name).symlink_to(where)
    return root


def run_isolated(root: Path, *argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """`python -S ARGV`: no site-packages, only the stand-ins in `root` (see `isolated`) and this checkout."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(("ASCEND_", "HYDRA_"))}
    full = base | {"PYTHONPATH": os.pathsep.join([str(root), str(REPO)])} | (env or {})
    return subprocess.run(
        [sys.executable, "-S", *argv], cwd=root, env=full, capture_output=True, text=True, timeout=120, check=False
    )
