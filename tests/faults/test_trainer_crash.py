"""kill -9 the trainer after its MLflow writes and before its commit: the redelivered TrainingRequested is
answered from the registry, so exactly one model version exists per request and its events are published once."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from bus_schemas.envelope import Producer
from bus_schemas.events import ModelVersionRegistered, TrainingRequested
from bus_schemas.topics import TOPIC_MODELS
from infra.bootstrap import Ports, open_blob_store, open_bus, open_registry
from infra.events import ensure_topics, from_record, publish_all
from learner.config import LearnerConfig
from learner.jobs import seed_reference_episodes
from learner.sft import SftSettings

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

REPO = Path(__file__).resolve().parents[2]
WORKER = REPO / "tests" / "integration" / "consumers" / "worker.py"


def _trainer(urls: dict[str, str], state: Path, mode: str, config: Path) -> subprocess.CompletedProcess:
    args = [sys.executable, str(WORKER), "trainer", urls["bus"], urls["blobs"], urls["registry"], str(state), mode]
    env = {**os.environ, "IDLE_EXIT_S": "4", "FLYWHEEL_LEARNER_CONFIG": str(config)}
    return subprocess.run(args, cwd=REPO, capture_output=True, text=True, timeout=400, env=env)


def test_a_trainer_killed_between_registration_and_commit_registers_one_version(
    crash_urls: dict[str, str], tmp_path: Path
) -> None:
    urls = crash_urls
    model = f"planner-{uuid.uuid4().hex[:8]}"
    config = LearnerConfig(
        cold_start_seeds=1,
        train_categories=("tool_use",),
        max_difficulty=1,
        sft=SftSettings(max_steps=3, batch_size=4),
        work_dir=tmp_path / "work",
    )
    config_file = tmp_path / "learner.json"
    config_file.write_text(config.model_dump_json())
    ports = Ports(open_bus(urls["bus"]), open_blob_store(urls["blobs"]), open_registry(urls["registry"]))
    ensure_topics(ports.bus)
    seed_reference_episodes(ports, config, run_id="crash")
    request = TrainingRequested(
        producer=Producer(service="test", version="0"),
        run_id="crash",
        round=0,
        model_name=model,
        algorithm="sft",
        admitted_trajectories=1,
    )
    publish_all(ports.bus, [request])

    crashed = _trainer(urls, tmp_path / "state", "crash", config_file)
    assert crashed.returncode == -9 and "dying before commit" in crashed.stdout, crashed.stderr[-3000:]
    assert len(ports.registry.versions(model)) == 1  # the write outside the bus happened before the crash
    assert not [r for r in ports.bus.replay(TOPIC_MODELS) if b"ModelVersionRegistered" in r.value]

    again = _trainer(urls, tmp_path / "state", "run", config_file)
    assert again.returncode == 0, again.stderr[-3000:]
    assert "already registered" in again.stderr + again.stdout
    versions = ports.registry.versions(model)
    registered = [e for e in map(from_record, ports.bus.replay(TOPIC_MODELS)) if isinstance(e, ModelVersionRegistered)]
    print(f"\ntrainer crash: kills=1, versions={len(versions)}, ModelVersionRegistered events={len(registered)}")
    assert len(versions) == 1, "the redelivered request trained and registered a second version"
    assert len(registered) == 1 and registered[0].model_version == versions[0].version
    assert registered[0].causation_id is not None
    assert ports.registry.resolve(f"{model}@candidate").version == versions[0].version
    ports.bus.close()
