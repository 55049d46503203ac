"""The curator, diagnoser and verifier over one embedded log: every failed episode's decision links its diagnosis."""

from __future__ import annotations

import pytest

from bus_schemas.events import EpisodeVerified, FailureDiagnosed, TrajectoryAdmitted, TrajectoryRejected
from bus_schemas.topics import TOPIC_CURATION, TOPIC_DIAGNOSES, TOPIC_VERDICTS
from consumers.common.recording import record_episode
from consumers.registry import build
from infra.blobs.filesystem import FileBlobStore
from infra.bootstrap import Ports, open_bus
from infra.events import decodable, ensure_topics, publish_all
from infra.runtime import ConsumerRunner
from producers.tasks import build_task_suite, reference_solver
from producers.tasks.runner import noop_policy

pytestmark = pytest.mark.unit


def _run(name: str, ports: Ports, state) -> None:  # noqa: ANN001
    runner = ConsumerRunner(build(name), ports, state_dir=state)
    while runner.step(timeout_s=0.1):
        pass
    runner.close()


def test_failed_episodes_are_decided_on_their_diagnosis_and_link_it(tmp_path):
    ports = Ports(open_bus(f"sqlite:///{tmp_path}/bus.db"), FileBlobStore(tmp_path / "blobs"), None)  # type: ignore[arg-type]
    ensure_topics(ports.bus)
    tasks = [t for t in build_task_suite("links") if t.split == "train"][:3]
    events = []
    for i, task in enumerate(tasks):
        for j, policy in enumerate((reference_solver, noop_policy)):
            events += record_episode(task, policy, ports.blobs, episode_id=f"ep-{i}-{j}", run_id="links")
    publish_all(ports.bus, [*tasks, *events])
    _run("verifier", ports, tmp_path / "state")
    _run("curator", ports, tmp_path / "state")  # before any diagnosis: failures wait for theirs
    early = list(decodable(ports.bus.replay(TOPIC_CURATION)))
    _run("diagnoser", ports, tmp_path / "state")
    _run("curator", ports, tmp_path / "state")

    verdicts = {e.episode_id: e for e in decodable(ports.bus.replay(TOPIC_VERDICTS)) if isinstance(e, EpisodeVerified)}
    diagnoses = {
        e.episode_id: e for e in decodable(ports.bus.replay(TOPIC_DIAGNOSES)) if isinstance(e, FailureDiagnosed)
    }
    decisions = [
        e
        for e in decodable(ports.bus.replay(TOPIC_CURATION))
        if isinstance(e, (TrajectoryAdmitted, TrajectoryRejected))
    ]
    failed = {ep for ep, v in verdicts.items() if v.outcome == "failure"}
    assert failed and set(diagnoses) == failed
    assert {e.episode_id for e in early} == set(verdicts) - failed
    assert sorted(e.episode_id for e in decisions) == sorted(verdicts)  # one decision per episode
    for decision in decisions:
        if decision.episode_id in failed:
            diagnosis = diagnoses[decision.episode_id]
            assert isinstance(decision, TrajectoryRejected)
            assert decision.failure_diagnoses == [diagnosis.event_id] and decision.causation_id == diagnosis.event_id
            assert any(f"diagnosed {diagnosis.attribution}" in r for r in decision.reasons)
        else:
            assert decision.failure_diagnoses == []
    ports.bus.close()
