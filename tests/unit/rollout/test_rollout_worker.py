"""Rollout worker in-process on the embedded bus: groups, redelivery dedupe, abandoned attempts, bad requests."""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

import pytest
from scripted_requests import scripted_request

from bus_schemas.envelope import Producer
from bus_schemas.events.episodes import ActionRejected, ContextBuilt, EpisodeEnded, EpisodeStarted
from bus_schemas.events.rollouts import RolloutRequested
from bus_schemas.topics import TOPIC_ROLLOUTS
from harness_service.policy.scripted import ScriptedPolicy
from infra.audit.blobs import blob_refs
from infra.bootstrap import Ports, open_blob_store, open_bus
from infra.bus.partitioner import partition_for_key
from infra.bus.records import TopicPartition
from infra.events import ensure_topics, from_record, publish, to_record
from producers.backends.sandbox import SandboxBackend
from producers.pool import EnvironmentPool
from producers.rollout import RolloutWorker, episode_id_for
from producers.rollout import sink as sink_module
from producers.rollout.ids import parse_episode_id
from producers.rollout.versions import SCRIPTED, VersionResolver
from producers.rollout.worker import GROUP
from producers.tasks import build_task_suite

pytestmark = pytest.mark.unit
P = Producer(service="test", version="0")
TASK = build_task_suite("unit")[0]


@pytest.fixture
def ports(tmp_path: Path) -> Ports:
    bus = open_bus(f"sqlite:///{tmp_path}/bus.db?session_timeout_s=1.5")
    ensure_topics(bus)
    publish(bus, TASK)
    return Ports(bus, open_blob_store(f"file:///{tmp_path}/blobs"), None)  # type: ignore[arg-type]


def worker(ports: Ports, tmp_path: Path, stale_after_s: float = 30.0) -> RolloutWorker:
    pool = EnvironmentPool()
    pool.register("sandbox", SandboxBackend, 1)
    return RolloutWorker(  # one worker, no peers: nothing to wait for after joining the group
        ports, pool, state_dir=tmp_path / "state", stale_after_s=stale_after_s, claim_grace_s=0.0
    )


def request(**overrides) -> RolloutRequested:
    return scripted_request(TASK, run_id="unit", producer=P, **overrides)


def by_episode(ports: Ports) -> dict[str, list]:
    found: dict[str, list] = {}
    for record in ports.bus.replay("episodes"):
        event = from_record(record)
        found.setdefault(event.episode_id, []).append(event)
    return found


def test_episode_ids_round_trip() -> None:
    req = request(group_size=3)
    ids = {episode_id_for(req, m, a): (m, a) for m in range(3) for a in range(3)}
    assert len(ids) == 9 and all(parse_episode_id(req, e) == ma for e, ma in ids.items())
    assert episode_id_for(req, 0, 0) == req.episode_id and parse_episode_id(req, req.episode_id + ".g7") is None


def test_a_group_request_runs_g_independent_episodes_sharing_a_group_id(ports: Ports, tmp_path: Path) -> None:
    req = request(group_size=3)
    publish(ports.bus, req)
    stats = worker(ports, tmp_path).run(idle_exit_s=0.5)
    episodes = by_episode(ports)
    assert set(episodes) == {episode_id_for(req, m, 0) for m in range(3)} and stats.episodes == 3
    starts = [events[0] for events in episodes.values()]
    assert all(isinstance(s, EpisodeStarted) and s.causation_id == req.event_id for s in starts)
    assert len({s.group_id for s in starts}) == 1 and starts[0].group_id is not None


def test_a_redelivered_completed_request_runs_nothing_again(ports: Ports, tmp_path: Path) -> None:
    req = request(group_size=2)
    publish(ports.bus, req)
    worker(ports, tmp_path).run(idle_exit_s=0.5)
    before = sum(len(v) for v in by_episode(ports).values())
    redelivered = next(ports.bus.replay("rollouts"))  # as if the first worker died just before its commit
    again = worker(ports, tmp_path)
    again.handle(redelivered)
    assert again.stats.already_done == 2 and again.stats.episodes == 0
    assert sum(len(v) for v in by_episode(ports).values()) == before


