"""Quiet console: library records and warnings reach the log file only; the project's reach the console too;
``-v`` (verbose) shows everything and leaves the libraries' switches alone."""

from __future__ import annotations

import logging
import os
import warnings
from collections.abc import Iterator

import pytest

from infra.cli.quiet import LIBRARY_SWITCHES, VERBOSE_ENV, quiet_console

pytestmark = pytest.mark.unit


@pytest.fixture(autouse=True)
def restore_logging() -> Iterator[None]:
    names = (*LIBRARY_SWITCHES, VERBOSE_ENV)
    saved = {name: os.environ.pop(name) for name in names if name in os.environ}
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    for name in names:
        os.environ.pop(name, None)
    os.environ.update(saved)
    for handler in [h for h in root.handlers if h not in handlers]:
        root.removeHandler(handler)
        handler.close()
    root.setLevel(level)
    logging.captureWarnings(False)


def test_library_output_goes_to_the_file_and_ours_to_the_console(tmp_path, capsys):
    log_file = quiet_console(tmp_path / "logs" / "run.log", verbose=False, libraries=False)
    logging.getLogger("somelib.loader").warning("library noise")
    logging.getLogger("flywheel.registry").warning("MLflow is down, waiting")
    logging.getLogger("flywheel.learner.sft").info("step 10: loss=1.0")
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.warn("'pin_memory' argument is set as true", UserWarning, stacklevel=1)
    console = capsys.readouterr().err
    text = log_file.read_text()
    assert "MLflow is down, waiting" in console
    assert "library noise" not in console and "pin_memory" not in console and "loss=" not in console
    assert all(s in text for s in ("library noise", "MLflow is down", "step 10: loss=1.0", "pin_memory"))
    assert {k: os.environ[k] for k in LIBRARY_SWITCHES} == LIBRARY_SWITCHES


def test_verbose_shows_library_records_and_keeps_the_libraries_bars(tmp_path, capsys):
    log_file = quiet_console(tmp_path / "run.log", verbose=True, libraries=False)
    logging.getLogger("somelib.loader").info("library detail")
    assert "library detail" in capsys.readouterr().err and "library detail" in log_file.read_text()
    assert not any(name in os.environ for name in LIBRARY_SWITCHES)
    assert os.environ[VERBOSE_ENV] == "1"  # the processes it starts are verbose too


def test_a_switch_the_user_set_is_kept(tmp_path, monkeypatch):
    monkeypatch.setenv("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "true")
    quiet_console(tmp_path / "run.log", verbose=False, libraries=False)
    assert os.environ["MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR"] == "true"


def test_calling_it_twice_does_not_duplicate_handlers(tmp_path):
    before = len(logging.getLogger().handlers)
    quiet_console(tmp_path / "a.log", verbose=False, libraries=False)
    quiet_console(tmp_path / "b.log", verbose=False, libraries=False)
    assert len(logging.getLogger().handlers) == before + 2


def test_warnings_reach_the_file_when_capture_was_left_on_and_showwarning_put_back(tmp_path):
    """An earlier command in the process left capture on; a catch_warnings(record=True) block (pytest's per-test one)
    then put the default showwarning back: quiet_console must still route warnings to its file."""
    logging.captureWarnings(True)
    with warnings.catch_warnings(record=True) as recorded:
        log_file = quiet_console(tmp_path / "logs" / "run.log", verbose=False, libraries=False)
        warnings.simplefilter("always")
        warnings.warn("left-on capture", UserWarning, stacklevel=1)
    assert "left-on capture" in log_file.read_text()
    assert not [w for w in recorded if "left-on capture" in str(w.message)]
