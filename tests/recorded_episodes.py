"""Inputs and outputs of the verifier fault tests on Kafka: recorded episodes published in a namespace of their own,
and the verdicts per episode read back."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bus_schemas.events import EpisodeVerified
from bus_schemas.topics import TOPIC_VERDICTS
from consumers.common.recording import record_episode
from infra.bootstrap import open_blob_store, open_bus
from infra.bus.port import Bus
from infra.events import ensure_topics, from_record, publish_all
from producers.tasks import build_task_suite, reference_solver
from producers.tasks.runner import noop_policy


def kafka_urls(stack: Any, tmp_path: Path, query: str) -> dict[str, str]:
    """The real stack's Kafka with ``query`` (its namespace and settings), local blobs and registry under tmp_path."""
    return {
        "bus": f"kafka://{stack.host}:{stack.kafka_port}?{query}",
        "blobs": f"file:///{tmp_path}/blobs",
        "registry": f"sqlite:///{tmp_path}/mlflow.db",
    }


def publish_recorded_episodes(urls: dict[str, str], count: int, prefix: str) -> tuple[Bus, list[str]]:
    """``count`` train tasks and one recorded episode each (``<prefix>-<i>``: the reference solver's for even i, a
    policy that does nothing for odd i), published; the open bus and the episode ids."""
    bus = open_bus(urls["bus"])
    ensure_topics(bus)
    blobs = open_blob_store(urls["blobs"])
    tasks = [t for t in build_task_suite("run-test") if t.split == "train"][:count]
    episodes = []
    for i, task in enumerate(tasks):
        policy = reference_solver if i % 2 == 0 else noop_policy
        episodes += record_episode(task, policy, blobs, episode_id=f"{prefix}-{i}")
    publish_all(bus, [*tasks, *episodes])
    return bus, [f"{prefix}-{i}" for i in range(len(tasks))]


def verdicts_per_episode(bus: Bus) -> dict[str, int]:
    """How many EpisodeVerified each episode has on the verdicts topic."""
    verdicts: dict[str, int] = {}
    for record in bus.replay(TOPIC_VERDICTS):
        event = from_record(record)
        assert isinstance(event, EpisodeVerified)
        verdicts[event.episode_id] = verdicts.get(event.episode_id, 0) + 1
    return verdicts
