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

from bus_schemas.events import EpisodeVerified
from bus_schemas.topics import TOPIC_VERDICTS
from consumers.common.recording import record_episode
from infra.bootstrap import open_blob_store, open_bus
from infra.events import ensure_topics, from_record, publish_all
from producers.tasks import build_task_suite, reference_solver
from producers.tasks.runner import noop_policy

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

REPO = Path(__file__).resolve().parents[2]
WORKER = REPO / "tests" / "integration" / "consumers" / "worker.py"


def test_records_whose_commit_answer_was_lost_are_not_handled_again(real_stack, tmp_path):
    namespace = f"lostack-{uuid.uuid4().hex[:10]}"
    urls = {
        "bus": f"kafka://{real_stack.host}:{real_stack.kafka_port}?namespace={namespace}",
        "blobs": f"file:///{tmp_path}/blobs",
        "registry": f"sqlite:///{tmp_path}/mlflow.db",
    }
    bus = open_bus(urls["bus"])
    ensure_topics(bus)
    blobs = open_blob_store(urls["blobs"])
    tasks = [t for t in build_task_suite("run-test") if t.split == "train"][:8]
    episodes = []
    for i, task in enumerate(tasks):
        episodes += record_episode(task, reference_solver if i % 2 == 0 else noop_policy, blobs, episode_id=f"ep-{i}")
    publish_all(bus, [*tasks, *episodes])

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

    verdicts: dict[str, int] = {}
    for record in bus.replay(TOPIC_VERDICTS):
        event = from_record(record)
        assert isinstance(event, EpisodeVerified)
        verdicts[event.episode_id] = verdicts.get(event.episode_id, 0) + 1
    bus.close()
    assert sorted(verdicts) == sorted(f"ep-{i}" for i in range(len(tasks)))
    assert {k: v for k, v in verdicts.items() if v > 1} == {}