def two_requests_of_one_partition(ports: Ports) -> tuple[RolloutRequested, RolloutRequested]:
    """Two requests (other seeds) whose keys land on the same ``rollouts`` partition, in the order published."""
    partitions = ports.bus.partitions(TOPIC_ROLLOUTS)
    by_partition: dict[int, list[RolloutRequested]] = {}
    for seed in range(64):
        req = request(seed=seed)
        by_partition.setdefault(partition_for_key(to_record(req).key, partitions), []).append(req)
    first, second = next(reqs for reqs in by_partition.values() if len(reqs) >= 2)[:2]
    return first, second


def half_episode(ports: Ports, req: RolloutRequested) -> tuple[EpisodeStarted, ContextBuilt]:
    """What a worker killed during the first step of ``req``'s attempt 0 left on the log."""
    envelope = dict(producer=P, run_id="unit", task_id=TASK.task_id, episode_id=req.episode_id, attempt=0)
    started = EpisodeStarted(
        **envelope,
        backend="sandbox",
        trust_level="exact",
        policy_version="scripted:reference",
        harness_version="default",
        seed=0,
        budgets=TASK.budgets,
    )
    built = ContextBuilt(
        **envelope,
        causation_id=started.event_id,
        step=1,
        context=ports.blobs.put(b"[]", "application/json"),
        token_count=1,
    )
    return started, built


def test_a_broken_attempt_is_closed_as_abandoned_and_rerun(ports: Ports, tmp_path: Path) -> None:
    req = request()
    started, built = half_episode(ports, req)
    publish(ports.bus, started, built, req)  # a dead worker's half episode, then the redelivered request
    stats = worker(ports, tmp_path, stale_after_s=0.0).run(idle_exit_s=0.5)
    episodes = by_episode(ports)
    broken, rerun = episodes[req.episode_id], episodes[episode_id_for(req, 0, 1)]
    assert isinstance(broken[-1], EpisodeEnded) and broken[-1].reason == "abandoned"
    assert broken[-1].causation_id == built.event_id and broken[-1].steps == 0
    assert rerun[-1].reason == "finished" and {e.attempt for e in rerun} == {1}
    assert (stats.abandoned, stats.episodes) == (1, 1)


def test_unknown_tasks_and_versions_are_dead_lettered_and_committed(ports: Ports, tmp_path: Path) -> None:
    publish(ports.bus, request(task_id="no-such-task"), request(policy_version="gpt-17"), request())
    w = worker(ports, tmp_path)
    stats = w.run(idle_exit_s=0.5)
    letters = [from_record(r) for r in ports.bus.replay("dead-letters")]
    assert stats.dead_lettered == 2 and len(letters) == 2 and stats.episodes == 1
    errors = sorted(letter.error for letter in letters)
    assert "never specified" in errors[0] and errors[1].startswith("unknown policy version 'gpt-17'")
    assert sum(lag.lag for lag in ports.bus.lag("flywheel.rollout-worker", ["rollouts"])) == 0


