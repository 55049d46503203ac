"""A transaction's answer lost on Kafka: the broker commits a consumer's outputs and offsets, but the consumer sees
an error (a broker restart or a dropped connection between the commit and its response), so it rewinds and is
handed the same records again. It must find them committed and publish nothing twice: every episode still has
exactly one verdict (a broker restart mid-round once showed an episode verified twice)."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from recorded_episodes import kafka_urls, publish_recorded_episodes, verdicts_per_episode

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

REPO = Path(__file__).resolve().parents[2]
WORKER = REPO / "tests" / "integration" / "consumers" / "worker.py"


def test_records_whose_commit_answer_was_lost_are_not_handled_again(real_stack, tmp_path):
    urls = kafka_urls(real_stack, tmp_path, f"namespace=lostack-{uuid.uuid4().hex[:10]}")
    bus, episode_ids = publish_recorded_episodes(urls, 8, "ep")

    log = tmp_path / "verifier.log"
    args = [sys.executable, str(WORKER), "verifier", urls["bus"], urls["blobs"], urls["registry"]]
    with log.open("w") as out:
        worker = subprocess.run(
            [*args, str(tmp_path / "state"), "lost_ack"],
            cwd=REPO,
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**os.environ, "IDLE_EXIT_S": "8"},
            timeout=300,
        )
    output = log.read_text()
    assert worker.returncode == 0, output[-3000:]
    assert "committed, answer lost" in output, output[-3000:]  # the fault happened

    verdicts = verdicts_per_episode(bus)
    bus.close()
    assert sorted(verdicts) == sorted(episode_ids)
    assert {k: v for k, v in verdicts.items() if v > 1} == {}
