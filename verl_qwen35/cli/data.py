"""`verl-qwen35 data --out DIR`: fetch the geo3k parquet files the presets read.

Its own command, the same on every device: verl's script downloaded data only in its GPU
branch. Launching never downloads; preflight points here when a file is missing.
"""

import contextlib
import importlib.util
import os
import re
import shutil
import sys
from pathlib import Path

from verl_qwen35.checks.files import DATA_FILES
from verl_qwen35.installed import launch_install_command
from verl_qwen35.terminal import SafeParser, say

REPO = "tyzhu/geo3k"
# A Hugging Face repository id: owner/name, letters, digits, `-`, `_`, `.` (no `..`, no path): the hub client
# would otherwise take `../../etc` as a path and fail with a traceback.
REPO_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,95}/[A-Za-z0-9][A-Za-z0-9_.-]{0,95}")
# Where huggingface_hub keeps its lock and metadata files under a local_dir.
HUB_CACHE = Path(".cache") / "huggingface"
FILES = tuple(DATA_FILES.values())  # train, test: what the preflight's advice says this writes


class OfflineError(RuntimeError):
    """The hub could not be reached (or no hub client is installed); nothing was half-written."""


def fetch(out: Path, repo: str = REPO, files: tuple[str, ...] = FILES) -> list[Path]:
    """Download each missing file of the dataset repo into `out`; keep what is already there."""
    made_out = not out.exists()
    out.mkdir(parents=True, exist_ok=True)
    made_cache = not (out / HUB_CACHE).exists()
    try:
        return _fetch_each(out, repo, files)
    except BaseException:
        if made_cache:  # the hub client's lock files of a failed fetch: nothing left behind
            shutil.rmtree(out / HUB_CACHE, ignore_errors=True)
            with contextlib.suppress(OSError):
                (out / HUB_CACHE.parent).rmdir()
        if made_out:
            with contextlib.suppress(OSError):
                out.rmdir()  # only when empty
        raise


def _fetch_each(out: Path, repo: str, files: tuple[str, ...]) -> list[Path]:
    fetched = []
    for name in files:
        target = out / name
        if target.is_file() and target.stat().st_size > 0:
            say(f"skip   {target} (already there, {target.stat().st_size / 2**20:.1f} MiB)")
            fetched.append(target)
            continue
        say(f"fetch  {repo}/{name} -> {target} ...", flush=True)
        fetched.append(_download(repo, name, out))
        say(f"done   {target} ({target.stat().st_size / 2**20:.1f} MiB)")
    return fetched


def _download(repo: str, name: str, out: Path) -> Path:
    if importlib.util.find_spec("huggingface_hub") is None:  # a config-only install; verl's runtime brings it
        raise OfflineError(
            f"huggingface_hub is not installed here: pip install huggingface_hub (or {launch_install_command()})"
        )
    from huggingface_hub import hf_hub_download
    from huggingface_hub.errors import HfHubHTTPError, LocalEntryNotFoundError

    try:
        return Path(hf_hub_download(repo_id=repo, repo_type="dataset", filename=name, local_dir=out))
    except (LocalEntryNotFoundError, HfHubHTTPError, OSError) as err:
        offline = " (HF_HUB_OFFLINE is set)" if os.environ.get("HF_HUB_OFFLINE") else ""
        raise OfflineError(
            f"could not fetch {repo}/{name} from the Hugging Face hub{offline}: {type(err).__name__}. "
            f"On a machine without hub access, copy {', '.join(FILES)} into {out} by hand "
            f"(or set HF_ENDPOINT to a mirror) and run this again."
        ) from err


def main(argv: list[str] | None = None) -> int:
    parser = SafeParser(prog="verl-qwen35 data", description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path.home() / "data" / "geo3k", help="target directory")
    parser.add_argument("--repo", default=REPO, help="Hugging Face dataset repository")
    args = parser.parse_args(argv)
    if not REPO_ID.fullmatch(args.repo) or ".." in args.repo:
        said = f"error  --repo {args.repo!r}: not a Hugging Face repository id (owner/name, e.g. {REPO})"
        say(said, file=sys.stderr)
        return 2
    if args.out.exists() and not args.out.is_dir():
        say(f"error  --out {args.out}: a file, not a directory; name a directory (made if missing)", file=sys.stderr)
        return 2
    try:
        fetch(args.out, args.repo)
    except OfflineError as err:
        say(f"error  {err}", file=sys.stderr)
        return 2
    except OSError as err:  # the directory cannot be made or written (a parent is a file, no permission, full)
        where = err.filename or args.out
        say(f"error  --out {args.out}: {where}: {err.strerror or err}; choose another directory", file=sys.stderr)
        return 2
    say(f"ready  {args.out}: data.train_files={args.out / FILES[0]} data.val_files={args.out / FILES[1]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
