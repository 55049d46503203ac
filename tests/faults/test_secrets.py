"""Secrets come from env or config and never reach events, logs or MLflow params/tags."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from infra.bootstrap import open_bus, open_registry

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]

REPO = Path(__file__).resolve().parents[2]


def test_the_main_job_on_the_real_stack_leaks_no_secret(real_stack, tmp_path):
    secret = real_stack.s3_secret_key.get_secret_value()
    namespace = f"secrets-{uuid.uuid4().hex[:8]}"
    bus_url = f"kafka://{real_stack.host}:{real_stack.kafka_port}?namespace={namespace}"
    env = {
        **os.environ,
        "FLYWHEEL_S3_ACCESS_KEY": real_stack.s3_access_key,
        "FLYWHEEL_S3_SECRET_KEY": secret,
        "FLYWHEEL_HARNESS_TOKEN": "harness-token-" + uuid.uuid4().hex,
    }
    config = tmp_path / "loop.json"  # one short round: the point is what the job writes, not what it learns
    config.write_text(
        json.dumps(
            {
                "rounds": 1,
                "first_round_rollouts": 16,
                "min_admitted_for_training": 4,
                "learner": {
                    "sft": {"max_steps": 5, "batch_size": 4},
                    "max_new_tokens": 48,
                    "dev_per_category": 1,
                    "cold_start_seeds": 1,
                },
            }
        )
    )
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "infra.cli.main",
            "run",
            "--no-progress",
            f"--config={config}",
            "--bus",
            bus_url,
            "--blobs",
            f"s3://flywheel-blobs?endpoint={real_stack.host}:{real_stack.s3_port}",
            "--registry",
            real_stack.mlflow_url,
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=800,
    )
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, log[-3000:]
    secrets = [secret, env["FLYWHEEL_HARNESS_TOKEN"]]

    for value in secrets:
        assert value not in log
    bus = open_bus(bus_url)
    events = 0
    for topic in bus.topics():
        for record in bus.replay(topic):
            events += 1
            for value in secrets:
                assert value.encode() not in record.value, f"a secret is in an event on {topic}"
    bus.close()
    assert events > 0

    from mlflow.tracking import MlflowClient

    client = MlflowClient(real_stack.mlflow_url)
    runs = [r for e in client.search_experiments() for r in client.search_runs([e.experiment_id], max_results=200)]
    assert runs
    for run in runs:
        logged = " ".join([*run.data.params.values(), *run.data.tags.values()])
        for value in secrets:
            assert value not in logged
    assert open_registry(real_stack.mlflow_url).url == real_stack.mlflow_url
