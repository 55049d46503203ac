"""A real one-round `flywheel run` in a subprocess, on the embedded adapters: its console holds only the project's
own lines (library bars, warnings and raw training dicts go to ``runs/<run_id>/logs/flywheel.log``), and MLflow
holds one parent run with the round's training and dev-evaluation runs nested under it"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from infra.cli.quiet import LIBRARY_SWITCHES, VERBOSE_ENV

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]

REPO = Path(__file__).resolve().parents[2]
# What the libraries print when left alone (seen on the console of `make run` before it was quietened).
NOISE = (
    "Downloading artifacts",  # MLflow
    "Loading weights",  # transformers
    "Writing model shards",  # transformers
    "Building labels",  # datasets, through trl
    "it/s]",  # any tqdm bar
    "Warning:",  # FutureWarning, UserWarning (pin_memory) ...
    "warnings.warn",
    "{'loss'",  # transformers' PrinterCallback
    "{'train_runtime'",
    "Creating initial MLflow database tables",  # MLflow's own log handler
)


def tiny_loop(tmp_path: Path) -> Path:
    config = {
        "rounds": 1,
        "first_round_rollouts": 16,
        "min_admitted_for_training": 8,
        "revise_harness": False,
        "final_test": False,
        "stall_timeout_s": 300,
        "learner": {
            "sft": {"max_steps": 6, "logging_steps": 2},
            "max_new_tokens": 48,  # an untrained model writes to the limit on every dev step
            "dev_per_category": 1,
            "cold_start_seeds": 1,
            "work_dir": str(tmp_path / "learner"),
        },
    }
    path = tmp_path / "loop.json"
    path.write_text(json.dumps(config))
    return path


def run_command(tmp_path: Path, run_id: str, *flags: str) -> tuple[list[str], dict[str, str]]:
    # The test process may have set some switches itself (conftest turns MLflow's bars off): the command must.
    env = {k: v for k, v in os.environ.items() if k not in LIBRARY_SWITCHES and k != VERBOSE_ENV}
    command = [
        sys.executable,
        "-m",
        "infra.cli.main",
        *flags,
        "run",
        f"--config={tiny_loop(tmp_path)}",
        f"--out={tmp_path / 'runs'}",
        f"--run-id={run_id}",
        f"--bus=sqlite:///{tmp_path}/bus.db",
        f"--blobs=file:///{tmp_path}/blobs",
        f"--registry=sqlite:///{tmp_path}/mlflow.db",
    ]
    return command, env


def flywheel_run(tmp_path: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    command, env = run_command(tmp_path, "quiet", *flags)
    return subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=540)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess[str]]:
    tmp_path = tmp_path_factory.mktemp("run")
    return tmp_path, flywheel_run(tmp_path)


def test_the_console_of_a_run_holds_only_the_projects_lines(run_dir):
    tmp_path, done = run_dir
    console = done.stdout + done.stderr
    assert done.returncode == 0, console[-3000:]
    assert "round 0:" in done.stdout and "dev Overall per round" in done.stdout
    assert [noise for noise in NOISE if noise in console] == [], console[-3000:]
    log = (tmp_path / "runs" / "quiet" / "logs" / "flywheel.log").read_text()
    shown = "".join(done.stdout.split())  # rich wraps long lines at the terminal width
    assert str(tmp_path / "runs" / "quiet" / "logs" / "flywheel.log") in shown  # the console says where
    assert "py.warnings WARNING" in log  # library warnings (transformers' deprecations, torch's pin_memory)
    assert "Creating initial MLflow database tables" in log  # MLflow's records, through our handler
    steps = [line for line in log.splitlines() if "flywheel.learner.sft INFO step" in line and " loss=" in line]
    assert len(steps) >= 3  # every logging step of the SFT run, as a record instead of a printed dict


def test_mlflow_holds_a_parent_run_with_the_rounds_runs_nested(run_dir):
    tmp_path, done = run_dir
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    from infra.bootstrap import open_registry

    registry = open_registry(f"sqlite:///{tmp_path}/mlflow.db")
    parent = registry.find_run("planner", {"flywheel_run_id": "quiet", "flywheel_role": "flywheel-run"})
    assert parent is not None and parent in "".join(done.stdout.split())  # the console names it
    run = registry.get_run(parent)
    assert run.status == "FINISHED" and run.tags["bus"].startswith("sqlite:///") and "dev_overall" in run.metrics
    assert [step for step, _ in registry.metric_history(parent, "dev_overall")] == [0]
    assert registry.metric_history(parent, "system/system_memory_usage_megabytes")  # the System metrics tab
    assert {p.name for p in registry.download_artifacts(parent, "report", tmp_path / "artifacts").iterdir()} >= {
        "report.html",
        "report.json",
        "dev.png",
    }
    training = registry.find_run("planner", {"flywheel_run_id": "quiet", "flywheel_role": "training"})
    evaluation = registry.find_run("planner", {"flywheel_run_id": "quiet", "flywheel_role": "dev-evaluation"})
    assert training is not None and evaluation is not None
    assert registry.get_run(training).parent_run_id == parent and registry.get_run(evaluation).parent_run_id == parent
    assert len(registry.metric_history(training, "loss")) == 3  # 6 steps, logged every 2: a curve, not a point
    (dataset,) = registry.datasets(training)
    assert dataset.profile["examples"] >= 8 and any(k.startswith("episodes/") for k in dataset.source["event_offsets"])


def test_a_run_stopped_with_sigterm_marks_its_mlflow_run_killed(tmp_path):
    command, env = run_command(tmp_path, "stopped")
    log = tmp_path / "runs" / "stopped" / "logs" / "flywheel.log"
    with (tmp_path / "output.txt").open("w") as output:  # the child keeps its own copy of the descriptor
        proc = subprocess.Popen(command, cwd=REPO, env=env, stdout=output, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 240
        while "flywheel.run INFO run stopped:" not in (log.read_text() if log.exists() else ""):
            assert proc.poll() is None and time.monotonic() < deadline, "the run never started"
            time.sleep(0.5)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(120) == 143, (tmp_path / "output.txt").read_text()[-3000:]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    from infra.bootstrap import open_registry

    registry = open_registry(f"sqlite:///{tmp_path}/mlflow.db")
    parent = registry.find_run("planner", {"flywheel_run_id": "stopped", "flywheel_role": "flywheel-run"})
    assert parent is not None and registry.get_run(parent).status == "KILLED"
