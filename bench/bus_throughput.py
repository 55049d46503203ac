"""Bus throughput: our Kafka adapter vs a raw aiokafka loop on the same broker, and the embedded log.

Publishes and consumes N events of ~1 KB JSON through each path in one run and prints events/s and
the ratios (Kafka adapter / raw aiokafka; embedded against its targets of 20k appends/s and 100k
replayed events/s on one core). Needs the local stack for the Kafka rows (``flywheel stack up``).

    .venv/bin/python bench/bus_throughput.py [--events 50000] [--kafka 127.0.0.1:19092] [--no-kafka]
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import orjson
from rich.console import Console
from rich.table import Table

from infra.bus.embedded import EmbeddedBus
from infra.bus.records import OutgoingRecord, TopicLayout

console = Console()
BATCH = 1000


def payloads(n: int) -> list[tuple[bytes, bytes]]:
    """N (key, ~1 KB JSON value) pairs shaped like ObservationReturned events."""
    out = []
    for i in range(n):
        key = f"episode-{i % 500}".encode()
        body = {"event_type": "ObservationReturned", "event_id": str(uuid.uuid4()), "step": i, "pad": "x" * 880}
        out.append((key, orjson.dumps(body)))
    return out


def timed(fn: Callable[[], int]) -> float:
    start = time.perf_counter()
    count = fn()
    return count / (time.perf_counter() - start)


def bench_embedded(events: list[tuple[bytes, bytes]]) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        bus = EmbeddedBus(Path(tmp) / "bus.db")
        bus.create_topics([TopicLayout("bench", 3)])
        single = events[: min(len(events), 20_000)]

        def publish_single() -> int:
            for key, value in single:
                bus.publish(OutgoingRecord("bench", value, key=key))
            return len(single)

        def publish_batched() -> int:
            records = [OutgoingRecord("bench", v, key=k) for k, v in events]
            for i in range(0, len(records), BATCH):
                bus.publish_many(records[i : i + BATCH])
            return len(records)

        def replay() -> int:
            return sum(1 for _ in bus.replay("bench"))

        def consume() -> int:
            consumer = bus.consumer("bench-group", ["bench"])
            total, want = 0, len(single) + len(events)
            while total < want:
                batch = consumer.poll(max_records=2000, timeout_s=1.0)
                consumer.commit(batch)
                total += len(batch)
            consumer.close()
            return total

        result = {
            "publish (one event per call)": timed(publish_single),
            "publish (batches of 1000)": timed(publish_batched),
            "replay": timed(replay),
            "group consume + commit": timed(consume),
        }
        bus.close()
        return result


def bench_kafka_adapter(bootstrap: str, events: list[tuple[bytes, bytes]]) -> dict[str, float]:
    from infra.bus.kafka import KafkaBus

    bus = KafkaBus(bootstrap)
    topic = f"bench-adapter-{uuid.uuid4().hex[:8]}"
    bus.create_topics([TopicLayout(topic, 3)])

    def publish() -> int:
        records = [OutgoingRecord(topic, v, key=k) for k, v in events]
        for i in range(0, len(records), BATCH):
            bus.publish_many(records[i : i + BATCH])
        return len(records)

    def consume() -> int:
        consumer = bus.consumer(f"g-{topic}", [topic])
        total = 0
        while total < len(events):
            batch = consumer.poll(max_records=2000, timeout_s=1.0)
            consumer.commit(batch)
            total += len(batch)
        consumer.close()
        return total

    result = {"publish": timed(publish), "consume + commit": timed(consume)}
    bus.close()
    return result


async def _raw_aiokafka(bootstrap: str, events: list[tuple[bytes, bytes]]) -> dict[str, float]:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
    from aiokafka.admin import AIOKafkaAdminClient, NewTopic

    topic = f"bench-raw-{uuid.uuid4().hex[:8]}"
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    await admin.create_topics([NewTopic(topic, num_partitions=3, replication_factor=1)])
    await admin.close()

    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", enable_idempotence=True, linger_ms=5)
    await producer.start()
    start = time.perf_counter()
    for i in range(0, len(events), BATCH):
        futures = [await producer.send(topic, value=v, key=k) for k, v in events[i : i + BATCH]]
        await producer.flush()
        await asyncio.gather(*futures)
    publish = len(events) / (time.perf_counter() - start)
    await producer.stop()

    consumer = AIOKafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id=f"g-{topic}",
        enable_auto_commit=False,
        auto_offset_reset="earliest",
    )
    await consumer.start()
    start, total = time.perf_counter(), 0
    while total < len(events):
        batches = await consumer.getmany(timeout_ms=1000, max_records=2000)
        total += sum(len(b) for b in batches.values())
        if batches:
            await consumer.commit()
    consume = total / (time.perf_counter() - start)
    await consumer.stop()
    return {"publish": publish, "consume + commit": consume}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=50_000, help="events per measurement (default 50000)")
    parser.add_argument("--kafka", default="127.0.0.1:19092", help="bootstrap server of the local stack")
    parser.add_argument("--no-kafka", action="store_true", help="only the embedded log")
    args = parser.parse_args()
    events = payloads(args.events)

    table = Table(title=f"bus throughput, {args.events} events of ~1 KB")
    for col in ("path", "operation", "events/s", "vs baseline"):
        table.add_column(col, justify="right" if col != "path" else "left")

    embedded = bench_embedded(events)
    targets = {"publish (one event per call)": 20_000, "publish (batches of 1000)": 20_000, "replay": 100_000}
    for op, rate in embedded.items():
        target = targets.get(op)
        table.add_row("embedded (SQLite WAL)", op, f"{rate:,.0f}", f"{rate / target:.2f}x target" if target else "")

    if not args.no_kafka:
        raw = asyncio.run(_raw_aiokafka(args.kafka, events))
        adapter = bench_kafka_adapter(args.kafka, events)
        for op in ("publish", "consume + commit"):
            table.add_row("raw aiokafka", op, f"{raw[op]:,.0f}", "1.00x (baseline)")
            table.add_row("Kafka adapter", op, f"{adapter[op]:,.0f}", f"{adapter[op] / raw[op]:.2f}x raw")
    console.print(table)


if __name__ == "__main__":
    main()
