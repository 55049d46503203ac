"""A zombie consumer on Kafka: paused (SIGSTOP) past its session timeout with a handled batch not yet committed,
its partitions move to a new member that handles the same records; when it wakes up (SIGCONT), its late
transaction must be fenced, so every episode still has exactly one verdict."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
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
SESSION_TIMEOUT_S = 6


def _start(urls: dict[str, str], state_dir: Path, mode: str, log: Path, idle_s: float) -> subprocess.Popen:
    args = [sys.executable, str(WORKER), "verifier", urls["bus"], urls["blobs"], urls["registry"], str(state_dir), mode]
    with log.open("w") as out:
        return subprocess.Popen(
            args, cwd=REPO, stdout=out, stderr=subprocess.STDOUT, env={**os.environ, "IDLE_EXIT_S": str(idle_s)}
        )


def _wait_for(log: Path, text: str, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if text in log.read_text():
            return True
        time.sleep(0.2)
    return False


def test_a_paused_consumer_that_wakes_up_after_losing_its_partitions_is_fenced(real_stack, tmp_path):
    namespace = f"zombie-{uuid.uuid4().hex[:10]}"
    urls = {
        "bus": f"kafka://{real_stack.host}:{real_stack.kafka_port}?session_timeout_s={SESSION_TIMEOUT_S}&namespace={namespace}",
        "blobs": f"file:///{tmp_path}/blobs",
        "registry": f"sqlite:///{tmp_path}/mlflow.db",
    }
    bus = open_bus(urls["bus"])
    ensure_topics(bus)
    blobs = open_blob_store(urls["blobs"])
    tasks = [t for t in build_task_suite("run-test") if t.split == "train"][:12]
    episodes = []
    for i, task in enumerate(tasks):
        policy = reference_solver if i % 2 == 0 else noop_policy
        episodes += record_episode(task, policy, blobs, episode_id=f"ep-zombie-{i}")
    publish_all(bus, [*tasks, *episodes])

    zombie_log, owner_log = tmp_path / "zombie.log", tmp_path / "owner.log"
    zombie = _start(urls, tmp_path / "zombie-state", "pause", zombie_log, idle_s=15)
    try:
        assert _wait_for(zombie_log, "pausing before commit", 120), zombie_log.read_text()[-3000:]
        owner = _start(urls, tmp_path / "owner-state", "run", owner_log, idle_s=15)
        assert owner.wait(timeout=240) == 0, owner_log.read_text()[-3000:]
        os.kill(zombie.pid, signal.SIGCONT)
        zombie.wait(timeout=240)
    finally:
        if zombie.poll() is None:
            os.kill(zombie.pid, signal.SIGCONT)
            zombie.kill()
            zombie.wait()

    zombie_out = zombie_log.read_text()
    verdicts: dict[str, int] = {}
    for record in bus.replay(TOPIC_VERDICTS):
        event = from_record(record)
        assert isinstance(event, EpisodeVerified)
        verdicts[event.episode_id] = verdicts.get(event.episode_id, 0) + 1
    bus.close()
    duplicated = {k: v for k, v in verdicts.items() if v > 1}
    print(
        f"\nzombie: 1 paused past its session timeout; verdicts={sum(verdicts.values())} for {len(tasks)} episodes, "
        f"duplicated={len(duplicated)}, lost={len(tasks) - len(verdicts)}"
    )
    assert "fenced" in zombie_out, zombie_out[-3000:]
    assert sorted(verdicts) == sorted(f"ep-zombie-{i}" for i in range(len(tasks)))
    assert not duplicated, duplicated
