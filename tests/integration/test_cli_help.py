"""`--presets`, `--help` and shell completion, as a user at a terminal meets them.

Presets and help are read from conf/ and --config-dir, so the listed layouts are checked
against what Hydra really composes. Completion is driven through the very bash function
that `eval "$(verl-qwen35 -sc install=bash)"` installs, with the COMP_* variables bash sets.
"""

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from verl_qwen35.cli.help import help_text
from verl_qwen35.cli.main import SUBCOMMANDS
from verl_qwen35.cli.presets import discover, presets_text
from verl_qwen35.config import compose
from verl_qwen35.installed import conf_dir

REPO = Path(__file__).resolve().parents[2]
ANNOUNCEMENT = "torch_npu is"  # the device line printed when `device` is detected for a run


def _cli(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "verl_qwen35", *args],
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(REPO), **(env or {})},
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture
def my_conf(tmp_path: Path) -> Path:
    """A user's --config-dir with a layout, a model without layouts, and a group of their own."""
    conf = tmp_path / "my_conf"
    (conf / "parallel").mkdir(parents=True)
    (conf / "parallel" / "122b_npu_8nodes.yaml").write_text(
        "tp: 2\npp: 4\ncp: 1\nep: 32\netp: 1\nvpp: null\ngen_tp: 16\nnnodes: 8\ndevices_per_node: 16\n"
    )
    (conf / "model").mkdir()
    (conf / "model" / "mine.yaml").write_text("# @package _global_\n# My own MoE.\nmodel:\n  name: mine\n")
    (conf / "cluster").mkdir()
    (conf / "cluster" / "lab.yaml").write_text("# Our lab's partition.\npartition: gpu\n")
    return conf


def _grid_rows(text: str) -> dict[tuple[str, str], list[str]]:
    grid = text.split("model x device", 1)[1].splitlines()[2:]
    return {(row.split()[0], row.split()[1]): row.split() for row in grid if row.strip()}


