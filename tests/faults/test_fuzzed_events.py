"""Fuzzed records through a real consumer: no crash, every rejected record dead-lettered with its reason."""

from __future__ import annotations

import random

import orjson
import pytest

from bus_schemas.codec import encode
from bus_schemas.envelope import new_event_id
from bus_schemas.errors import SchemaError
from bus_schemas.events import DeadLettered
from bus_schemas.examples import build_examples
from infra.blobs.filesystem import FileBlobStore
from infra.bootstrap import Ports, open_bus
from infra.bus.records import OutgoingRecord
from infra.events import ensure_topics, from_record
from infra.runtime import ConsumerRunner, ConsumerSpec

pytestmark = [pytest.mark.unit, pytest.mark.timeout(600)]

CASES = 10_000


def _mutations(rng: random.Random, valid: list[dict]) -> bytes:
    """One fuzz case: random bytes, broken JSON, or a valid event with a field removed, retyped, added, bumped."""
    kind = rng.randrange(9)
    if kind == 0:
        return rng.randbytes(rng.randrange(0, 300))
    base = dict(rng.choice(valid))
    if kind == 1:
        return orjson.dumps(base)[: rng.randrange(1, 60)]  # truncated
    if kind == 2:
        base.pop(rng.choice(sorted(base)))
    elif kind == 3:
        base[rng.choice(sorted(base))] = rng.choice([None, 7, -1.5, "x", [], {}, True])
    elif kind == 4:
        base[f"unexpected_{rng.randrange(100)}"] = "surprise"
    elif kind == 5:
        base["schema_version"] = rng.choice([0, 99, -3, "1"])
    elif kind == 6:
        base["event_type"] = rng.choice(["EpisodeExploded", "", "taskspecified", 42])
    elif kind == 7:
        base["pad"] = "x" * 70_000  # over the inline payload limit
    else:  # deeply nested JSON, deeper than orjson itself can write
        depth = rng.randrange(50, 5000)
        base["goal"] = "@@DEEP@@"
        return orjson.dumps(base).replace(b'"@@DEEP@@"', b"[" * depth + b'"deep"' + b"]" * depth)
    return orjson.dumps(base)


def test_fuzzed_records_never_crash_a_consumer_and_each_is_dead_lettered(tmp_path):
    rng = random.Random(20261129)
    examples = list(build_examples().values())
    valid = [orjson.loads(encode(e)) for e in examples]
    bus = open_bus(f"sqlite:///{tmp_path}/bus.db")
    ensure_topics(bus)
    payloads = [_mutations(rng, valid) for _ in range(CASES)]
    good = [e.model_copy(update={"event_id": new_event_id()}) for e in examples if e.event_type == "TaskSpecified"] * 5
    records = [OutgoingRecord("tasks", p, key=str(i).encode()) for i, p in enumerate(payloads)]
    records += [OutgoingRecord("tasks", encode(e), key=b"good") for e in good]
    rejected = 0
    for payload in payloads:
        try:
            from_record(OutgoingRecord("tasks", payload))  # type: ignore[arg-type]
        except SchemaError:
            rejected += 1
    for i in range(0, len(records), 1000):
        bus.publish_many(records[i : i + 1000])

    handled: list[str] = []
    spec = ConsumerSpec(name="fuzz-sink", topics=("tasks",), handle=lambda e, p: handled.append(e.event_id) or [])
    runner = ConsumerRunner(
        spec,
        Ports(bus=bus, blobs=FileBlobStore(tmp_path / "blobs"), registry=None),
        state_dir=tmp_path / "state",
        batch_size=500,
    )
    runner.run(idle_exit_s=2.0)
    runner.close()

    letters = [from_record(r) for r in bus.replay("dead-letters")]
    assert all(isinstance(d, DeadLettered) for d in letters)
    print(
        f"\nfuzz: cases={CASES} rejected={rejected} dead_lettered={len(letters)} crashes=0 "
        f"reasons={sorted({d.error_type for d in letters})}"
    )
    assert rejected > CASES * 0.8, "the mutations must mostly be invalid, or the test proves little"
    assert len(letters) == rejected
    assert all(d.error and d.consumer_group == spec.group for d in letters)
    assert {d.error_type for d in letters} <= {
        "MalformedEvent",
        "UnknownEventType",
        "UnsupportedSchemaVersion",
        "PayloadTooLarge",
        "EnvelopeMismatch",
    }  # a valid event on another type's topic
    assert set(handled) >= {e.event_id for e in good}
    assert sum(lag.lag for lag in bus.lag(spec.group, ["tasks"])) == 0
