"""One round of the loop with every consumer as its own OS process, on the embedded log and on Kafka."""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from bus_schemas.envelope import Producer
from bus_schemas.events import RolloutRequested, TaskGenerationRequested
from consumers.common.recording import record_episode
from consumers.round_controller.handler import start_round
from infra.events import from_record, publish_all
from producers.tasks import build_task_suite, reference_solver
from producers.tasks.runner import noop_policy

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[3]
WORKER = Path(__file__).with_name("worker.py")
P = Producer(service="test", version="0")


def _consume(name: str, urls, state_dir: Path) -> None:
    args = [sys.executable, str(WORKER), name, urls["bus"], urls["blobs"], urls["registry"], str(state_dir), "run"]
    done = subprocess.run(
        args,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=240,
        env={**os.environ, "IDLE_EXIT_S": "8" if urls["bus"].startswith("kafka") else "2.5"},
    )
    assert done.returncode == 0, done.stderr[-3000:]


def _types(ports, topic: str) -> Counter[str]:
    return Counter(from_record(r).event_type for r in ports.bus.replay(topic))


def test_a_round_flows_through_every_consumer_process(ports, urls, tmp_path):
    state = tmp_path / "state"
    tasks = build_task_suite("run-test")
    publish_all(ports.bus, [*tasks, start_round("run-test", 0, "p0", "h0", 6, P)])
    _consume("reweighter", urls, state)
    assert _types(ports, "sampling") == {"SamplingPlanUpdated": 1}
    _consume("round_controller", urls, state)
    requests = [e for e in map(from_record, ports.bus.replay("rollouts")) if isinstance(e, RolloutRequested)]
    assert len(requests) == 6
    by_id = {t.task_id: t for t in tasks}
    for i, request in enumerate(requests):  # the rollout worker's part, scripted
        policy = reference_solver if i % 3 else noop_policy
        publish_all(
            ports.bus,
            record_episode(
                by_id[request.task_id], policy, ports.blobs, episode_id=request.episode_id, run_id="run-test"
            ),
        )
    for name in ("verifier", "diagnoser", "curator", "round_controller"):
        _consume(name, urls, state)
    assert _types(ports, "verdicts") == {"EpisodeVerified": 6}
    assert _types(ports, "diagnoses") == {"FailureDiagnosed": 2}
    curation = _types(ports, "curation")
    assert (
        sum(n for t, n in curation.items() if t.startswith("Trajectory")) == 6 and curation["TrajectoryAdmitted"] >= 1
    )
    assert _types(ports, "rounds") == {"RoundStarted": 2, "RoundCompleted": 1}  # too little data to train: next round
    publish_all(
        ports.bus,
        [TaskGenerationRequested(producer=P, run_id="run-test", request_id="req-1", capability="skills", count=2)],
    )
    before = _types(ports, "tasks")["TaskSpecified"]
    _consume("task_constructor", urls, state)
    assert _types(ports, "tasks")["TaskSpecified"] == before + 2
    assert _types(ports, "dead-letters") == {}
