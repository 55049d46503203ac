"""kill -9 the reweighter, round controller and task constructor at random points while >= 10k events flow on
the real Kafka broker (thousands of rounds and generation requests): 0 lost, 0 duplicated against a clean run.

The machinery is test_kill_consumers.py's (which covers the episode stage on both buses); this file exists so
xdist's per-file scheduling can run the two long chaos runs on different workers.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from test_kill_consumers import run_chaos

pytestmark = [pytest.mark.integration, pytest.mark.timeout(1200)]


def test_round_stage_kills_on_kafka_lose_and_duplicate_nothing(tmp_path: Path, real_stack) -> None:  # noqa: ANN001
    bus_url = (
        f"kafka://{real_stack.host}:{real_stack.kafka_port}?session_timeout_s=6&namespace=chaos-{uuid.uuid4().hex[:10]}"
    )
    run_chaos(tmp_path, bus_url, "rounds")
