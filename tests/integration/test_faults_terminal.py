"""Terminal-safe output (issue 42; docs/security.md): a string from outside (an override value, a file's contents,
a log line, a run directory's name, an error quoting one of them) reaches the terminal with its control characters
and escape sequences shown escaped (`\\x1b`, `\\r`), never as the bytes a terminal would obey. Real commands in
subprocesses; the test reads the raw bytes they wrote."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from tests.commands import REPO
from verl_qwen35.terminal import safe

ESC = "\x1b"
# A title rewrite (OSC ... BEL), a screen clear (CSI 2J), a carriage return that would print OK over the line,
# a right-to-left override that reorders what follows it.
HOSTILE = f"x{ESC}]0;owned\a{ESC}[2J\rOK\u202e"
# Raw bytes a terminal obeys: C0 but tab and newline, DEL, C1 (UTF-8 encoded), the bidi override.
# The same on one line: a value with a carriage return is refused (config/line_breaks.py), one with ESC taken.
INLINE = HOSTILE.replace("\r", "")
RAW = re.compile(rb"[\x00-\x08\x0b-\x1f\x7f]|\xc2[\x80-\x9f]|\xe2\x80\xae")


def run(cwd: Path, *argv: str) -> tuple[int, bytes]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("HYDRA_FULL_ERROR", None)
    done = subprocess.run(
        [sys.executable, "-m", "verl_qwen35", *argv], cwd=cwd, env=env, capture_output=True, timeout=300
    )
    return done.returncode, done.stdout + done.stderr


def shown_escaped(said: bytes) -> str:
    """No byte a terminal would obey; the escapes in their place."""
    assert not RAW.search(said), said[max(0, RAW.search(said).start() - 200) :][:400]
    text = said.decode()
    assert any(e in text for e in ("\\x1b", "\\u001b", "\\e")), text[-3000:]  # ours, JSON's or YAML's escape
    return text


def test_safe_escapes_controls_and_keeps_lines():
    assert safe(HOSTILE) == "x\\x1b]0;owned\\a\\x1b[2J\\rOKu202e".replace("u202e", "\\u202e")
    assert safe("a\tb\nc") == "a\tb\nc" and safe("\x9b31m") == "\\x9b31m"


def test_an_override_value_is_shown_escaped_in_the_verdict_and_the_sweeps_log(tmp_path):
    code, said = run(tmp_path, "-m", "dry_run=true", f"trainer.experiment_name='{INLINE}',b")
    text = shown_escaped(said)
    assert code == 0 and "\\x1b[2JOK" in text


def test_an_override_hydra_cannot_parse_is_quoted_escaped(tmp_path):
    code, said = run(tmp_path, "dry_run=true", f"trainer.experiment_name=a{ESC}[31m\rb")
    assert code == 2
    shown_escaped(said)


def test_a_preset_files_value_and_key_are_shown_escaped(tmp_path):
    conf = tmp_path / "conf" / "model"
    conf.mkdir(parents=True)
    # YAML's double-quoted escapes: the loaded key and value hold a real ESC and CR.
    (conf / "mine.yaml").write_text(
        'defaults:\n  - 35b\n  - _self_\n"bad\\e[2Jkey\\r": 1\nmodel_hf_id: "Qwen/x\\e]0;t\\a\\r"\n'
    )
    code, said = run(tmp_path, "--config-dir", str(tmp_path / "conf"), "model=mine", "parallel=35b_gpu", "dry_run=true")
    assert code == 2
    shown_escaped(said)


def test_a_run_directorys_name_and_its_log_are_shown_escaped_by_report(tmp_path):
    run_dir = tmp_path / f"run{ESC}[31m\r"
    run_dir.mkdir()
    lines = [{"step": s, "data": {"timing_s/step": 400.0, "critic/score/mean": 0.5}} for s in (1, 2)]
    (run_dir / "metrics.jsonl").write_text("\n".join(map(json.dumps, lines)) + f"\n{HOSTILE}\n")
    code, said = run(tmp_path, "report", str(run_dir), "--no-plots")
    assert code == 0
    shown_escaped(said)


def test_yaml_files_compared_by_diff_are_shown_escaped(tmp_path):
    (tmp_path / "a.yaml").write_text(json.dumps({"trainer": {"experiment_name": HOSTILE}}))
    (tmp_path / "b.yaml").write_text(json.dumps({"trainer": {"experiment_name": "plain"}}))
    code, said = run(tmp_path, "diff", str(tmp_path / "a.yaml"), str(tmp_path / "b.yaml"))
    assert code == 1, said
    shown_escaped(said)


def test_an_imported_lists_values_are_shown_escaped(tmp_path):
    lines = ["model_engine=megatron", "actor_rollout_ref.model.path=Qwen/Qwen3.5-35B-A3B"]
    lines += [f"trainer.experiment_name='{INLINE}'", f"no.such.key{ESC}[2J=1"]
    (tmp_path / "run.txt").write_text("\n".join(lines) + "\n")
    code, said = run(tmp_path, "import", str(tmp_path / "run.txt"), "--out", str(tmp_path / "out"))
    shown_escaped(said)


def test_hydras_own_printing_of_the_config_is_escaped(tmp_path):
    code, said = run(tmp_path, "--cfg=job", f"trainer.experiment_name='{INLINE}'")
    assert code == 0
    shown_escaped(said)


def test_an_argument_a_subcommand_refuses_is_quoted_escaped(tmp_path):
    code, said = run(tmp_path, "diff", "--format", f"t{ESC}[2J\r", "a", "b")
    assert code == 2
    shown_escaped(said)
