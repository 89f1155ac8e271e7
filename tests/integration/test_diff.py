"""Config diff for review, checked against an independent key-by-key comparison."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from omegaconf import OmegaConf

from verl_qwen35.cli.diff import main as diff_main
from verl_qwen35.config import compose
from verl_qwen35.installed import installed_verl_schema

GOLDEN = Path(__file__).resolve().parents[2] / "golden"
GPU, NPU = "device=gpu model=122b", "device=npu model=122b"


def independent(a: dict, b: dict, prefix: str = "") -> dict[str, tuple]:
    """A second, recursive statement of 'what differs': key -> (a or None, b or None)."""
    out = {}
    for key in a.keys() | b.keys():
        path, va, vb = f"{prefix}{key}", a.get(key, "<absent>"), b.get(key, "<absent>")
        if isinstance(va, dict) and isinstance(vb, dict) and va and vb:
            out |= independent(va, vb, f"{path}.")
        elif isinstance(va, dict) and va and vb == "<absent>":
            out |= {k: (v, "<absent>") for k, (v, _) in independent(va, {}, f"{path}.").items()}
        elif isinstance(vb, dict) and vb and va == "<absent>":
            out |= {k: ("<absent>", v) for k, (_, v) in independent({}, vb, f"{path}.").items()}
        elif va != vb:
            out[path] = (va, vb)
    return out


def run_json(capsys, *args) -> tuple[int, dict]:
    code = diff_main([*args, "--format", "json"])
    return code, json.loads(capsys.readouterr().out)


def test_gpu_vs_npu_matches_an_independent_comparison(capsys):
    code, report = run_json(capsys, GPU, NPU)
    expected = independent(
        OmegaConf.to_container(compose(GPU.split()), resolve=True),
        OmegaConf.to_container(compose(NPU.split()), resolve=True),
    )
    got = {k: (v["a"], v["b"]) for k, v in report["changed"].items()}
    got |= {k: ("<absent>", v) for k, v in report["added"].items()}
    got |= {k: (v, "<absent>") for k, v in report["removed"].items()}
    assert code == 1 and got == expected
    assert ("actor_rollout_ref.actor.megatron.vanilla_mbridge") in got


@pytest.mark.parametrize("fmt", ["text", "markdown"])
def test_formats_show_every_changed_key(capsys, fmt):
    assert diff_main([GPU, NPU, "--format", fmt]) == 1
    out = capsys.readouterr().out
    assert "actor_rollout_ref.ref.megatron.pipeline_model_parallel_size" in out
    assert (
        ("| actor_rollout_ref |" in out)
        if fmt == "markdown"
        else ("[parallel]" in out and "~ parallel.pp: 2 -> 4" in out)
    )


def test_equal_sides_exit_0_and_ignore_globs_drop_keys(capsys):
    assert diff_main([GPU, GPU]) == 0
    assert capsys.readouterr().out.endswith("0 changed, 0 added, 0 removed\n")
    code, report = run_json(
        capsys,
        "device=gpu",
        "device=gpu parallel.tp=4 env.set.VLLM_USE_V1=0",
        "--ignore",
        "env.*",
        "--ignore",
        "*tensor_model_parallel_size",
    )
    assert code == 1 and set(report["changed"]) == {"parallel.tp"}


def test_golden_file_against_its_override_set_differs_only_where_home_is_read(capsys, monkeypatch):
    monkeypatch.setenv("HOME", "/home/user")
    golden = GOLDEN / installed_verl_schema() / "122b_npu.yaml"
    assert diff_main([str(golden), NPU, "--ignore", "data.*_files"]) == 0
    capsys.readouterr()
    code, out = run_json(capsys, str(golden), NPU)
    assert code == 1 and set(out["changed"]) == {"data.train_files", "data.val_files"}
    assert out["changed"]["data.train_files"] == {
        "a": "/home/user/data/geo3k/train.parquet",
        "b": "${oc.env:HOME}/data/geo3k/train.parquet",  # shown, never resolved
    }


def test_actor_ref_mismatch_is_called_out(capsys):
    code = diff_main([NPU, f"{NPU} actor_rollout_ref.ref.megatron.use_remove_padding=true"])
    out = capsys.readouterr().out
    assert code == 1 and "!! actor/ref Megatron mismatch in B" in out and "use_remove_padding" in out


@pytest.mark.parametrize(
    ("a", "content", "named"),
    [
        ("model=hf_model", None, "model=hf_model"),
        ("{tmp}/missing.yaml", None, "missing.yaml"),
        ("{tmp}/empty.yaml", "", "empty"),
        ("{tmp}/list.yaml", "- a\n- b\n", "mapping"),
        ("{tmp}/broken.yaml", "a: [1\n", "broken.yaml line 2"),
        ("{tmp}/binary.yaml", "\x00\x01", "binary"),
        (
            "{tmp}/bomb.yaml",
            "\n".join(
                ["a: &a [x, x, x, x, x, x, x, x, x, x]"]
                + [f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 10)}]" for i in range(7)]
            )
            + "\n",
            "alias",
        ),
    ],
)
def test_bad_input_exits_2_with_one_message(tmp_path, capsys, a, content, named):
    a = a.replace("{tmp}", str(tmp_path))
    if content is not None:
        Path(a).write_text(content)
    with pytest.raises(SystemExit) as stop:
        diff_main([a, GPU])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and named in err and "Traceback" not in err


def test_env_reads_are_shown_not_resolved(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("MY_SERVICE_TOKEN", "sk-live-0123456789")
    (tmp_path / "a.yaml").write_text("x: ${oc.env:MY_SERVICE_TOKEN}\ny: ${x}\n")
    (tmp_path / "b.yaml").write_text("x: 1\ny: 2\n")
    assert diff_main([str(tmp_path / "a.yaml"), str(tmp_path / "b.yaml")]) == 1
    out = capsys.readouterr().out
    assert "${oc.env:MY_SERVICE_TOKEN}" in out and "sk-live" not in out


def test_piped_into_head_ends_quietly(tmp_path):
    run = subprocess.run(
        f"{sys.executable} -m verl_qwen35 diff 'device=gpu model=35b' 'device=npu model=122b' | head -2",
        shell=True,
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert run.stdout.count("\n") == 2 and run.stderr == ""


def test_the_subcommand_of_the_one_command_offers_its_options():
    run = subprocess.run([sys.executable, "-m", "verl_qwen35", "diff", "--help"], capture_output=True, text=True)
    assert run.returncode == 0 and run.stdout.startswith("usage: verl-qwen35 diff ") and "--ignore" in run.stdout


def test_plain_verl_config_mismatch_is_called_out_too(tmp_path, capsys):
    """A verl config without our `megatron` node (e.g. from verl's own scripts) is still checked."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir

    from verl_qwen35.installed import verl_config_dir

    with initialize_config_dir(str(verl_config_dir()), version_base=None):
        seed_like = hydra_compose(
            "ppo_trainer",
            overrides=[
                "model_engine=megatron",
                "actor_rollout_ref.actor.megatron.use_remove_padding=False",
                "actor_rollout_ref.ref.megatron.use_remove_padding=True",
            ],
        )
    path = tmp_path / "seed.yaml"
    path.write_text(OmegaConf.to_yaml(seed_like))
    assert diff_main([str(path), str(path)]) == 0
    out = capsys.readouterr().out
    assert "!! actor/ref Megatron mismatch in A: actor_rollout_ref.actor.megatron.use_remove_padding=false" in out


@pytest.mark.parametrize("name", ["missing.yaml", "missing.yml"])
def test_a_missing_yaml_file_is_refused_as_a_file_not_read_as_overrides(tmp_path, capsys, name):
    with pytest.raises(SystemExit) as stop:
        diff_main([str(tmp_path / name), GPU])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and f"{tmp_path / name}" in err and "override" not in err.lower(), err


def test_an_existing_file_without_yaml_suffix_is_loaded_as_a_file(tmp_path, capsys):
    (tmp_path / "a_record").write_text("x: 1\n")
    (tmp_path / "b.yml").write_text("x: 2\n")
    assert diff_main([str(tmp_path / "a_record"), str(tmp_path / "b.yml")]) == 1
    assert "~ x: 1 -> 2" in capsys.readouterr().out


def test_the_hydra_node_of_a_saved_config_is_not_compared(tmp_path, capsys):
    (tmp_path / "a.yaml").write_text("x: 1\nhydra:\n  run:\n    dir: /a\n")
    (tmp_path / "b.yaml").write_text("x: 1\nhydra:\n  run:\n    dir: /b\n")
    assert diff_main([str(tmp_path / "a.yaml"), str(tmp_path / "b.yaml")]) == 0
    assert "[hydra]" not in capsys.readouterr().out


def test_env_reads_inside_lists_are_shown_not_resolved(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("MY_SERVICE_TOKEN", "sk-live-0123456789")
    (tmp_path / "a.yaml").write_text("x: ['${oc.env:MY_SERVICE_TOKEN}', {y: '${oc.env:MY_SERVICE_TOKEN}'}]\n")
    (tmp_path / "b.yaml").write_text("x: [1]\n")
    assert diff_main([str(tmp_path / "a.yaml"), str(tmp_path / "b.yaml")]) == 1
    out = capsys.readouterr().out
    assert "${oc.env:MY_SERVICE_TOKEN}" in out and "sk-live" not in out


@pytest.mark.parametrize("side", ["actor", "ref"])
def test_a_config_with_one_megatron_side_is_compared_without_a_parity_note(tmp_path, capsys, side):
    (tmp_path / "a.yaml").write_text(f"actor_rollout_ref:\n  {side}:\n    megatron:\n      param_offload: true\n")
    (tmp_path / "b.yaml").write_text(f"actor_rollout_ref:\n  {side}:\n    megatron:\n      param_offload: false\n")
    assert diff_main([str(tmp_path / "a.yaml"), str(tmp_path / "b.yaml")]) == 1
    captured = capsys.readouterr()
    assert "param_offload: true -> false" in captured.out and "mismatch" not in captured.out + captured.err


@pytest.fixture
def two_sections(tmp_path):
    """A change, an addition and a removal in each of two sections."""
    (tmp_path / "a.yaml").write_text("data: {x: 1, gone: 1}\ntrainer: {y: 1, gone: 2}\n")
    (tmp_path / "b.yaml").write_text("data: {x: 2, new: 1}\ntrainer: {y: 2, new: 2}\n")
    return str(tmp_path / "a.yaml"), str(tmp_path / "b.yaml")


def test_text_format_lists_each_key_under_its_own_section(two_sections, capsys):
    a, b = two_sections
    assert diff_main([a, b]) == 1
    assert capsys.readouterr().out.splitlines() == [
        f"A: {a}",
        f"B: {b}",
        "[data]",
        "  ~ data.x: 1 -> 2",
        "  + data.new: 1",
        "  - data.gone: 1",
        "[trainer]",
        "  ~ trainer.y: 1 -> 2",
        "  + trainer.new: 2",
        "  - trainer.gone: 2",
        "2 changed, 2 added, 2 removed",
    ]


def test_markdown_format_is_one_sorted_row_per_key(two_sections, capsys):
    a, b = two_sections
    assert diff_main([a, b, "--format", "markdown"]) == 1
    assert capsys.readouterr().out.splitlines() == [
        f"**A** `{a}` vs **B** `{b}`: 2 changed, 2 added, 2 removed",
        "",
        "| section | key | A | B |",
        "|---|---|---|---|",
        "| data | `data.gone` | `1` | *(absent)* |",
        "| data | `data.new` | *(absent)* | `1` |",
        "| data | `data.x` | `1` | `2` |",
        "| trainer | `trainer.gone` | `2` | *(absent)* |",
        "| trainer | `trainer.new` | *(absent)* | `2` |",
        "| trainer | `trainer.y` | `1` | `2` |",
    ]


def test_json_format_holds_every_part(two_sections, capsys):
    a, b = two_sections
    assert diff_main([a, b, "--format", "json"]) == 1
    out = capsys.readouterr().out
    assert out.startswith('{\n  "a": '), "indented by two spaces for people reading it"
    assert json.loads(out) == {
        "a": a,
        "b": b,
        "changed": {"data.x": {"a": 1, "b": 2}, "trainer.y": {"a": 1, "b": 2}},
        "added": {"data.new": 1, "trainer.new": 2},
        "removed": {"data.gone": 1, "trainer.gone": 2},
        "actor_ref_mismatch": {},
    }


def test_a_pipe_in_a_value_does_not_break_the_markdown_table(tmp_path, capsys):
    (tmp_path / "a.yaml").write_text("x: 'a|b'\n")
    (tmp_path / "b.yaml").write_text("x: c\n")
    assert diff_main([str(tmp_path / "a.yaml"), str(tmp_path / "b.yaml"), "--format", "markdown"]) == 1
    assert '| x | `x` | `"a\\|b"` | `"c"` |' in capsys.readouterr().out


def test_markdown_calls_out_an_actor_ref_mismatch(capsys):
    code = diff_main([NPU, f"{NPU} actor_rollout_ref.ref.megatron.use_remove_padding=true", "--format", "markdown"])
    out = capsys.readouterr().out
    assert code == 1 and "> :warning: actor/ref Megatron mismatch in B: " in out and "use_remove_padding" in out


def _submitted_dry_run(cli, run_dir: Path, *overrides: str) -> Path:
    """A run directory as `submit=slurm dry_run=true` leaves it: launch.yaml, the record a cluster job relaunches."""
    done = cli("model=35b", "device=gpu", "submit=slurm", "dry_run=true", f"hydra.run.dir={run_dir}", *overrides)
    assert done.code == 0, done.said
    return run_dir / "launch.yaml"


def test_two_launch_records_of_the_same_overrides_are_equal_and_a_change_shows_as_that_key(cli, tmp_path):
    """launch.yaml holds the config under `config` beside its metadata: diff reads the config it records, and
    paths under each record's own run directory (the wandb directory) compare as `<run dir>`."""
    a = _submitted_dry_run(cli, tmp_path / "a")
    b = _submitted_dry_run(cli, tmp_path / "b")
    same = cli("diff", str(a), str(b))
    assert (same.code, same.out.splitlines()[-1]) == (0, "0 changed, 0 added, 0 removed"), same.said
    assert cli("diff", str(tmp_path / "a"), str(tmp_path / "b")).code == 0  # a run directory reads its launch.yaml
    c = _submitted_dry_run(cli, tmp_path / "c", "actor_rollout_ref.actor.optim.lr=2e-6")
    changed = cli("diff", str(a), str(c))
    assert changed.code == 1 and changed.out.splitlines()[-1] == "1 changed, 0 added, 0 removed", changed.said
    assert "~ actor_rollout_ref.actor.optim.lr: 1e-06 -> 2e-06" in changed.out


def test_a_dry_runs_directory_without_a_record_reads_its_hydra_config(cli, tmp_path):
    done = cli("model=35b", "device=gpu", "dry_run=true", f"hydra.run.dir={tmp_path / 'run'}")
    assert done.code == 0, done.said
    same = cli("diff", str(tmp_path / "run"), str(tmp_path / "run" / ".hydra" / "config.yaml"))
    assert same.code == 0, same.said
    # .hydra/config.yaml is compared as written: its own overrides, composed, compare equal (as written too)
    assert cli("diff", "model=35b device=gpu dry_run=true", str(tmp_path / "run")).code == 0
    empty = cli("diff", str(tmp_path), str(tmp_path / "run"))
    assert empty.code == 2 and "not a run directory" in empty.err


def test_nothing_in_a_launch_record_is_resolved(cli, tmp_path, monkeypatch):
    """A record is data: an interpolation a hand (or a hostile edit) left in it is compared as its text."""
    monkeypatch.setenv("SECRET_FOR_DIFF", "s3cr3t")
    record = _submitted_dry_run(cli, tmp_path / "a")
    data = yaml.safe_load(record.read_text())
    trainer = data["config"]["trainer"]
    trainer["project_name"] = "${oc.env:SECRET_FOR_DIFF}"
    trainer["experiment_name"] = "\\\\${trainer.project_name}"  # an escaped backslash, then an interpolation
    edited = record.with_name("edited.yaml")  # in the same run directory
    edited.write_text(yaml.safe_dump(data, sort_keys=False))
    done = cli("diff", str(record), str(edited), "--format", "json")
    assert done.code == 1 and "s3cr3t" not in done.said, done.said
    changed = json.loads(done.out)["changed"]
    assert set(changed) == {"trainer.project_name", "trainer.experiment_name"}, changed
    assert changed["trainer.project_name"]["b"] == "${oc.env:SECRET_FOR_DIFF}"
    assert changed["trainer.experiment_name"]["b"] == "\\${trainer.project_name}"


def test_a_saved_config_is_compared_as_written_nothing_resolved(tmp_path, capsys, monkeypatch):
    """A `.hydra/config.yaml` (anyone's) is data: a reference to nothing, an environment read and a chain of
    references doubling at each step (2**60 characters, resolved) are each compared as their text, at once."""
    monkeypatch.setenv("SECRET_FOR_DIFF", "s3cr3t")
    chain = "".join(f"r{i}: ${{r{i + 1}}}${{r{i + 1}}}\n" for i in range(60)) + "r60: x\n"
    (tmp_path / "a.yaml").write_text("a: ${nope}\nb: ${oc.env:SECRET_FOR_DIFF}\n" + chain)
    (tmp_path / "b.yaml").write_text("a: 1\nb: 2\n" + chain)
    code, out = run_json(capsys, str(tmp_path / "a.yaml"), str(tmp_path / "b.yaml"))
    assert code == 1 and out["changed"] == {
        "a": {"a": "${nope}", "b": 1},
        "b": {"a": "${oc.env:SECRET_FOR_DIFF}", "b": 2},
    }, out
    assert "s3cr3t" not in json.dumps(out)
