"""The layout picture: every preset's drawn (PNG, and SVG), of a reasonable size and not blank, from 1 x 8 to
16 x 16; from the command line with `plan --picture` and a dry run's `plan.picture`; bad targets exit 2."""

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
from matplotlib.image import imread

from tests.commands import REPO
from tests.configs import resolved
from verl_qwen35.config.choices import presets
from verl_qwen35.errors import UserError
from verl_qwen35.model.groups import Groups
from verl_qwen35.model.layout import Layout
from verl_qwen35.review.picture import Caption, draw, draw_config

PRESETS = [f"{m}_{d}" for m, d in presets()]


def pixels(path: Path) -> np.ndarray:
    image = imread(path)
    assert image.ndim == 3 and image.shape[2] in (3, 4)
    return image[:, :, :3]


def assert_a_picture(path: Path, lo: Layout) -> None:
    """Big enough to read a device (~1 in at 100 dpi), not absurd, and mostly drawn on."""
    image = pixels(path)
    height, width, _ = image.shape
    assert 800 <= width <= 5000 and 600 <= height <= 5000, (width, height)
    cell_px = min(width / lo.devices_per_node, height / lo.nnodes)
    assert cell_px >= 50, f"a device gets only {cell_px:.0f} px"
    not_white = (image < 0.97).any(axis=2).mean()
    assert not_white > 0.25, f"only {not_white:.0%} of the picture is drawn on"
    rgb = (image * 255).astype(np.uint32)  # one integer a colour, counted in linear time (np.unique sorts)
    colours = np.count_nonzero(np.bincount(((rgb[..., 0] << 16) | (rgb[..., 1] << 8) | rgb[..., 2]).ravel()))
    assert colours > 50, f"{colours} colours"


@pytest.mark.parametrize("preset", PRESETS)
def test_every_presets_layout_is_drawn(preset, tmp_path):
    cfg = resolved(preset)
    path = draw_config(cfg, tmp_path / f"{preset}.png", "--picture")
    assert path == tmp_path / f"{preset}.png"
    assert_a_picture(path, Layout.of(cfg))
    assert os.listdir(tmp_path) == [f"{preset}.png"], "no temporary file left"


def test_an_svg_is_svg_text_with_every_device(tmp_path):
    cfg = resolved("122b_npu")
    path = draw_config(cfg, tmp_path / "layout.svg", "plan.picture")
    root = ET.parse(path).getroot()
    assert root.tag.endswith("svg")
    texts = [t for t in root.iter() if t.tag.endswith("text")]
    said = "".join("".join(t.itertext()) for t in texts)
    assert cfg.model.name in said and "node 3" in said and "#63" in said  # 4 x 16: the last device's rank
    assert len(texts) > 2 * 64


@pytest.mark.parametrize(
    "lo",
    [
        Layout(1, 8, 8, 1, 1, 8, 1, None, 8, 1, 1, 1),
        Layout(16, 16, 2, 8, 2, 8, 2, 2, 8, 32, 1, 256),
    ],
    ids=["1x8", "16x16_cp2_etp2_pp8"],  # 16 x 16 at TP 2 / PP 4 / EP 64 is the 397b_npu preset's, drawn above
)
def test_the_smallest_and_largest_grids_are_drawn(lo, tmp_path):
    path = draw(Groups(lo), Caption("Qwen3.5-test", "npu", "A3"), tmp_path / "x.png", "--picture")
    assert_a_picture(path, lo)


def test_a_suffix_other_than_png_or_svg_is_refused_naming_the_flag(tmp_path):
    with pytest.raises(UserError, match=r"--picture .*x\.jpg: a picture is a \.png or an \.svg"):
        draw_config(resolved("35b_gpu"), tmp_path / "x.jpg", "--picture")
    assert not list(tmp_path.iterdir())


