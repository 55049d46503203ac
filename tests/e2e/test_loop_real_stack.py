"""The main job end to end on the real stack: Kafka + SeaweedFS + MLflow, every consumer its own process."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from loop_support import check_run, small_loop

from infra.bootstrap import open_ports
from infra.config import load_settings

pytestmark = [pytest.mark.e2e, pytest.mark.integration, pytest.mark.timeout(1200)]
REPO = Path(__file__).resolve().parents[2]


def test_two_rounds_with_every_consumer_as_a_process_on_the_real_stack(real_stack, unique, tmp_path):
    run_id = f"e2e-stack-{unique}"
    urls = {
        "bus": f"kafka://{real_stack.host}:{real_stack.kafka_port}",
        "blobs": f"s3://flywheel-blobs?endpoint={real_stack.host}:{real_stack.s3_port}",
        "registry": real_stack.mlflow_url,
    }
    config = tmp_path / "loop.json"
    config.write_text(small_loop(tmp_path).model_dump_json())
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "infra.cli.main",
            "run",
            "--spawn-consumers",
            f"--config={config}",
            f"--run-id={run_id}",
            "--no-progress",
            *(f"--{k}={v}" for k, v in urls.items()),
        ],
        cwd=REPO,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
        capture_output=True,
        text=True,
        timeout=1100,
    )
    logs = tmp_path / "runs" / run_id / "logs"
    tails = (
        "".join(f"\n--- {p.name}\n{p.read_text(errors='replace')[-1500:]}" for p in sorted(logs.glob("*.log")))
        if logs.exists()
        else ""
    )
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:] + tails
    assert "dev Overall per round:" in proc.stdout
    consumers = (
        "round_controller",
        "reweighter",
        "task_constructor",
        "verifier",
        "diagnoser",
        "curator",
        "trainer",
        "dev_evaluator",
        "harness_reviser",
        "rollout-worker",
    )
    # the run's own log (library output); each consumer: its console (<name>.log) and every record, libraries'
    # too, per process (<name>.all.log, or <name>-<k>.all.log for each of a consumer's worker processes)
    names = {p.name for p in logs.glob("*.log")}
    assert sorted(n for n in names if not n.endswith(".all.log")) == sorted(
        ["flywheel.log", *(f"{n}.log" for n in consumers)]
    )
    every_record = {n.removesuffix(".all.log") for n in names if n.endswith(".all.log")}
    assert {re.sub(r"-\d+$", "", n) for n in every_record} == set(consumers), sorted(every_record)
    ports = open_ports(
        load_settings(bus=f"{urls['bus']}?namespace={run_id}", blobs=urls["blobs"], registry=urls["registry"])
    )
    try:
        check_run(ports, run_id, tmp_path / "runs" / run_id)
    finally:
        ports.close()
