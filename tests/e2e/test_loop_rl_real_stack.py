"""``flywheel run --algorithm rl|mixed`` on the real stack: the trainer's GRPO publishes its groups on Kafka and
waits for the rollout-worker and verifier processes; every consumer is its own process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from loop_support import check_run
from rl_support import check_rl, small_rl_loop

from infra.bootstrap import open_ports
from infra.config import load_settings

pytestmark = [pytest.mark.e2e, pytest.mark.integration, pytest.mark.timeout(1200)]
REPO = Path(__file__).resolve().parents[2]


def test_rl_rounds_with_every_consumer_as_a_process_on_the_real_stack(real_stack, unique, tmp_path):
    """``--algorithm rl`` (``mixed``: test_loop_mixed_real_stack.py, its own file so xdist can run the two long
    runs on different workers)."""
    run_on_real_stack(real_stack, unique, tmp_path, "rl")


def run_on_real_stack(real_stack, unique, tmp_path, algorithm):  # noqa: ANN001, ANN201
    run_id = f"e2e-{algorithm}-stack-{unique}"
    urls = {
        "bus": f"kafka://{real_stack.host}:{real_stack.kafka_port}",
        "blobs": f"s3://flywheel-blobs?endpoint={real_stack.host}:{real_stack.s3_port}",
        "registry": real_stack.mlflow_url,
    }
    config = tmp_path / "loop.json"
    config.write_text(small_rl_loop(tmp_path, algorithm).model_dump_json())
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
    assert "GRPO steps" in proc.stdout
    ports = open_ports(
        load_settings(bus=f"{urls['bus']}?namespace={run_id}", blobs=urls["blobs"], registry=urls["registry"])
    )
    try:
        check_run(ports, run_id, tmp_path / "runs" / run_id)
        check_rl(ports, run_id, tmp_path / "runs" / run_id, algorithm)
    finally:
        ports.close()
