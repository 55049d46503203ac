"""Where a command's output goes: the console shows the project's own progress and log lines; third-party
progress bars, warnings and log records go to a log file (``runs/<run_id>/logs/``); ``flywheel -v`` brings
them back to the console.

Each library is quietened through its own switch (environment variables it reads, its logging API), never by
swallowing stdout: MLflow's artifact bars and its log handler, Hugging Face Hub / transformers / datasets bars,
transformers' own stderr handler, any other tqdm bar (``TQDM_DISABLE``), and Python warnings (through
``logging.captureWarnings``). The switches are set by the ``flywheel`` callback, before a command imports
the libraries, and are inherited by the consumer processes a run spawns.
"""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path

import click

OURS = "flywheel"
"""Loggers named ``flywheel.*`` are the project's; every other logger is a library's."""

LIBRARY_SWITCHES = {
    "MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR": "false",  # "Downloading artifacts" / "Uploading artifacts" bars
    "MLFLOW_CONFIGURE_LOGGING": "false",  # MLflow's own stderr handler: its records propagate to ours instead
    "HF_HUB_DISABLE_PROGRESS_BARS": "1",  # hub bars, and transformers' ("Loading weights", "Writing model shards")
    "HF_DATASETS_DISABLE_PROGRESS_BARS": "1",  # datasets' map bars ("Building labels for train dataset")
    "TQDM_DISABLE": "1",  # any other tqdm bar (tqdm reads TQDM_* as defaults of its arguments)
    "TRANSFORMERS_NO_ADVISORY_WARNINGS": "1",
}
FORMAT = "%(asctime)s %(name)s %(levelname)s %(message)s"
_HANDLER_MARK = "_flywheel_quiet"


VERBOSE_ENV = "FLYWHEEL_VERBOSE"
"""Set to 1 by ``flywheel -v``: the worker processes a command starts are verbose too."""
MODEL_CONSUMERS = ("trainer", "dev_evaluator", "rollout-worker")
"""Consumers that load models (and so transformers, whose own stderr handler is rerouted)."""


def verbose_requested() -> bool:
    """Whether ``flywheel -v`` was given, to this process or to the command that started it."""
    if os.environ.get(VERBOSE_ENV) == "1":
        return True
    ctx = click.get_current_context(silent=True)
    while ctx is not None:
        if ctx.meta.get("flywheel.verbose"):
            return True
        ctx = ctx.parent
    return False


QUIET_COMMANDS = ("run", "train", "eval", "consume")


def quiet_libraries(verbose: bool) -> None:
    """Switch the libraries' progress bars and MLflow's log handler off (unless ``verbose``), through the
    environment variables they read at import or call time; a variable the user set is left as it is."""
    if verbose:
        os.environ[VERBOSE_ENV] = "1"
        return
    for name, value in LIBRARY_SWITCHES.items():
        os.environ.setdefault(name, value)


class OwnRecords(logging.Filter):
    """Passes the project's log records (and records logged on the root logger itself)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.name == "root" or record.name == OURS or record.name.startswith(f"{OURS}.")


def quiet_console(
    log_file: Path,
    *,
    verbose: bool | None = None,
    console_level: int = logging.WARNING,
    console_format: str = FORMAT,
    libraries: bool = True,
) -> Path:
    """Route every log record to ``log_file`` and only the project's (at ``console_level``) to stderr.

    Unless ``verbose`` (default: ``flywheel -v``), the libraries' progress bars are switched off and their
    warnings and log records reach only the file. ``libraries`` also reroutes transformers' own stderr handler
    (an import of about two seconds: for commands that load models). Returns the log file.
    """
    verbose = verbose_requested() if verbose is None else verbose
    log_file.parent.mkdir(parents=True, exist_ok=True)
    quiet_libraries(verbose)
    root = logging.getLogger()
    for handler in [h for h in root.handlers if getattr(h, _HANDLER_MARK, False)]:
        root.removeHandler(handler)
        handler.close()
    to_file = logging.FileHandler(log_file, encoding="utf-8")
    to_file.setFormatter(logging.Formatter(FORMAT))
    to_console = logging.StreamHandler(sys.stderr)
    to_console.setFormatter(logging.Formatter(console_format))
    to_console.setLevel(logging.INFO if verbose else console_level)
    if not verbose:
        to_console.addFilter(OwnRecords())
    for handler in (to_file, to_console):
        setattr(handler, _HANDLER_MARK, True)
        root.addHandler(handler)
    root.setLevel(min(logging.INFO, console_level))
    # warnings.warn(...) -> the "py.warnings" logger -> the file. Off first: captureWarnings(True) does nothing when
    # capture is already on, though something (a warnings.catch_warnings block, pytest's per-test one) may have put
    # its own showwarning back since.
    logging.captureWarnings(False)
    logging.captureWarnings(True)
    if libraries and not verbose:
        _route_transformers()
    return log_file


def _route_transformers() -> None:
    """transformers logs through its own stderr handler; hand its records to the root logger instead."""
    try:
        from transformers.utils import logging as hf_logging
    except ImportError:  # pragma: no cover - transformers is a dependency; without it there is nothing to route
        return
    hf_logging.disable_default_handler()
    hf_logging.enable_propagation()
    hf_logging.disable_progress_bar()  # also when transformers was imported before the switches were set


def quiet_consumer(name: str, state_dir: Path, *, verbose: bool | None = None) -> Path:
    """A consumer process: its own INFO lines on the console (what operators watch), every record in
    ``<state_dir>/../logs/<name>.all.log`` (``runs/<run_id>/logs/`` for the consumers a run spawns)."""
    return quiet_console(
        state_dir.parent / "logs" / f"{name}.all.log",
        verbose=verbose,
        console_level=logging.INFO,
        console_format=f"%(asctime)s {name}[%(process)d] %(levelname)s %(message)s",
        libraries=name.startswith(MODEL_CONSUMERS),
    )
