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
from recorded_episodes import kafka_urls, publish_recorded_episodes, verdicts_per_episode

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
    urls = kafka_urls(real_stack, tmp_path, f"session_timeout_s={SESSION_TIMEOUT_S}&namespace={namespace}")
    bus, episode_ids = publish_recorded_episodes(urls, 12, "ep-zombie")

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
    verdicts = verdicts_per_episode(bus)
    bus.close()
    duplicated = {k: v for k, v in verdicts.items() if v > 1}
    print(
        f"\nzombie: 1 paused past its session timeout; verdicts={sum(verdicts.values())} for {len(episode_ids)} "
        f"episodes, duplicated={len(duplicated)}, lost={len(episode_ids) - len(verdicts)}"
    )
    assert "fenced" in zombie_out, zombie_out[-3000:]
    assert sorted(verdicts) == sorted(episode_ids)
    assert not duplicated, duplicated