def test_presets_list_every_model_on_every_device_with_the_composed_layout(tmp_path):
    done = _cli("--presets", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    groups = discover()
    rows = _grid_rows(done.stdout)
    assert set(rows) == {(m, d) for m in groups["model"] for d in groups["device"]}
    assert {"35b", "122b"} <= set(groups["model"]) and {"gpu", "npu"} <= set(groups["device"])
    for (model, device), row in rows.items():
        cfg = compose([f"model={model}", f"device={device}"])
        world = cfg.parallel.nnodes * cfg.parallel.devices_per_node
        assert row[2] == f"{model}_{device}"
        assert OmegaConf.load(conf_dir() / "hardware" / f"{row[3]}.yaml").name == cfg.hardware.name
        assert row[4:9] == [str(cfg.parallel.nnodes), "x", str(cfg.parallel.devices_per_node), "=", str(world)]
        assert f"tp={cfg.parallel.tp}" in row and f"ep={cfg.parallel.ep}" in row
        assert row[-1] == (f"{model}_{device}" if f"{model}_{device}" in groups.get("tuning", {}) else "-")
    for group, options in groups.items():  # every group and option, with what it holds
        assert f"\n{group}  (default: " in done.stdout
        for name in options:
            assert f"\n  {name} " in done.stdout


def test_presets_include_those_of_config_dir(my_conf, tmp_path):
    done = _cli("--presets", "--config-dir", str(my_conf), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    line = next(x for x in done.stdout.splitlines() if x.strip().startswith("122b_npu_8nodes"))
    assert "8 x 16 = 128" in line and "ep=32" in line and f"[{my_conf}]" in line
    assert "My own MoE." in done.stdout and "Our lab's partition." in done.stdout
    rows = _grid_rows(done.stdout)
    assert rows[("mine", "gpu")][2] == "-" and "parallel/mine_gpu.yaml" in " ".join(rows[("mine", "gpu")])
    # The same directory, named the other way Hydra accepts, gives the same listing.
    assert presets_text([my_conf]) == _cli(f"--config-dir={my_conf}", "--presets", cwd=tmp_path).stdout


def test_help_is_short_and_names_groups_modes_and_commands(my_conf, tmp_path):
    done = _cli("--help", "--config-dir", str(my_conf), cwd=tmp_path)
    assert done.returncode == 0 and done.stderr == ""
    text = done.stdout
    usages = [usage for _, usage in SUBCOMMANDS.values()]
    assert text == help_text([my_conf], usages)
    assert len(text.splitlines()) < 60
    assert text.startswith("usage: verl-qwen35 ")
    for group, options in discover([my_conf]).items():
        assert any(line.split()[:1] == [group] and ", ".join(options) in line for line in text.splitlines())
    for mode in ("dry_run=false", "dry_run=true", "dry_run=full"):
        assert f"  {mode} " in text
    for flag in ("--presets", "--cfg job", "--help-full", "--hydra-help", "-sc install=bash", "--config-dir"):
        assert flag in text
    assert all(f"verl-qwen35 {usage}" in text for usage in usages)
    assert _cli("-h", cwd=tmp_path).stdout == help_text((), usages)


@pytest.mark.parametrize("name", sorted(SUBCOMMANDS))
def test_every_subcommand_answers_its_own_help(name, tmp_path):
    done = _cli(name, "--help", cwd=tmp_path)
    assert done.returncode == 0 and done.stdout.startswith(f"usage: verl-qwen35 {name} "), done.stdout + done.stderr


def test_hydra_keeps_its_full_help_and_its_flags_help(tmp_path):
    full = _cli("--help-full", cwd=tmp_path)
    assert full.returncode == 0, full.stderr
    assert "== Configuration groups ==" in full.stdout and "== Config ==" in full.stdout
    assert "actor_rollout_ref:" in full.stdout and len(full.stdout.splitlines()) > 500
    hydra = _cli("--hydra-help", cwd=tmp_path)
    assert hydra.returncode == 0, hydra.stderr
    assert "== Flags ==" in hydra.stdout and "--shell-completion" in hydra.stdout


@pytest.fixture(scope="module")
def console_script(tmp_path_factory) -> Path:
    """A `verl-qwen35` on PATH, written as pip writes a console script, running this checkout."""
    bin_dir = tmp_path_factory.mktemp("bin")
    script = bin_dir / "verl-qwen35"
    script.write_text(f"#!{sys.executable}\nimport sys\nfrom verl_qwen35.cli.main import main\nsys.exit(main())\n")
    script.chmod(0o755)
    return bin_dir


def _bash_complete(console_script: Path, line: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Install Hydra's bash completion and press Tab at the end of `line`, as bash would."""
    program = textwrap.dedent(
        """
        eval "$(verl-qwen35 -sc install=bash)"
        COMP_LINE="$LINE"
        COMP_POINT=${#LINE}
        read -r -a COMP_WORDS <<< "$LINE"
        COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 ))
        if [[ "$LINE" == *" " ]]; then COMP_WORDS+=(""); COMP_CWORD=${#COMP_WORDS[@]}; fi
        hydra_bash_completion
        printf '%s\\n' "${COMPREPLY[@]}"
        """
    )
    env = {**os.environ, "PYTHONPATH": str(REPO), "PATH": f"{console_script}:{os.environ['PATH']}", "LINE": line}
    return subprocess.run(["bash", "-c", program], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")
def test_tab_completes_our_options_and_prints_nothing_else(console_script, tmp_path):
    done = _bash_complete(console_script, "verl-qwen35 device=npu model=", tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stderr == "", f"Tab printed to the terminal: {done.stderr!r}"
    assert sorted(done.stdout.split()) == sorted(f"model={m}" for m in discover()["model"])  # no verl hf_model
    done = _bash_complete(console_script, "verl-qwen35 model=122b actor_rollout_ref.actor.megatron.tensor_mo", tmp_path)
    assert done.stderr == ""
    assert done.stdout.split() == ["actor_rollout_ref.actor.megatron.tensor_model_parallel_size="]
    assert not list(tmp_path.iterdir()), "a Tab must not write outputs/"


def test_completion_script_and_query_print_no_device_line(console_script, tmp_path):
    env = {"PATH": f"{console_script}:{os.environ['PATH']}", "PYTHONPATH": str(REPO)}
    install = subprocess.run(
        ["verl-qwen35", "-sc", "install=bash"], cwd=tmp_path, env={**os.environ, **env}, capture_output=True, text=True
    )
    assert install.returncode == 0 and install.stderr == ""
    assert install.stdout.rstrip().endswith("hydra_bash_completion verl-qwen35")
    query = _cli("-sc", "query=bash", cwd=tmp_path, env={"COMP_LINE": "verl-qwen35 dev", "COMP_POINT": "15"})
    assert ANNOUNCEMENT not in query.stdout + query.stderr and query.stderr == ""
    assert "device=" in query.stdout.split()


def test_fish_completion_keeps_one_candidate_a_line(tmp_path):
    line = "verl-qwen35 device=gpu model="
    done = _cli("-sc", "query=fish", cwd=tmp_path, env={"COMP_LINE": line, "COMP_POINT": str(len(line))})
    assert done.returncode == 0 and done.stderr == ""
    assert done.stdout.splitlines() == [f"model={m}" for m in discover()["model"]]


def test_presets_of_a_config_dir_that_is_not_there(tmp_path):
    done = _cli("--presets", "--config-dir", str(tmp_path / "typo"), cwd=tmp_path)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == f"verl-qwen35: error: --config-dir {tmp_path / 'typo'}: no such directory\n"


def test_presets_show_the_file_hydra_loads_when_names_clash(my_conf, tmp_path):
    """Hydra searches --config-dir after our conf/: our 35b_gpu wins, and --presets says so."""
    (my_conf / "parallel" / "35b_gpu.yaml").write_text(
        "tp: 2\npp: 1\ncp: 1\nep: 8\netp: 1\nvpp: null\ngen_tp: 8\nnnodes: 99\ndevices_per_node: 8\n"
    )
    args = ("--config-dir", str(my_conf), "device=gpu", "model=35b", "--cfg", "job", "-p", "parallel")
    printed = _cli(*args, cwd=tmp_path)
    assert printed.returncode == 0, printed.stderr
    line = next(x for x in presets_text([my_conf]).splitlines() if x.strip().startswith("35b_gpu "))
    assert "nnodes: 1\n" in printed.stdout and "1 x 8 = 8" in line and str(my_conf) not in line


def _described(text: str) -> dict[tuple[str, str], str]:
    """(group, option) -> the description `presets` prints: after the name, or for a layout on the line below."""
    found: dict[tuple[str, str], str] = {}
    group, lines = None, text.splitlines()
    for i, line in enumerate(lines):
        if line and not line.startswith(" ") and "  (default: " in line:
            group = line.split()[0]
        elif group and line.startswith("  ") and not line.startswith("   "):
            name, _, rest = line.strip().partition(" ")
            below = lines[i + 1] if i + 1 < len(lines) else ""
            found[(group, name)] = below.strip() if group == "parallel" and below.startswith("   ") else rest.strip()
        elif not line:
            group = None
    return found


def test_every_model_device_layout_and_tuning_has_a_whole_one_line_description(cli):
    """A newcomer reads `presets` to choose: each option says what it is in one complete sentence (the first
    comment line of its YAML file, not a line cut mid-sentence or a file whose comment sits below its defaults)."""
    done = cli("presets")
    assert done.code == 0, done.err
    described = _described(done.out)
    for group in ("model", "device", "parallel", "tuning", "submit", "logger", "verl_schema"):
        for name in discover()[group]:
            text = described[(group, name)]
            assert text.endswith("."), f"{group}/{name}: {text!r}"
            assert text.count("(") == text.count(")") and text.count("`") % 2 == 0, f"{group}/{name}: {text!r}"
    assert "Qwen3.5-397B-A17B" in described[("model", "397b")]
    assert "one rollout replica of DP 16 x TP 16" in described[("parallel", "397b_npu")]
