"""The bus contract, run against the embedded SQLite log and the real Kafka broker alike."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from infra.bus.partitioner import partition_for_key
from infra.bus.records import OutgoingRecord, Record, TopicLayout

pytestmark = pytest.mark.contract

HANG_SCRIPT = Path(__file__).with_name("consume_without_commit.py")


def _topic(bus, unique: str, name: str, partitions: int = 3) -> str:
    topic = f"t-{name}-{unique}"
    bus.create_topics([TopicLayout(topic, partitions)])
    return topic


def _drain(consumer, expected: int, *, deadline_s: float = 60.0, commit: bool = True) -> list[Record]:
    got: list[Record] = []
    end = time.monotonic() + deadline_s
    while len(got) < expected and time.monotonic() < end:
        batch = consumer.poll(max_records=500, timeout_s=0.5)
        got.extend(batch)
        if commit and batch:
            consumer.commit(batch)
    return got


def test_keys_keep_order_and_land_where_kafka_puts_them(bus, unique):
    topic = _topic(bus, unique, "order", partitions=3)
    keys = [f"episode-{i}".encode() for i in range(10)]
    records = [OutgoingRecord(topic, f"{k.decode()}:{n}".encode(), key=k) for n in range(30) for k in keys]
    published = bus.publish_many(records)
    assert [p.partition for p in published] == [partition_for_key(r.key, 3) for r in records]

    seen: dict[bytes, list[int]] = {}
    for rec in bus.replay(topic):
        assert rec.partition == partition_for_key(rec.key, 3)
        seen.setdefault(rec.key, []).append(int(rec.value.split(b":")[1]))
    assert seen == {k: list(range(30)) for k in keys}


def test_offsets_are_dense_per_partition(bus, unique):
    topic = _topic(bus, unique, "dense", partitions=2)
    out = bus.publish_many([OutgoingRecord(topic, b"v", partition=i % 2) for i in range(10)])
    assert [p.offset for p in out if p.partition == 0] == [0, 1, 2, 3, 4]
    assert bus.end_offsets(topic) == {0: 5, 1: 5}


def test_two_groups_each_see_every_event(bus, unique):
    topic = _topic(bus, unique, "fanout")
    bus.publish_many([OutgoingRecord(topic, str(i).encode(), key=str(i).encode()) for i in range(50)])
    for group in (f"a-{unique}", f"b-{unique}"):
        consumer = bus.consumer(group, [topic])
        try:
            got = _drain(consumer, 50)
        finally:
            consumer.close()
        assert sorted(int(r.value) for r in got) == list(range(50))


def test_two_members_of_one_group_split_the_partitions(bus, unique):
    topic = _topic(bus, unique, "split", partitions=4)
    group = f"g-{unique}"
    first, second = bus.consumer(group, [topic]), bus.consumer(group, [topic])
    try:
        _split(first, second, 4)

        bus.publish_many([OutgoingRecord(topic, str(i).encode(), key=str(i).encode()) for i in range(200)])
        got_a: list[Record] = []
        got_b: list[Record] = []
        end = time.monotonic() + 60
        while len(got_a) + len(got_b) < 200 and time.monotonic() < end:
            for consumer, sink in ((first, got_a), (second, got_b)):
                batch = consumer.poll(timeout_s=0.2)
                sink.extend(batch)
                consumer.commit(batch)
    finally:
        first.close()
        second.close()
    values_a, values_b = {int(r.value) for r in got_a}, {int(r.value) for r in got_b}
    assert values_a and values_b
    assert not values_a & values_b
    assert values_a | values_b == set(range(200))
    assert {r.partition for r in got_a}.isdisjoint({r.partition for r in got_b})


def _split(first, second, partitions: int) -> None:
    end = time.monotonic() + 60
    while time.monotonic() < end:
        first.poll(timeout_s=0.2)
        second.poll(timeout_s=0.2)
        a, b = first.assignment(), second.assignment()
        if a and b and not (a & b) and len(a | b) == partitions:
            return
    raise AssertionError("the group never split its partitions")


def test_a_member_busy_past_the_session_timeout_keeps_its_partitions(bus, bus_url, unique):
    """A member that takes longer than the session timeout to handle a record (a long episode) is alive: its
    peers never take its partitions meanwhile, so no record is handled twice. (Once, on the embedded log, a
    member heartbeated only when it polled: a rollout worker mid-episode expired, its peer took the partition
    and ran the next request while the worker, back with the same share, ran it too.)"""
    topic = _topic(bus, unique, "busy", partitions=4)
    group = f"g-{unique}"
    busy, peer = bus.consumer(group, [topic]), bus.consumer(group, [topic])
    try:
        _split(busy, peer, 4)
        mine = busy.assignment()
        session_timeout_s = float(parse_qs(urlsplit(bus_url).query)["session_timeout_s"][0])
        end = time.monotonic() + 2 * session_timeout_s  # busy does not poll
        while time.monotonic() < end:
            peer.poll(timeout_s=0.2)
            assert not peer.assignment() & mine, "a peer took the partitions of a member that was only busy"
        busy.poll(timeout_s=0.2)
        assert busy.assignment() == mine
    finally:
        busy.close()
        peer.close()


def test_a_peer_that_joins_and_leaves_while_a_member_is_busy_moves_the_members_generation(bus, unique):
    """Whoever joined or left while a member was busy, its ``generation`` says so once it polls again, even when its
    share comes back the same. (A rollout worker mid-episode missed a peer that joined, started the next request of
    the worker's partition and was killed; back with an unchanged share, the worker took that request for its own
    next one and never closed the peer's attempt.)"""
    topic = _topic(bus, unique, "generation", partitions=2)
    group = f"g-{unique}"
    busy = bus.consumer(group, [topic])
    try:
        end = time.monotonic() + 60
        while len(busy.assignment()) < 2:
            assert time.monotonic() < end, "a lone member never got every partition"
            busy.poll(timeout_s=0.2)
        mine, generation = busy.assignment(), busy.generation()
        peer = bus.consumer(group, [topic])
        peer.poll(timeout_s=2.0)
        peer.close()
        end = time.monotonic() + 60
        while busy.generation() == generation or busy.assignment() != mine:
            assert time.monotonic() < end, "the member never noticed the peer that came and went"
            busy.poll(timeout_s=0.2)
        for _ in range(5):  # and with nobody coming or going, it stays put
            busy.poll(timeout_s=0.2)
        settled = busy.generation()
        for _ in range(10):
            busy.poll(timeout_s=0.2)
            assert busy.generation() == settled and busy.assignment() == mine
    finally:
        busy.close()


def test_after_the_group_changes_every_partition_restarts_at_the_groups_commit(bus, unique):
    """A member that polled past its commit gets the uncommitted records again, in order from the commit, once the
    group's generation moves, also for partitions it kept, as Kafka's eager rebalance does. A rollout worker relies
    on it to drop what it held: on the embedded log a kept partition went on from the member's position, the worker
    ran a held request after one delivered again and earlier, committed past the earlier one and was killed."""
    topic = _topic(bus, unique, "restart", partitions=2)
    group = f"g-{unique}"
    bus.publish_many([OutgoingRecord(topic, f"{p}-{i}".encode(), partition=p) for p in (0, 1) for i in range(10)])
    member = bus.consumer(group, [topic])
    try:
        got = _drain(member, 20, commit=False)
        member.commit([r for r in got if r.offset < 3])
        before = member.generation()
        peer = bus.consumer(group, [topic])
        peer.poll(timeout_s=2.0)
        peer.close()
        by_generation: dict[int, list[Record]] = {}
        end = time.monotonic() + 60
        while True:
            batch = member.poll(timeout_s=0.2)
            by_generation.setdefault(member.generation(), []).extend(batch)
            settled = member.generation() != before and len(member.assignment()) == 2
            if settled and len(by_generation[member.generation()]) >= 14:
                break
            assert time.monotonic() < end, f"after the group changed, the member got {by_generation}"
        again = by_generation[member.generation()]
    finally:
        member.close()
    for partition in (0, 1):
        assert [r.offset for r in again if r.partition == partition] == list(range(3, 10))


def test_committed_offsets_resume_and_lag_is_reported(bus, unique):
    topic = _topic(bus, unique, "resume", partitions=1)
    group = f"g-{unique}"
    bus.publish_many([OutgoingRecord(topic, str(i).encode(), partition=0) for i in range(20)])
    consumer = bus.consumer(group, [topic])
    try:
        got = _drain(consumer, 20, commit=False)
        consumer.commit([r for r in got if int(r.value) < 12])
    finally:
        consumer.close()
    assert [lag.lag for lag in bus.lag(group, [topic])] == [8]
    again = bus.consumer(group, [topic])
    try:
        rest = _drain(again, 8)
    finally:
        again.close()
    assert [int(r.value) for r in rest] == list(range(12, 20))
    assert [lag.lag for lag in bus.lag(group, [topic])] == [0]


def test_a_member_killed_before_commit_gets_its_events_delivered_again(bus, bus_url, unique):
    topic = _topic(bus, unique, "crash", partitions=2)
    group = f"g-{unique}"
    bus.publish_many([OutgoingRecord(topic, str(i).encode(), key=str(i).encode()) for i in range(40)])
    proc = subprocess.Popen(
        [sys.executable, str(HANG_SCRIPT), bus_url, group, topic, "40"],
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    try:
        line = proc.stdout.readline()
        assert line.strip() == "polled 40", f"child consumer said {line!r}"
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    survivor = bus.consumer(group, [topic])
    try:
        got = _drain(survivor, 40, deadline_s=90)
    finally:
        survivor.close()
    assert sorted(int(r.value) for r in got) == list(range(40))


def test_replay_from_an_offset_and_from_a_time(bus, unique):
    topic = _topic(bus, unique, "replay", partitions=1)
    bus.publish_many([OutgoingRecord(topic, f"early-{i}".encode(), partition=0) for i in range(10)])
    time.sleep(0.05)
    cut = datetime.now(UTC)
    time.sleep(0.05)
    bus.publish_many([OutgoingRecord(topic, f"late-{i}".encode(), partition=0) for i in range(10)])

    from_offset = [r.value.decode() for r in bus.replay(topic, from_offset=7)]
    assert from_offset == [f"early-{i}" for i in range(7, 10)] + [f"late-{i}" for i in range(10)]
    since = [r.value.decode() for r in bus.replay(topic, since=cut)]
    assert since == [f"late-{i}" for i in range(10)]
    assert [r.offset for r in bus.replay(topic)] == list(range(20))


def test_headers_and_keys_round_trip(bus, unique):
    topic = _topic(bus, unique, "headers", partitions=1)
    bus.publish(OutgoingRecord(topic, b"{}", key=b"k", headers=(("event_type", b"TaskSpecified"), ("v", b"\x00\x01"))))
    (rec,) = list(bus.replay(topic))
    assert rec.key == b"k"
    assert rec.headers == (("event_type", b"TaskSpecified"), ("v", b"\x00\x01"))
    assert rec.timestamp_ms > 0


def test_created_topics_are_listed_with_their_partitions(bus, unique):
    topic = _topic(bus, unique, "listed", partitions=5)
    bus.create_topics([TopicLayout(topic, 2)])  # creating again leaves it as it is
    assert bus.topics()[topic] == 5
    assert bus.partitions(topic) == 5
