"""Auditor tools on a real recorded log: replay reproduces the consumers, blob hashes are
checked, export and timeline."""

from __future__ import annotations

import json

import pytest

from bus_schemas.events import EpisodeVerified
from consumers.common.recording import record_episode
from consumers.registry import CONSUMERS, build
from infra.audit.export import export_trajectories
from infra.audit.replay import Scope, replay_verify
from infra.audit.timeline import describe, episode_events
from infra.blobs.filesystem import FileBlobStore
from infra.bootstrap import Ports, open_bus
from infra.events import decodable, ensure_topics, publish_all
from infra.runtime import ConsumerRunner
from producers.tasks import build_task_suite, reference_solver
from producers.tasks.runner import noop_policy

pytestmark = pytest.mark.integration

DETERMINISTIC = ("verifier", "diagnoser", "curator")  # pipeline order: the curator decides failures on their diagnosis


@pytest.fixture
def audited(tmp_path) -> Ports:
    """A log of 24 recorded episodes (half solved, half not) that the three consumers have handled live."""
    blobs = FileBlobStore(tmp_path / "blobs")
    ports = Ports(open_bus(f"sqlite:///{tmp_path}/bus.db"), blobs, None)  # type: ignore[arg-type]
    ensure_topics(ports.bus)
    tasks = [t for t in build_task_suite("audit") if t.split == "train"][:12]
    events = []
    for i, task in enumerate(tasks):
        for j, policy in enumerate((reference_solver, noop_policy)):
            events += record_episode(task, policy, blobs, episode_id=f"ep-{i}-{j}", run_id="audit")
    publish_all(ports.bus, [*tasks, *events])
    for name in DETERMINISTIC:
        runner = ConsumerRunner(build(name), ports, state_dir=tmp_path / "state")
        runner.run(idle_exit_s=1.0)
        runner.close()
    yield ports
    ports.bus.close()


def test_replay_reproduces_every_recorded_output_and_checks_blobs(audited):
    report = replay_verify(audited, {n: CONSUMERS[n] for n in DETERMINISTIC}, Scope())
    assert report.ok, report.differences[:3] or report.bad_blobs[:3]
    assert report.inputs["verifier"] == 48  # each episode's EpisodeStarted (remembered) and EpisodeEnded (judged)
    assert report.outputs_compared["verifier"] == 24 and report.outputs_compared["curator"] >= 24
    assert report.outputs_compared["diagnoser"] >= 1
    assert report.blobs_checked >= 24


def test_replay_reports_a_tampered_blob_and_a_changed_output(audited):
    verdict = next(e for e in decodable(audited.bus.replay("verdicts")) if isinstance(e, EpisodeVerified))
    ref = verdict.evidence[0]
    (audited.blobs.root / ref.sha256[:2] / ref.sha256[2:4] / ref.sha256).write_bytes(b"tampered")
    report = replay_verify(audited, {"verifier": CONSUMERS["verifier"]}, Scope(episode_id=verdict.episode_id))
    assert report.inputs["verifier"] == 2
    assert any(ref.sha256 in bad for bad in report.bad_blobs)
    assert report.differences and report.differences[0].input_event_id == verdict.causation_id
    assert not report.ok


def test_export_and_timeline(audited, tmp_path):
    path, count = export_trajectories(audited, tmp_path / "export", "jsonl")
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert count == len(rows) >= 1
    assert all(r["policy_version"] and json.loads(r["steps"]) for r in rows)
    parquet, same = export_trajectories(audited, tmp_path / "export", "parquet")
    assert same == count and parquet.stat().st_size > 0

    lines = [line for event in episode_events(audited.bus, "ep-0-0") for line in describe(event)]
    assert lines[0].startswith("started") and any(line.startswith("verdict") for line in lines)
    assert any(line.startswith("ended") for line in lines)
