"""The Kafka broker restarts in the middle of a round: ``flywheel run`` (every consumer its own process) on a
private broker is stopped and started again while the round's episodes flow. The round still completes, and
nothing is lost or duplicated: every episode has one verdict and one curation decision, no event is published
twice, nothing is dead-lettered, the round registers one model version, and replay re-derives the verifier's,
curator's and diagnoser's outputs from their inputs."""

from __future__ import annotations

import collections
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bus_schemas.events import (
    EpisodeEnded,
    EpisodeStarted,
    EpisodeVerified,
    ModelVersionRegistered,
    RoundCompleted,
    TrajectoryAdmitted,
    TrajectoryQuarantined,
    TrajectoryRejected,
)
from bus_schemas.topics import TOPICS
from consumers.registry import CONSUMERS
from infra.audit.replay import Scope, replay_verify
from infra.bootstrap import Ports, open_blob_store, open_bus, open_registry
from infra.events import decodable

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]

CURATION = (TrajectoryAdmitted, TrajectoryRejected, TrajectoryQuarantined)
REPO = Path(__file__).resolve().parents[2]
ROLLOUTS = 32
RUN_ID = "restart"


def one_round(tmp_path: Path) -> Path:
    """Round 0 only: the reference solver's episodes, verified, curated, trained on (briefly), registered."""
    config = {
        "rounds": 1,
        "first_round_rollouts": ROLLOUTS,
        "min_admitted_for_training": 8,
        "revise_harness": False,
        "final_test": False,
        "stall_timeout_s": 300,
        "out_dir": str(tmp_path / "runs"),
        "learner": {
            "sft": {"max_steps": 4, "batch_size": 4},
            "max_new_tokens": 48,
            "dev_per_category": 1,
            "cold_start_seeds": 1,
            "work_dir": str(tmp_path / "learner"),
        },
    }
    path = tmp_path / "loop.json"
    path.write_text(json.dumps(config))
    return path


def test_a_broker_restart_mid_round_loses_and_duplicates_nothing(private_stack, tmp_path: Path) -> None:
    stack = private_stack(["kafka"])
    bus_url = f"kafka://{stack.settings.host}:{stack.settings.kafka_port}"
    blobs_dir = tmp_path / "blobs"
    command = [
        sys.executable,
        "-m",
        "infra.cli.main",
        "run",
        "--spawn-consumers",
        "--no-progress",
        f"--config={one_round(tmp_path)}",
        f"--run-id={RUN_ID}",
        f"--bus={bus_url}",
        f"--blobs=file://{blobs_dir}",
        f"--registry=sqlite:///{tmp_path}/mlflow.db",
    ]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "FLYWHEEL_OUTAGE_RETRY_S": "180"}
    with (tmp_path / "console.txt").open("w") as console:
        proc = subprocess.Popen(command, cwd=REPO, env=env, stdout=console, stderr=subprocess.STDOUT)
    try:
        # mid-round: the reference solver's episodes have started storing their evidence, the round has not ended
        deadline = time.monotonic() + 300
        while sum(1 for p in blobs_dir.rglob("*") if p.is_file()) < ROLLOUTS // 2:
            assert proc.poll() is None, (tmp_path / "console.txt").read_text()[-3000:]
            assert time.monotonic() < deadline, "no episode evidence within 5 minutes"
            time.sleep(0.2)
        stack.down(["kafka"])
        time.sleep(3.0)
        stack.up(["kafka"])
        assert proc.wait(timeout=700) == 0, _tails(tmp_path)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()

    bus = open_bus(f"{bus_url}?namespace={RUN_ID}")
    ports = Ports(bus, open_blob_store(f"file://{blobs_dir}"), open_registry(f"sqlite:///{tmp_path}/mlflow.db"))
    try:
        events = [e for topic in TOPICS for e in decodable(bus.replay(topic))]
        ids = collections.Counter(e.event_id for e in events)
        assert [i for i, n in ids.items() if n > 1] == []  # no event published twice
        dead = [(d.consumer_group, d.original_event_type, d.error_type, d.error[:300]) for d in _dead(bus)]
        assert dead == []
        top = {e.episode_id for e in events if isinstance(e, EpisodeStarted) and e.parent_episode_id is None}
        ended = {e.episode_id for e in events if isinstance(e, EpisodeEnded) and e.episode_id in top}  # no sub-agents
        verdicts = collections.Counter(e.episode_id for e in events if isinstance(e, EpisodeVerified))
        curated = collections.Counter(e.episode_id for e in events if isinstance(e, CURATION))
        print(f"\nbroker restart mid-round: episodes={len(ended)} verdicts={len(verdicts)} curated={len(curated)}")
        assert set(verdicts) == ended and set(verdicts.values()) == {1}  # lost 0, duplicated 0
        assert len(curated) >= ROLLOUTS and set(curated) <= ended and set(curated.values()) == {1}
        assert [e.round for e in events if isinstance(e, RoundCompleted)] == [0]
        [registered] = [e for e in events if isinstance(e, ModelVersionRegistered)]
        assert [v.version for v in ports.registry.versions(registered.model_name)] == [registered.model_version]
        deterministic = {n: CONSUMERS[n] for n in ("verifier", "curator", "diagnoser")}
        report = replay_verify(ports, deterministic, Scope())
        assert report.ok, (report.differences[:3], report.bad_blobs[:3])
        assert report.inputs["verifier"] >= ROLLOUTS
    finally:
        bus.close()


def _dead(bus) -> list:  # noqa: ANN001
    from bus_schemas.events import DeadLettered

    return [d for d in decodable(bus.replay("dead-letters")) if isinstance(d, DeadLettered)]


def _tails(tmp_path: Path) -> str:
    logs = tmp_path / "runs" / RUN_ID / "logs"
    parts = [(tmp_path / "console.txt").read_text(errors="replace")[-3000:]]
    parts += [f"\n--- {p.name}\n{p.read_text(errors='replace')[-1500:]}" for p in sorted(logs.glob("*.log"))]
    return "".join(parts)
