"""What the consumer benches share: drain a group to zero lag and time it, and the consume-only and decode-only
baselines."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Sequence

from infra.bus.port import Bus
from infra.bus.records import Record


def lag(bus: Bus, group: str, topics: Sequence[str]) -> int:
    """Records ``group`` has yet to commit on ``topics`` (negative lags of a fresh group count as none)."""
    return sum(max(p.lag, 0) for p in bus.lag(group, list(topics)))


def drain(step: Callable[[], int], bus: Bus, group: str, topics: Sequence[str]) -> tuple[int, float]:
    """(records, seconds from the first record to the last) to take ``topics`` through ``step`` until the group
    has no lag. Lag, not a record count, says when it is done: Kafka's end offsets also count transaction markers."""
    first = last = 0.0
    seen = 0
    while True:
        before = time.perf_counter()
        got = step()
        if got:
            first = first or before
            last = time.perf_counter()
        seen += got
        if not got and lag(bus, group, topics) == 0:
            return seen, last - first


def consume_only(
    bus: Bus, topics: Sequence[str], decode: Callable[[Record], object] | None = None
) -> tuple[int, float]:
    """The baseline: poll and commit every record of ``topics`` in a fresh group, decoding nothing (or, with
    ``decode``, passing each record through it first: the decode-only baseline)."""
    group = f"bench.raw.{uuid.uuid4().hex[:6]}"
    consumer = bus.consumer(group, list(topics))

    def step() -> int:
        records = consumer.poll(max_records=200, timeout_s=0.2)
        if decode is not None:
            for record in records:
                decode(record)
        if records:
            consumer.commit(records)
        return len(records)

    try:
        return drain(step, bus, group, topics)
    finally:
        consumer.close()
