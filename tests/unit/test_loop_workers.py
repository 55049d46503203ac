"""The in-process loop's other rollout workers are processes: one that dies fails the run with its log, not a stall."""

from __future__ import annotations

import time

import pytest

from infra.loop.died import ConsumerDied
from infra.loop.workers import PeerRolloutWorkers

pytestmark = pytest.mark.unit


def test_a_rollout_worker_process_that_exits_fails_the_run_with_the_end_of_its_log(tmp_path):
    urls = {
        "bus": "nosuch://127.0.0.1:1",  # refused when the worker opens its ports
        "blobs": f"file:///{tmp_path}/blobs",
        "registry": f"sqlite:///{tmp_path}/mlflow.db",
        "inference": "local:",
    }
    peers = PeerRolloutWorkers(1, urls, tmp_path / "state", tmp_path / "logs")
    try:
        [proc] = peers.procs.values()
        deadline = time.monotonic() + 120
        while proc.exitcode is None and time.monotonic() < deadline:
            time.sleep(0.2)
        with pytest.raises(ConsumerDied, match=r"rollout-worker-1 exited with 1") as died:
            peers.check()
        assert "nosuch" in str(died.value) and str(tmp_path / "logs" / "rollout-worker-1.log") in str(died.value)
    finally:
        peers.close()
