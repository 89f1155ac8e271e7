"""Library warnings and log lines held back while the real validators run (dry_run=full): off the terminal, counted
in one line, kept in the job's log file; a library's error and this package's own lines still shown."""

import io
import logging
import warnings

import pytest

from verl_qwen35.validators.library_output import VERBOSE, held_back


@pytest.fixture
def handlers(tmp_path):
    """Hydra's job logging: a console handler and a file handler on the root logger, at INFO."""
    root = logging.getLogger()
    console, log_file = io.StringIO(), tmp_path / "main.log"
    added = [logging.StreamHandler(console), logging.FileHandler(log_file)]
    level = root.level
    root.setLevel(logging.INFO)
    for handler in added:
        root.addHandler(handler)
    yield console, log_file
    for handler in added:
        root.removeHandler(handler)
        handler.close()
    root.setLevel(level)


def _library_talks() -> None:
    warnings.warn_explicit("Apex is not installed. Falling back to Torch Norm", UserWarning, "backends.py", 21)
    logging.getLogger("megatron.core.optimizer").info("> learning rate decay style: constant")
    logging.getLogger("verl.plugin").warning("No supported accelerator detected.")
    logging.getLogger("verl.trainer").error("a real failure")
    logging.getLogger("verl_qwen35.run").info("our own line")


def test_library_output_is_counted_in_one_line_and_kept_in_the_log_file(handlers, capsys, monkeypatch):
    console, log_file = handlers
    monkeypatch.delenv(VERBOSE, raising=False)
    with held_back():
        _library_talks()
    shown = console.getvalue()
    assert "Apex" not in shown and "decay style" not in shown and "accelerator" not in shown
    assert "a real failure" in shown and "our own line" in shown
    line = capsys.readouterr().out
    assert line.startswith("library    1 warning(s) and 2 log line(s) of megatron, verl held back")
    assert f"they are in {log_file}" in line and f"{VERBOSE}=1 prints them" in line
    kept = log_file.read_text()
    assert "Apex is not installed" in kept and "decay style" in kept and "accelerator" in kept


def test_verbose_holds_nothing_back(handlers, capsys, monkeypatch):
    console, _ = handlers
    monkeypatch.setenv(VERBOSE, "1")
    with warnings.catch_warnings(record=True) as shown_warnings, held_back():
        warnings.simplefilter("always")
        _library_talks()
    assert "decay style" in console.getvalue() and "accelerator" in console.getvalue()
    assert [str(w.message) for w in shown_warnings] == ["Apex is not installed. Falling back to Torch Norm"]
    assert capsys.readouterr().out == ""


def test_outside_hydras_logging_a_librarys_basic_config_adds_no_handler_that_prints(capsys, monkeypatch):
    """A plain dry run has no job logging: `import verl` calls logging.basicConfig, which would add a stderr handler
    to the root logger; inside the block a handler of ours stands in, so that call is a no-op."""
    root = logging.getLogger()
    monkeypatch.setattr(root, "handlers", [])
    monkeypatch.delenv(VERBOSE, raising=False)
    with held_back():
        logging.basicConfig(format="%(levelname)s:%(asctime)s:%(message)s")  # verl/__init__.py set_basic_config
        logging.getLogger("verl.plugin").warning("No supported accelerator detected.")
        warnings.warn_explicit("full scope is deprecated.", UserWarning, "transformer_config.py", 1705)
    said = capsys.readouterr()
    assert said.err == "" and root.handlers == []
    assert said.out.startswith("library    1 warning(s) and 1 log line(s) of verl held back")
    assert "they are in" not in said.out  # no log file keeps them: the line says how to print them
