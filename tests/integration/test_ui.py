"""`flywheel ui`: the MLflow UI of the configured registry with the address of the current flywheel run; on the
embedded registry it serves the UI itself (and stops it on SIGTERM), on the server it points at the server's."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
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
CHROMIUM, CHROMEDRIVER = "chromium", "chromedriver"  # Debian's packages chromium and chromium-driver


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


@dataclass(frozen=True)
class EmbeddedUi:
    proc: subprocess.Popen[str]
    lines: list[str]
    port: int
    run_id: str
    parent: str
    child: str

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"


@pytest.fixture(scope="module")
def embedded_ui(tmp_path_factory) -> Iterator[EmbeddedUi]:
    """`flywheel ui` on an embedded registry holding a flywheel run (started once: it takes a while on 2 cores)."""
    tmp_path = tmp_path_factory.mktemp("ui")
    model, run_id, port = "planner", f"run-{uuid.uuid4().hex[:6]}", free_port()
    db = f"sqlite:///{tmp_path}/mlflow.db"
    parent, child = tracked_run(db, model, run_id)
    proc, lines = start_ui(f"--registry={db}", f"--port={port}")
    ui = EmbeddedUi(proc, lines, port, run_id, parent, child)
    yield ui
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def test_ui_serves_the_embedded_registry_and_names_the_current_run(embedded_ui):
    ui = embedded_ui
    current = next((line for line in ui.lines if line.startswith("current run:")), None)
    assert current is not None, "\n".join(ui.lines[-20:])
    experiment = current.split("/#/experiments/")[1].split("/")[0]
    assert current == f"current run: {ui.base}/#/experiments/{experiment}/runs/{ui.parent}"
    with urllib.request.urlopen(f"{ui.base}/", timeout=30) as page:
        assert page.status == 200 and "<title>MLflow</title>" in page.read().decode()
    found = get_json(f"{ui.base}/ajax-api/2.0/mlflow/runs/search", {"experiment_ids": [experiment]})["runs"]
    tags = {r["info"]["run_id"]: {t["key"]: t["value"] for t in r["data"]["tags"]} for r in found}
    assert tags[ui.child]["mlflow.parentRunId"] == ui.parent and tags[ui.parent][RUN_TAG] == ui.run_id
    history = get_json(f"{ui.base}/ajax-api/2.0/mlflow/metrics/get-history?run_id={ui.child}&metric_key=loss")
    assert len(history["metrics"]) == 10  # what the UI's loss chart draws


@pytest.mark.skipif(
    shutil.which(CHROMIUM) is None or shutil.which(CHROMEDRIVER) is None,
    reason="needs Debian's chromium and chromium-driver (apt-get install chromium chromium-driver)",
)
def test_the_run_its_nested_runs_and_a_metric_chart_render_in_a_browser(embedded_ui, tmp_path):
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    ui = embedded_ui
    current = next(line for line in ui.lines if line.startswith("current run:")).removeprefix("current run: ")
    options = Options()
    options.binary_location = shutil.which(CHROMIUM) or CHROMIUM
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-dev-shm-usage",
        "--disable-gpu",
        "--window-size=1400,1000",
    ):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(shutil.which(CHROMEDRIVER) or CHROMEDRIVER), options=options)
    try:
        wait = WebDriverWait(driver, 120)
        driver.get(current)
        wait.until(lambda d: "round-0-sft" in d.find_element(By.TAG_NAME, "body").text)
        page = driver.find_element(By.TAG_NAME, "body").text
        driver.save_screenshot(str(tmp_path / "parent-run.png"))
        assert f"flywheel-{ui.run_id}" in page and "Child runs" in page  # the parent, and its nested run

        driver.get(current.replace(ui.parent, ui.child) + "/model-metrics")
        wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, ".js-plotly-plot"))
        wait.until(lambda d: "round-0-sft (loss)" in d.find_element(By.TAG_NAME, "body").text)
        driver.save_screenshot(str(tmp_path / "loss-chart.png"))
        points = driver.find_elements(By.CSS_SELECTOR, ".js-plotly-plot .scatterlayer .point")
        assert len(points) >= 10  # the loss curve's ten steps are drawn, not one point
    finally:
        driver.quit()
    assert (tmp_path / "loss-chart.png").stat().st_size > 10_000


def test_sigterm_stops_the_ui_it_started(embedded_ui):
    ui = embedded_ui
    os.kill(ui.proc.pid, signal.SIGTERM)
    assert ui.proc.wait(60) == 0
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(f"{ui.base}/health", timeout=2)
        except OSError:
            return
        time.sleep(1)
    pytest.fail(f"the MLflow UI on port {ui.port} still answers after flywheel ui was stopped")


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
