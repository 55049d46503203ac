"""`flywheel ui`: the MLflow UI of the configured registry with the address of the current flywheel run; on the
embedded registry it serves the UI itself (and stops it on SIGTERM), on the server it points at the server's."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
import uuid
from pathlib import Path

import pytest
from stack_support import free_port

from infra.bootstrap import open_registry
from infra.loop.config import LoopConfig
from infra.loop.tracking import start_parent_run
from learner.config import LearnerConfig
from learner.tracking import ROLE_TAG, RUN_TAG, TRAINING_ROLE

pytestmark = [pytest.mark.integration, pytest.mark.timeout(420)]

REPO = Path(__file__).resolve().parents[2]


def tracked_run(registry_url: str, model: str, run_id: str) -> tuple[str, str]:
    """A parent run and a nested training run with a loss curve, as a flywheel run leaves them."""
    registry = open_registry(registry_url)
    parent = start_parent_run(registry, LoopConfig(learner=LearnerConfig(model_name=model)), run_id, {})
    child = registry.start_run(
        model, run_name="round-0-sft", tags={RUN_TAG: run_id, ROLE_TAG: TRAINING_ROLE}, parent_run_id=parent
    )
    registry.log_metric_history(child, [(step, {"loss": 3.0 - step / 10}) for step in range(10)])
    registry.end_run(child)
    return parent, child


def start_ui(*flags: str) -> tuple[subprocess.Popen[str], list[str]]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "infra.cli.main", "ui", *flags],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    lines: list[str] = []
    assert proc.stdout is not None
    for line in proc.stdout:
        lines.append(line.rstrip())
        if line.startswith(("current run:", "no flywheel run", "flywheel: error")):
            break
    return proc, lines


def get_json(url: str, body: dict | None = None) -> dict:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())


def test_ui_serves_the_embedded_registry_and_names_the_current_run(tmp_path):
    model, run_id, port = f"planner-{uuid.uuid4().hex[:6]}", f"run-{uuid.uuid4().hex[:6]}", free_port()
    db = f"sqlite:///{tmp_path}/mlflow.db"
    parent, child = tracked_run(db, model, run_id)
    proc, lines = start_ui(f"--registry={db}", f"--model={model}", f"--port={port}")
    try:
        base = f"http://127.0.0.1:{port}"
        current = next((line for line in lines if line.startswith("current run:")), None)
        assert current is not None, "\n".join(lines[-20:])
        experiment = current.split("/#/experiments/")[1].split("/")[0]
        assert current == f"current run: {base}/#/experiments/{experiment}/runs/{parent}"

        with urllib.request.urlopen(f"{base}/", timeout=30) as page:
            assert page.status == 200 and "<title>MLflow</title>" in page.read().decode()
        found = get_json(f"{base}/ajax-api/2.0/mlflow/runs/search", {"experiment_ids": [experiment]})["runs"]
        tags = {r["info"]["run_id"]: {t["key"]: t["value"] for t in r["data"]["tags"]} for r in found}
        assert tags[child]["mlflow.parentRunId"] == parent and tags[parent][RUN_TAG] == run_id
        history = get_json(f"{base}/ajax-api/2.0/mlflow/metrics/get-history?run_id={child}&metric_key=loss")
        assert len(history["metrics"]) == 10  # what the UI's loss chart draws
    finally:
        os.kill(proc.pid, signal.SIGTERM)
        proc.wait(60)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:  # SIGTERM stops the UI it started, not only the command
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2)
        except OSError:
            break
        time.sleep(1)
    else:
        pytest.fail(f"the MLflow UI on port {port} still answers after flywheel ui was stopped")


def test_ui_on_the_tracking_server_points_at_its_own_ui(real_stack):
    model, run_id = f"planner-{uuid.uuid4().hex[:6]}", f"run-{uuid.uuid4().hex[:6]}"
    parent, _ = tracked_run(real_stack.mlflow_url, model, run_id)
    proc, lines = start_ui(f"--registry={real_stack.mlflow_url}", f"--model={model}", f"--run-id={run_id}")
    assert proc.wait(120) == 0, "\n".join(lines)
    assert f"MLflow UI: {real_stack.mlflow_url}" in lines
    assert any(
        line.startswith(f"current run: {real_stack.mlflow_url}/#/experiments/") and line.endswith(parent)
        for line in lines
    )