def test_a_directory_that_cannot_be_written_leaves_nothing(tmp_path):
    (tmp_path / "file").write_text("")
    with pytest.raises(UserError, match=r"plan\.picture=.*does not exist"):
        draw_config(resolved("35b_gpu"), tmp_path / "file" / "x.png", "plan.picture")
    if not Path("/proc/self").is_dir():
        pytest.skip("no /proc: no directory nobody can create files in")
    with pytest.raises(UserError, match=r"plan\.picture=/proc/x\.png: cannot write into /proc"):
        draw_config(resolved("35b_gpu"), Path("/proc/x.png"), "plan.picture")


def test_a_picture_replaces_an_older_one_whole(tmp_path):
    path = tmp_path / "x.png"
    path.write_text("an older file")
    draw_config(resolved("35b_gpu"), path, "--picture")
    assert_a_picture(path, Layout.of(resolved("35b_gpu")))
    assert os.listdir(tmp_path) == ["x.png"]


# The command line ------------------------------------------------------------------------------------------


def test_plan_picture_writes_the_file_and_says_where(cli, tmp_path):
    done = cli("plan", "model=35b", "device=gpu", "--top", "1", "--picture", "layout.png")
    assert done.code == 0, done.err
    assert f"picture: {tmp_path / 'layout.png'}" in done.out
    assert_a_picture(tmp_path / "layout.png", Layout(1, 8, 2, 1, 1, 8, 1, None, 8, 1, 1, 1))


def test_plan_json_keeps_stdout_json_and_says_the_picture_on_stderr(cli, tmp_path):
    done = cli("plan", "model=35b", "device=gpu", "--top", "1", "--json", "--picture", "layout.svg")
    assert done.code == 0, done.err
    assert json.loads(done.out)
    assert f"picture: {tmp_path / 'layout.svg'}" in done.err
    assert (tmp_path / "layout.svg").stat().st_size > 10_000


def test_plan_picture_draws_the_overrides_layout(cli, tmp_path):
    """Another listed layout is pictured by adding its override line: the picture follows the overrides."""
    done = cli("plan", "model=35b", "device=gpu", "parallel.tp=1", "parallel.gen_tp=4", "parallel.gen_dp=2",
               "parallel.gen_ep=8", "--top", "1", "--picture", "other.svg")  # fmt: skip
    assert done.code == 0, done.err
    said = "".join(ET.parse(tmp_path / "other.svg").getroot().itertext())
    assert "tp=1 pp=1" in said and "1 replica(s) of TP 4 x DP 2 x PP 1 = 8 devices; expert parallel on" in said


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("layout.jpg", "--picture layout.jpg: a picture is a .png or an .svg file"),
        ("nowhere/layout.png", "--picture nowhere/layout.png: the directory"),
        (".", "--picture .: is a directory"),
    ],
)
def test_plan_picture_that_cannot_be_written_exits_2_before_the_search(cli, tmp_path, target, message):
    done = cli("plan", "model=35b", "device=gpu", "--picture", target)
    assert done.code == 2
    assert message in done.err and done.err.count("error:") == 1
    assert "s/step" not in done.out  # nothing searched
    assert not list(tmp_path.glob("**/*.png")) and not list(tmp_path.glob("**/*.jpg"))


def test_plan_does_not_draw_a_layout_the_preflight_refuses(cli, tmp_path):
    done = cli("plan", "model=35b", "device=gpu", "parallel.tp=3", "--top", "1", "--picture", "x.png")
    assert done.code == 0, done.err  # the planner still lists the layouts that fit
    (line,) = [ln for ln in done.out.splitlines() if ln.startswith("picture:")]
    assert line.startswith("picture: not drawn: the preflight refuses the config's own layout: ")
    assert "not divisible by tp*pp*cp" in line  # the preflight's own reason
    assert not (tmp_path / "x.png").exists()