def test_invalid_model_outputs_are_recorded_as_action_rejected(ports: Ports, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setitem(SCRIPTED, "scripted:babbler", lambda task: ScriptedPolicy(["hmm", "<action>{"], "babbler"))
    publish(ports.bus, request(policy_version="scripted:babbler"))
    worker(ports, tmp_path).run(idle_exit_s=0.5)
    [events] = by_episode(ports).values()
    rejected = [e for e in events if isinstance(e, ActionRejected)]
    assert [(r.step, r.error.code) for r in rejected] == [(1, "parse_error"), (2, "parse_error")]
    assert ports.blobs.get(rejected[0].raw_output) == b"hmm" and rejected[0].input_tokens > 0
    kinds = Counter(e.event_type for e in events)
    assert kinds["ObservationReturned"] == 2 and events[-1].reason == "finished"


def test_the_resolver_reloads_aliases_when_the_models_topic_grows(ports: Ports, tmp_path: Path) -> None:
    resolver = VersionResolver(None, ports.bus, tmp_path, check_every_s=0.0)
    assert resolver.refresh() is False and resolver.refresh() is False
    from bus_schemas.events.training import ModelVersionRegistered

    publish(
        ports.bus,
        ModelVersionRegistered(
            producer=P,
            run_id="unit",
            model_name="planner",
            model_version="2",
            checkpoint=ports.blobs.put(b"x", "application/octet-stream"),
        ),
    )
    assert resolver.refresh() is True and resolver.reloads == 1


def test_a_new_production_harness_is_picked_up_for_new_episodes(ports: Ports, tmp_path: Path) -> None:
    from harness_service.config import HarnessConfig
    from harness_service.versions import publish_harness_version
    from infra.bootstrap import open_registry

    registry = open_registry(f"sqlite:///{tmp_path}/mlflow.db")
    resolver = VersionResolver(registry, ports.bus, tmp_path, check_every_s=0.0)
    v1 = publish_harness_version(
        registry,
        ports.blobs,
        HarnessConfig(name="planner-harness", instructions="one"),
        producer=P,
        run_id="unit",
        aliases=("production",),
    )
    publish(ports.bus, v1)
    resolver.refresh()
    assert resolver.harness("planner-harness@production")[0].instructions == "one"
    v2 = publish_harness_version(
        registry,
        ports.blobs,
        HarnessConfig(name="planner-harness", instructions="two"),
        producer=P,
        run_id="unit",
        aliases=("production",),
    )
    assert resolver.harness("planner-harness@production")[0].instructions == "one"  # cached until the event
    publish(ports.bus, v2)
    resolver.refresh()
    config, label = resolver.harness("planner-harness@production")
    assert config.instructions == "two" and label == "planner-harness/2"


def test_one_request_per_poll_so_a_partition_taken_meanwhile_is_left_to_its_new_owner(
    ports: Ports, tmp_path: Path, monkeypatch
) -> None:
    """Requests polled together are run one per step, each right after a poll: when the group moves the partitions
    while the worker runs the first, the others are left to their new owner instead of being run by both."""
    publish(ports.bus, *(request(seed=s) for s in range(3)))
    w = worker(ports, tmp_path)
    w.poll_records = 3
    assert w.step(timeout_s=2.0) and w.stats.requests == 1 and len(w._held) == 2
    monkeypatch.setattr(w.consumer, "assignment", lambda: set())  # a peer joined and took every partition
    w.step(timeout_s=0.0)
    assert w.stats.requests == 1 and w._held == [] and len(by_episode(ports)) == 1


def test_no_event_is_published_before_the_blobs_it_references_are_durable(
    ports: Ports, tmp_path: Path, monkeypatch
) -> None:
    """The harness's blobs go through a group commit: written unsynced, made durable together just before each
    publish of the episode's buffered events (one sync per publish instead of an fsync per blob)."""
    store = ports.blobs
    real_sync, real_publish_all = store.sync, sink_module.publish_all
    syncs: list[int] = []
    checked: set[str] = set()

    def sync() -> None:
        syncs.append(len(store._unsynced))
        real_sync()

    def publish_all(bus, events) -> None:
        owed = {p.name for p in store._unsynced}
        for event in events:
            referenced = {ref.sha256 for ref in blob_refs(event)}
            assert not referenced & owed, f"{event.event_type} published before its blobs were synced"
            assert all(store.exists(sha) for sha in referenced)
            checked.update(referenced)
        real_publish_all(bus, events)

    monkeypatch.setattr(store, "sync", sync)
    monkeypatch.setattr(sink_module, "publish_all", publish_all)
    publish(ports.bus, request(group_size=2))
    stats = worker(ports, tmp_path).run(idle_exit_s=0.5)
    assert stats.episodes == 2 and len(checked) > stats.steps // 2  # contexts, raw outputs, evidence (members share)
    blobs_written = sum(syncs) // 2  # each sync's owed files: a blob and its .meta
    assert blobs_written >= len(checked) and 0 < sum(1 for n in syncs if n) < blobs_written
    assert store._unsynced == []


def test_a_peer_that_came_and_went_while_the_worker_was_busy_leaves_its_request_checked_against_the_log(
    ports: Ports, tmp_path: Path
) -> None:
    """A peer joined while the worker ran an episode, took the worker's partition, started its next request and was
    killed: the worker, back with its old share, still checks that request against the log, closes the peer's
    attempt as abandoned and runs the next one. (A kill -9 chaos run found such an attempt never closed: the worker
    took the request for its own next one, because its share looked unchanged.)"""
    first, second = two_requests_of_one_partition(ports)
    publish(ports.bus, first)
    w = worker(ports, tmp_path, stale_after_s=0.0)
    w.settle_s = 0.0  # long past its last rebalance: only a change it notices makes it check the log
    w.run(idle_exit_s=0.5)
    peer = ports.bus.consumer(GROUP, [TOPIC_ROLLOUTS])  # the worker is busy meanwhile (not polling)
    started, built = half_episode(ports, second)
    publish(ports.bus, second, started, built)
    peer.close()  # killed
    time.sleep(ports.bus.session_timeout_s / 2)  # the worker's own rebalance is due when it polls again
    stats = w.run(idle_exit_s=0.5)
    every = {TopicPartition(TOPIC_ROLLOUTS, p) for p in range(ports.bus.partitions(TOPIC_ROLLOUTS))}
    assert w.consumer.assignment() == every
    episodes = by_episode(ports)
    broken, rerun = episodes[second.episode_id], episodes[episode_id_for(second, 0, 1)]
    assert [type(e) for e in broken] == [EpisodeStarted, ContextBuilt, EpisodeEnded], "the peer's attempt, closed"
    assert broken[-1].reason == "abandoned" and rerun[-1].reason == "finished"
    assert (stats.abandoned, stats.episodes) == (1, 2)


def test_requests_delivered_again_after_a_rewind_without_a_rebalance_are_each_checked_against_the_log(
    ports: Ports, tmp_path: Path
) -> None:
    """The consumer's position went back to the group's last commit without a rebalance the worker saw (a Kafka
    broker restart mid-round): the requests it already ran come again, in order. Each is checked against the log,
    not only the first: the second follows the first as a new request would, and a broker-restart fault run found
    it run again under the same episode id (one episode verified twice)."""
    first, second = two_requests_of_one_partition(ports)
    publish(ports.bus, first, second)
    w = worker(ports, tmp_path)
    w.settle_s = 0.0  # long past its last rebalance
    w.run(idle_exit_s=0.5)
    assert w.stats.episodes == 2
    ran = ended_per_episode(ports)
    ids = {first.event_id, second.event_id}
    again = [r for r in ports.bus.replay(TOPIC_ROLLOUTS) if from_record(r).event_id in ids]
    for record in sorted(again, key=lambda r: r.offset):  # the rewind: both records again, oldest first
        w.handle(record)
    assert (w.stats.episodes, w.stats.already_done) == (2, 2)
    ended = ended_per_episode(ports)
    assert ended == ran and set(ended.values()) == {1}


def ended_per_episode(ports: Ports) -> Counter[str]:
    return Counter(e.episode_id for events in by_episode(ports).values() for e in events if isinstance(e, EpisodeEnded))


def test_what_the_worker_held_when_the_group_changed_comes_again_from_the_commit_and_runs_once_in_order(
    ports: Ports, tmp_path: Path
) -> None:
    """Two requests of one partition polled together, the first run: a peer comes and goes before the second runs.
    The worker drops what it held and runs the second as the consumer delivers it again from the group's commit,
    once. (Held records mixed with their redelivered copies let a kill -9 chaos run run and commit a later request
    before an earlier one and then lose the earlier one to the kill.)"""
    first, second = two_requests_of_one_partition(ports)
    publish(ports.bus, first, second)
    w = worker(ports, tmp_path)
    w.poll_records = 2
    w.step(timeout_s=2.0)
    assert w.stats.requests == 1 and [from_record(r).event_id for r in w._held] == [second.event_id]
    peer = ports.bus.consumer(GROUP, [TOPIC_ROLLOUTS])
    peer.close()
    time.sleep(ports.bus.session_timeout_s / 2)  # the worker's own rebalance is due when it polls again
    w.step(timeout_s=2.0)
    assert [from_record(r).event_id for r in w._held] == []
    w.run(idle_exit_s=0.5)
    assert (w.stats.requests, w.stats.episodes, w.stats.already_done) == (2, 2, 0)
    ended = ended_per_episode(ports)
    assert ended == Counter({first.episode_id: 1, second.episode_id: 1})
    assert [lag.lag for lag in ports.bus.lag(GROUP, [TOPIC_ROLLOUTS])] == [0] * ports.bus.partitions(TOPIC_ROLLOUTS)
