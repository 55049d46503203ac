"""``flywheel ui``: the MLflow UI on the configured registry, and the address of the current flywheel run in it.

On a tracking server (``http://``) the server already serves the UI; on the embedded registry
(``sqlite:///file.db``) this starts ``mlflow ui`` on that file (loopback only) and stops it on Ctrl-C.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

console = Console()

RegistryOpt = Annotated[str | None, typer.Option("--registry", help="http://mlflow-host:port or sqlite:///file.db")]


def run_url(base: str, experiment_id: str, run_id: str) -> str:
    """Where the MLflow UI shows a run."""
    return f"{base.rstrip('/')}/#/experiments/{experiment_id}/runs/{run_id}"


def current_run(tracking_uri: str, model: str, run_id: str | None) -> tuple[str, str] | None:
    """(experiment id, MLflow run id) of flywheel run ``run_id`` (default: the newest) in ``model``'s experiment."""
    from mlflow.tracking import MlflowClient

    from learner.tracking import PARENT_ROLE, ROLE_TAG, RUN_TAG

    client = MlflowClient(tracking_uri=tracking_uri)
    experiment = client.get_experiment_by_name(model)
    if experiment is None:
        return None
    where = f"tags.`{ROLE_TAG}` = '{PARENT_ROLE}'"
    if run_id:
        where += f" and tags.`{RUN_TAG}` = '{run_id}'"
    runs = client.search_runs(
        [experiment.experiment_id], filter_string=where, max_results=1, order_by=["attributes.start_time DESC"]
    )
    return (experiment.experiment_id, runs[0].info.run_id) if runs else None


def _mlflow() -> list[str]:
    beside = Path(sys.executable).parent / "mlflow"
    if beside.is_file():
        return [str(beside)]
    found = shutil.which("mlflow")
    return [found] if found else [sys.executable, "-m", "mlflow"]


def _wait_ready(url: str, proc: subprocess.Popen[bytes], timeout_s: float) -> None:
    from infra.cli.errors import CliError

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise CliError(f"mlflow ui exited with {proc.returncode} before answering at {url}", "see its output above")
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=2) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            time.sleep(0.5)
    raise CliError(f"mlflow ui did not answer at {url} within {timeout_s:.0f}s", "is the port free? try --port")


def ui(
    registry: RegistryOpt = None,
    run_id: Annotated[
        str | None, typer.Option("--run-id", help="The flywheel run to show (default: the newest).")
    ] = None,
    model: Annotated[str, typer.Option(help="Registered model name: the experiment of the flywheel runs.")] = "planner",
    host: Annotated[str, typer.Option(help="Address of the UI of an embedded registry.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=1, max=65535, help="Port of the UI of an embedded registry.")] = 15050,
    start_timeout: Annotated[float, typer.Option(help="Seconds to wait for the UI to answer.")] = 180.0,
) -> None:
    """Open the experiment tracker: the MLflow UI of the configured registry, with the URL of the current run."""
    from infra.bootstrap import open_registry
    from infra.config import load_settings, mask_credentials

    settings = load_settings(registry=registry)
    tracking = settings.registry
    open_registry(tracking, settings)  # a clear error now if the server is down or the file is not a registry
    if tracking.startswith(("http://", "https://")):
        proc = None
        base = mask_credentials(tracking)
    else:
        base = f"http://{host}:{port}"
        command = [
            *_mlflow(),
            "ui",
            "--backend-store-uri",
            tracking,
            "--host",
            host,
            "--port",
            str(port),
            "--workers",
            "1",
        ]
        proc = subprocess.Popen(command, start_new_session=True)  # its own group: its workers stop with it
        try:
            _wait_ready(base, proc, start_timeout)
        except BaseException:
            _stop(proc)
            raise
    found = current_run(tracking, model, run_id)
    console.print(f"MLflow UI: {base}")
    if found is None:
        console.print(f"no flywheel run{f' {run_id}' if run_id else ''} in experiment {model!r} yet")
    else:
        console.print(f"current run: {run_url(base, *found)}", soft_wrap=True)
    if proc is None:
        return
    console.print("Ctrl-C stops the UI")
    _serve_until_stopped(proc)


def _serve_until_stopped(proc: subprocess.Popen[bytes]) -> None:
    """Wait for Ctrl-C or SIGTERM (or the UI exiting), then stop the UI's process group."""
    from infra.cli.signals import stop_on_signals

    with stop_on_signals() as stop:
        while proc.poll() is None and not stop.wait(0.5):
            pass
    _stop(proc)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the UI's process group (uvicorn and its workers), SIGKILL after 10 s."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