def test_dry_run_draws_plan_picture_and_prints_it_in_the_plan(cli, tmp_path):
    done = cli("model=122b", "device=npu", "dry_run=true", f"plan.picture={tmp_path / 'x.png'}")
    assert done.code == 0, done.err
    assert f"picture    {tmp_path / 'x.png'}" in done.out.splitlines()
    assert_a_picture(tmp_path / "x.png", Layout(4, 16, 2, 4, 1, 16, 1, None, 16, 1, 1, 1))


def test_dry_run_with_a_bad_plan_picture_exits_2_naming_the_key(cli, tmp_path):
    done = cli("model=35b", "device=gpu", "dry_run=true", "plan.picture=x.gif")
    assert done.code == 2
    assert "plan.picture=x.gif: a picture is a .png or an .svg file" in done.err
    assert "verdict" not in done.out + done.err  # refused before the preflight ran
    done = cli("model=35b", "device=gpu", "dry_run=true", f"plan.picture={tmp_path}/no/x.svg")
    assert done.code == 2 and "plan.picture=" in done.err and "does not exist" in done.err


def test_dry_run_of_a_refused_layout_draws_nothing_and_says_so(cli, tmp_path):
    done = cli("model=35b", "device=gpu", "dry_run=true", "parallel.tp=3", "plan.picture=x.png")
    assert done.code == 2
    assert "picture    not drawn: the preflight refuses this config" in done.out
    assert not (tmp_path / "x.png").exists()


def test_the_default_draws_nothing(cli, tmp_path):
    done = cli("model=35b", "device=gpu", "dry_run=true")
    assert done.code == 0 and "picture" not in done.out
    assert not list(tmp_path.glob("**/*.png")) and not list(tmp_path.glob("**/*.svg"))


def without_matplotlib(tmp_path: Path, *argv: str) -> subprocess.CompletedProcess:
    """The command where `import matplotlib` fails, as in a config-only install (no `plots` extra)."""
    code = (
        "import sys; sys.modules['matplotlib'] = None\n"  # makes `import matplotlib` raise ImportError
        "from verl_qwen35.cli.main import main\n"
        f"sys.argv = ['verl-qwen35', *{list(argv)!r}]\n"
        "sys.exit(main())\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True)


@pytest.mark.parametrize(
    ("argv", "flag"),
    [
        (("plan", "model=35b", "device=gpu", "--picture", "x.png"), "--picture"),
        (("model=35b", "device=gpu", "dry_run=true", "plan.picture=x.png"), "plan.picture"),
    ],
)
def test_without_matplotlib_one_message_names_the_extra(tmp_path, argv, flag):
    done = without_matplotlib(tmp_path, *argv)
    assert done.returncode == 2, done.stderr
    assert f"{flag} draws with matplotlib, which is not installed here: pip install 'verl-qwen35[plots]'" in done.stderr
    assert "Traceback" not in done.stderr and not (tmp_path / "x.png").exists()


def test_a_dry_run_without_a_picture_imports_no_drawing_code(tmp_path):
    code = (
        "import sys\n"
        "from verl_qwen35.cli.main import main\n"
        "sys.argv = ['verl-qwen35', 'model=35b', 'device=gpu', 'dry_run=true']\n"
        "try:\n    main()\nexcept SystemExit as stop:\n    assert not stop.code, stop.code\n"
        "print(sorted(m for m in sys.modules if m.startswith(('matplotlib', 'verl_qwen35.review.picture'))))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[]"


def test_a_cluster_too_large_to_read_is_refused_naming_the_flag(tmp_path):
    lo = Layout(256, 8, 2, 4, 1, 64, 1, None, 8, 16, 1, 128)
    with pytest.raises(UserError, match=r"--picture .*x\.png: 256 nodes x 8 devices would be unreadable"):
        draw(Groups(lo), Caption("Qwen3.5-test", "gpu", "H100"), tmp_path / "x.png", "--picture")
    assert not list(tmp_path.iterdir())
