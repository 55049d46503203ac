"""The foundation smoke run: every port exercised once on the chosen adapters, reporting what happened.

Publishes one example of every event type (re-stamped with this run's id), consumes them back as a
consumer group, replays the log, stores a harness config blob and registers it as a harness version.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import orjson

from bus_schemas.envelope import Producer, new_event_id
from bus_schemas.events import HarnessVersionPublished
from bus_schemas.examples import build_examples
from bus_schemas.topics import TOPICS
from infra.bootstrap import Ports
from infra.events import ensure_topics, from_record, publish_all


@dataclass
class SmokeReport:
    run_id: str
    published: int = 0
    consumed: Counter[str] = field(default_factory=Counter)
    replayed: int = 0
    blob: str = ""
    harness_version: str = ""


def run_smoke(ports: Ports, run_id: str) -> SmokeReport:
    report = SmokeReport(run_id=run_id)
    ensure_topics(ports.bus)

    config = {"instructions": "Act through typed tools; verify before finishing.", "budgets": {"max_steps": 20}}
    blob = ports.blobs.put(orjson.dumps(config, option=orjson.OPT_SORT_KEYS), "application/json")
    report.blob = blob.sha256

    registry_run = ports.registry.start_run("harness", run_name=f"smoke-{run_id}", params={"source": "smoke"})
    ports.registry.log_dict(registry_run, config, "harness/config.json")
    ports.registry.end_run(registry_run)
    version = ports.registry.register_version("harness-smoke", registry_run, "harness", tags={"blob": blob.sha256})
    ports.registry.set_alias("harness-smoke", "production", version.version)
    report.harness_version = f"{version.name}/{version.version}"

    events = [e.model_copy(update={"run_id": run_id, "event_id": new_event_id()}) for e in build_examples().values()]
    events.append(
        HarnessVersionPublished(
            producer=Producer(service="smoke", version="0.1.0"),
            run_id=run_id,
            harness_name="harness-smoke",
            harness_version=version.version,
            config=blob,
        )
    )
    report.published = len(publish_all(ports.bus, events))

    consumer = ports.bus.consumer(f"smoke-{run_id}", list(TOPICS))
    try:
        while sum(report.consumed.values()) < len(events):
            batch = consumer.poll(max_records=500, timeout_s=2.0)
            if not batch:
                break
            for record in batch:
                event = from_record(record)
                if event.run_id == run_id:
                    report.consumed[event.event_type] += 1
            consumer.commit(batch)
    finally:
        consumer.close()

    report.replayed = sum(
        1 for topic in TOPICS for record in ports.bus.replay(topic) if from_record(record).run_id == run_id
    )
    return report
