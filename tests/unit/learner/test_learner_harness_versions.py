"""The dataset re-renders episodes of any harness version on the log: revised versions come from the registry."""

from __future__ import annotations

import pytest

from bus_schemas.envelope import Producer
from harness_service.config import HarnessConfig
from harness_service.policy.scripted import ScriptedPolicy
from harness_service.runner.episode import Harness, RunIds
from harness_service.versions import publish_harness_version
from infra.events import publish_all
from learner.config import LearnerConfig
from learner.dataset import build_dataset, read_log
from learner.dataset.harnesses import harness_resolver
from learner.episodes import run_judged_episode
from learner.jobs import current_dataset, harness_version, skills
from producers.backends.sandbox.backend import SandboxBackend
from producers.tasks import build_task_suite, reference_solver

pytestmark = pytest.mark.unit

REVISED = HarnessConfig(name="tiny-planner", instructions="Act through tools. One action per reply; finish when done.")


def record(ports, config: HarnessConfig, label: str | None, tasks) -> set[str]:  # noqa: ANN001
    """Reference episodes of ``tasks`` run under ``config``, recorded with harness version ``label``."""
    publish_all(ports.bus, list(tasks))
    episodes = set()
    for task in tasks:
        harness = Harness(
            config=config,
            policy=ScriptedPolicy(reference_solver(task), "reference"),
            blobs=ports.blobs,
            events=lambda e: None,
            skills=skills(),
            version_label=label,
        )
        judged = run_judged_episode(harness, task, SandboxBackend(), RunIds(run_id="run-hv", cause=task.event_id))
        publish_all(ports.bus, judged.events)
        episodes.add(judged.outcome.episode_id)
    return episodes


def test_episodes_of_a_published_revision_are_trained_on_and_unknown_versions_are_skipped(embedded_ports) -> None:
    ports, config = embedded_ports, LearnerConfig()
    tasks = [t for t in build_task_suite("run-hv") if t.split == "train" and t.category == "tool_use"][:6]
    published = publish_harness_version(
        ports.registry, ports.blobs, REVISED, producer=Producer(service="t", version="1"), run_id="run-hv"
    )
    assert published.harness_version == "tiny-planner/1"
    ours = record(ports, config.harness, None, tasks[:2])
    revised = record(ports, REVISED, published.harness_version, tasks[2:4])
    unpublished = record(ports, REVISED, "tiny-planner/7", tasks[4:])

    data = current_dataset(ports, config)
    assert {e.episode_id for e in data.examples} == ours | revised
    assert data.harness_versions == sorted([harness_version(config), "tiny-planner/1"])
    assert set(data.skipped) == unpublished and all("unknown harness version" in why for why in data.skipped.values())

    log = read_log(ports.bus)
    known_only = build_dataset(log, {harness_version(config): config.harness}, skills(), ports.blobs.get)
    assert {e.episode_id for e in known_only.examples} == ours

    wrong = harness_resolver({"tiny-planner/1": config.harness})  # a mislabelled config is caught by the byte check
    mislabelled = build_dataset(log, wrong, skills(), ports.blobs.get)
    assert revised <= set(mislabelled.skipped) and "differs from the recorded blob" in mislabelled.skipped[min(revised)]
