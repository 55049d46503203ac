"""kill -9 the dev evaluator after its registry writes (dev-score tag, dev-evaluation run, @production) and before
its commit: the redelivered verdict is evaluated again, the group's DevSetEvaluated is published once and the
registry holds the same state as after one clean evaluation (one dev-evaluation run, not two)."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from bus_schemas.envelope import Producer
from bus_schemas.events import DevSetEvaluated
from bus_schemas.topics import TOPIC_MODELS
from consumers.common.recording import record_episode
from consumers.registry import build
from consumers.round_controller.handler import evaluate, start_round
from infra.bootstrap import Ports, open_blob_store, open_bus, open_registry
from infra.events import ensure_topics, from_record, publish_all
from infra.runtime import ConsumerRunner
from learner.tracking import EVALUATION_ROLE, ROLE_TAG
from producers.tasks import build_task_suite, reference_solver
from producers.tasks.runner import noop_policy

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

REPO = Path(__file__).resolve().parents[2]
WORKER = REPO / "tests" / "integration" / "consumers" / "worker.py"
P = Producer(service="test", version="0")


def _dev_evaluator(urls: dict[str, str], state: Path, mode: str) -> subprocess.CompletedProcess:
    args = [
        sys.executable,
        str(WORKER),
        "dev_evaluator",
        urls["bus"],
        urls["blobs"],
        urls["registry"],
        str(state),
        mode,
    ]
    env = {**os.environ, "IDLE_EXIT_S": "4"}
    return subprocess.run(args, cwd=REPO, capture_output=True, text=True, timeout=300, env=env)


def _tags(ports: Ports, model: str, version: str) -> dict[str, str]:
    return next(v.tags for v in ports.registry.versions(model) if v.version == version)


def test_a_dev_evaluator_killed_between_its_registry_writes_and_commit_evaluates_once(
    crash_urls: dict[str, str], tmp_path: Path
) -> None:
    urls = crash_urls
    model = f"planner-{uuid.uuid4().hex[:8]}"
    ports = Ports(open_bus(urls["bus"]), open_blob_store(urls["blobs"]), open_registry(urls["registry"]))
    ensure_topics(ports.bus)
    version = ports.registry.register_version(model, ports.registry.start_run("crash"), "checkpoint").version

    # a dev evaluation of planner/<version>: half of its episodes solved (reference solver), half not (no-op)
    suite = build_task_suite("crash")
    dev = [t for t in suite if t.split == "dev"][:8]
    started = start_round("crash", 0, "p0", "default", 4, P)
    requests = evaluate(started, started, dev, f"{model}/{version}", "default", P, "model")
    by_id = {t.task_id: t for t in dev}
    episodes = []
    for i, request in enumerate(requests):
        policy = reference_solver if i % 2 == 0 else noop_policy
        episodes += record_episode(
            by_id[request.task_id], policy, ports.blobs, episode_id=request.episode_id, run_id="crash"
        )
    publish_all(ports.bus, [*suite, started, *requests, *episodes])
    verifier = ConsumerRunner(build("verifier"), ports, state_dir=tmp_path / "verifier")
    verifier.run(idle_exit_s=2.0)
    verifier.close()

    crashed = _dev_evaluator(urls, tmp_path / "state", "crash")
    assert crashed.returncode == -9 and "dying before commit" in crashed.stdout, crashed.stderr[-3000:]
    assert "dev_overall" in _tags(ports, model, version)  # the write outside the bus happened before the crash
    assert not [r for r in ports.bus.replay(TOPIC_MODELS) if b"DevSetEvaluated" in r.value]

    again = _dev_evaluator(urls, tmp_path / "state", "run")
    assert again.returncode == 0, again.stderr[-3000:]
    evaluated = [e for e in map(from_record, ports.bus.replay(TOPIC_MODELS)) if isinstance(e, DevSetEvaluated)]
    print(f"\ndev evaluator crash: kills=1, DevSetEvaluated events={len(evaluated)}")
    assert len(evaluated) == 1, "the redelivered verdict published a second evaluation"
    [event] = evaluated
    assert event.model_version == version and 0 < event.overall < 1
    assert _tags(ports, model, version)["dev_overall"] == f"{event.overall:.6f}"
    assert ports.registry.resolve(f"{model}@production").version == version
    assert len(ports.registry.versions(model)) == 1
    runs = MlflowClient(urls["registry"]).search_runs(
        [MlflowClient(urls["registry"]).get_experiment_by_name(model).experiment_id],
        filter_string=f"tags.{ROLE_TAG} = '{EVALUATION_ROLE}'",
    )
    print(f"dev-evaluation runs in MLflow={len(runs)}")
    assert len(runs) == 1, "the redelivered verdict logged a second dev-evaluation run"
    ports.bus.close()
