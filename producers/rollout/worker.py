"""The rollout worker: a member of group ``flywheel.rollout-worker`` on ``rollouts`` that runs requested episodes.

Not a pure ConsumerSpec handler: an episode is long and publishes many events, so its events go
out while it runs (blobs first, keyed by episode id, in order, batched per step by sink.py) and the
request's offset is committed only once every EpisodeEnded of the request is durable. Recovery after a crash: the only
request of a partition a dead worker can have started is the first uncommitted one, so the first
request taken from each newly assigned partition is checked against the ``episodes`` log
(ledger.scan_request): completed members are not run again; an attempt with EpisodeStarted but no
EpisodeEnded is closed with EpisodeEnded(reason=abandoned) and the member re-runs under attempt+1
with a new episode id (ids.episode_id_for), so every episode id has exactly one start and one end.
After a rebalance (a change of the assignment, or of the group's membership even when the share came back the
same), members may briefly disagree on who owns a partition: records polled within
``claim_grace_s`` of a change are held (while polling on, so views converge) and then
handled only if their partition is still ours; for ``settle_s`` after a change every request is
checked against the log, and so is every request below the offset the worker already ran up to (a consumer's
position can go back to the group's commit without a rebalance this member sees); and an open attempt that wrote
an event within ``stale_after_s`` (a peer still running it) is waited for, to end or go stale, instead of being
run twice.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from bus_schemas.envelope import Event, Producer
from bus_schemas.errors import SchemaError
from bus_schemas.events.episodes import EpisodeEnded
from bus_schemas.events.rollouts import RolloutRequested
from bus_schemas.events.tasks import TaskSpecified
from bus_schemas.topics import TOPIC_ROLLOUTS
from harness_service.memory.store import MemoryStore
from harness_service.policy.base import Policy
from harness_service.runner.episode import Harness, RunIds, run_episode
from harness_service.skills.library import SkillLibrary
from harness_service.user import UserSimulator, user_for
from infra.blobs.group_commit import GroupCommit
from infra.bootstrap import Ports
from infra.bus.errors import BusWriteError
from infra.bus.records import Record, TopicPartition
from infra.events import from_record, publish, to_record
from infra.outages import OutageWait, is_outage
from infra.runtime.dead_letter import dead_letter
from producers.pool.pool import EnvironmentPool
from producers.pool.snapshot import write_snapshot
from producers.rollout.catalog import TaskCatalog
from producers.rollout.ids import episode_id_for
from producers.rollout.ledger import AttemptRecord, MemberHistory, scan_request
from producers.rollout.sink import EpisodeEventSink
from producers.rollout.versions import VersionResolver

GROUP = "flywheel.rollout-worker"
PRODUCER = Producer(service="rollout-worker", version="0.1.0")
SKILLS_DIR = Path(__file__).resolve().parents[1] / "backends" / "sandbox" / "skills"
log = logging.getLogger("flywheel.rollout")


@dataclass
class WorkerStats:
    requests: int = 0
    episodes: int = 0
    steps: int = 0
    abandoned: int = 0  # earlier broken attempts this worker closed
    already_done: int = 0  # group members a redelivered request had completed before
    scans: int = 0
    dead_lettered: int = 0
    reasons: dict[str, int] = field(default_factory=dict)


class RolloutWorker:
    """Runs requests one at a time; start several processes to scale (they split the partitions)."""

    def __init__(
        self,
        ports: Ports,
        pool: EnvironmentPool,
        *,
        name: str = "worker-0",
        state_dir: Path = Path(".flywheel/state"),
        resolver: VersionResolver | None = None,
        skills: SkillLibrary | None = None,
        users: Callable[[TaskSpecified], UserSimulator | None] | None = None,
        poll_records: int = 1,
        stale_after_s: float = 30.0,
        flush_interval_s: float = 0.2,
        claim_grace_s: float = 3.0,
        settle_s: float = 15.0,
        outage_retry_s: float = 120.0,
    ) -> None:
        self.ports = ports
        self.outage_retry_s = outage_retry_s
        self.pool = pool
        self.name = name
        self.state_dir = state_dir
        self.resolver = resolver or VersionResolver(ports.registry, ports.bus, state_dir / "checkpoints")
        self.skills = skills if skills is not None else SkillLibrary.from_dir(SKILLS_DIR)
        self.users = users or user_for
        """Who answers the tasks' clarifying questions (``harness_service.user``)."""
        self.catalog = TaskCatalog(ports.bus)
        self.poll_records = poll_records
        self.stale_after_s = stale_after_s
        self.claim_grace_s = claim_grace_s
        self.settle_s = settle_s
        self._assigned_at = time.monotonic()
        self.blobs = GroupCommit(ports.blobs)  # an episode's blobs: durable at each publish of its events
        self.sink = EpisodeEventSink(ports.bus, flush_interval_s, blobs_durable=self.blobs.sync)
        self.stats = WorkerStats()
        self.consumer = ports.bus.consumer(GROUP, [TOPIC_ROLLOUTS])
        self._assignment: set[TopicPartition] = set()
        self._generation = -1  # the group's generation when the assignment was last read
        self._held: list[Record] = []  # polled during a rebalance's grace period, handled after it
        self._next_offset: dict[TopicPartition, int] = {}
        self._handled_end: dict[TopicPartition, int] = {}
        """Per partition, the offset after the last request this worker ran: a record below it is delivered again
        (the consumer's position went back to the group's commit), so it is checked against the log even when it
        follows the one just handled. Kept across rebalances; a broker restart mid-round found the gap: a worker
        rewound without a rebalance it saw checked only the first record of the rewind and ran the next ones a
        second time, under the same episode ids (two verdicts for one episode)."""

    def run(self, stop: threading.Event | None = None, *, idle_exit_s: float | None = None) -> WorkerStats:
        """Loop until ``stop`` is set (or nothing arrived for ``idle_exit_s``)."""
        stop = stop or threading.Event()
        idle_since = time.monotonic()
        while not stop.is_set():
            if self.step():
                idle_since = time.monotonic()
            elif idle_exit_s is not None and time.monotonic() - idle_since >= idle_exit_s:
                break
        return self.stats

    def step(self, timeout_s: float = 0.5) -> int:
        """Poll; hold what arrives until the assignment has been stable for ``claim_grace_s``, then handle the
        oldest held record of a partition still ours. One request per call, so each one is checked against the
        view of the group its poll just refreshed: a worker that worked through its held backlog without polling
        kept the view it had before a peer joined, and ran requests of a partition the peer now owned (a kill -9
        chaos run found one attempt run to the end by two workers). What was held when the group changed is dropped:
        the consumer delivers it again from the group's commit, in order (handled with the redelivered copies, a
        later request ran and was committed before an earlier one, and a kill in between lost the earlier one).
        Returns how many records were polled, are held or were handled."""
        wait = (0.1 if self._in_grace() else 0.0) if self._held else timeout_s
        records = self.consumer.poll(max_records=self.poll_records, timeout_s=wait)
        if self._track_assignment():
            self._held.clear()  # the consumer restarts each partition at the group's commit: they come again
        self._held.extend(records)
        if self._in_grace():
            return len(self._held)  # keep polling (= heartbeating) so every member's view converges first
        handled = 0
        while self._held and not handled:
            record = self._held.pop(0)
            if TopicPartition(record.topic, record.partition) in self._assignment:
                self.handle(record)  # records of a partition that moved are left to its new owner
                handled = 1
        if handled:
            write_snapshot(self.pool, self.state_dir, self.name)
        return len(records) + len(self._held) + handled

    def _in_grace(self) -> bool:
        return time.monotonic() - self._assigned_at < self.claim_grace_s

    def handle(self, record: Record) -> None:
        """Run every missing group member of one request, then commit it."""
        tp = TopicPartition(record.topic, record.partition)
        settling = time.monotonic() - self._assigned_at < self.settle_s
        may_be_redelivered = (
            settling or self._next_offset.get(tp) != record.offset or record.offset < self._handled_end.get(tp, 0)
        )
        try:
            request = from_record(record)
        except SchemaError as exc:
            return self._dead_letter(record, exc)
        if isinstance(request, RolloutRequested):
            self.stats.requests += 1
            outage = OutageWait(self.outage_retry_s)
            while True:
                try:
                    self._run_request(request, may_be_redelivered)
                    break
                except (LookupError, ValueError) as exc:  # unknown task / version: nothing ran, nothing will
                    return self._dead_letter(record, exc)
                except Exception as exc:
                    if not is_outage(exc):
                        raise
                    # The broker, the S3 store or MLflow went away mid-request: once it is back, run the request
                    # again as a redelivery (the log says which members ended; a half-written attempt is closed).
                    outage.pause(exc, f"{self.name}: request {request.episode_id}")
                    may_be_redelivered = True
        self._handled_end[tp] = max(self._handled_end.get(tp, 0), record.offset + 1)
        self._commit(record)

    def _commit(self, record: Record) -> None:
        """A commit refused because a rebalance moved the partition is harmless: the new owner's scan
        finds this request's episodes complete and runs nothing again."""
        tp = TopicPartition(record.topic, record.partition)
        try:
            self.consumer.commit([record])
        except BusWriteError as exc:
            log.warning(
                "%s: request %s[%d]@%d not committed: %s", self.name, record.topic, record.partition, record.offset, exc
            )
            self._next_offset.pop(tp, None)
            return
        self._next_offset[tp] = record.offset + 1

    def _run_request(self, request: RolloutRequested, may_be_redelivered: bool) -> None:
        self.resolver.refresh()
        task = self.catalog.get(request.task_id)
        policy_for = self.resolver.policy(request.policy_version)
        config, label = self.resolver.harness(request.harness_version)
        history = {m: MemberHistory() for m in range(request.group_size)}
        if may_be_redelivered:
            history = self._settled_history(request)
        log.info(
            "%s: request %s (task %s), checked against the log: %s",
            self.name,
            request.episode_id,
            request.task_id,
            may_be_redelivered,
        )
        group_id = request.group_id or (f"grp-{request.episode_id}" if request.group_size > 1 else None)
        for member, past in sorted(history.items()):
            if past.completed:
                self.stats.already_done += 1
                continue
            for broken in past.open:
                self._abandon(request, broken)
            attempt = past.next_attempt
            ids = RunIds(
                run_id=request.run_id,
                round=request.round,
                attempt=attempt,
                cause=request.event_id,
                group_id=group_id,
                episode_id=episode_id_for(request, member, attempt),
            )
            harness = Harness(
                config,
                _sampling(policy_for(task), request, member),
                self.blobs,
                self.sink,
                self.skills,
                producer=PRODUCER,
                version_label=label,
                users=self.users,
            )
            try:
                with self.pool.lease(request.backend, self.name) as backend:
                    outcome = run_episode(harness, task, backend, ids, MemoryStore())
            finally:
                self.sink.flush()  # durable before the commit; after a crash, a consistent prefix
            self.stats.episodes += 1
            self.stats.steps += outcome.steps
            self.stats.reasons[outcome.reason] = self.stats.reasons.get(outcome.reason, 0) + 1

    def _settled_history(self, request: RolloutRequested) -> dict[int, MemberHistory]:
        """The request's history once no open attempt is live (ended, or silent for ``stale_after_s``)."""
        while True:
            self.stats.scans += 1
            history = scan_request(self.ports.bus, request)
            now_ms = int(time.time() * 1000)
            if not any(past.live(now_ms, self.stale_after_s) for past in history.values()):
                return history
            time.sleep(min(1.0, self.stale_after_s / 4))

    def _publish(self, event: Event) -> None:
        publish(self.ports.bus, event)

    def _abandon(self, request: RolloutRequested, broken: AttemptRecord) -> None:
        log.warning("%s: closing abandoned attempt %s of %s", self.name, broken.attempt, broken.episode_id)
        self._publish(
            EpisodeEnded(
                producer=PRODUCER,
                run_id=request.run_id,
                round=request.round,
                task_id=request.task_id,
                episode_id=broken.episode_id,
                attempt=broken.attempt,
                causation_id=broken.last_event_id,
                reason="abandoned",
                steps=broken.steps,
                input_tokens=0,
                output_tokens=0,
                tool_calls=0,
                wall_time_s=0.0,
            )
        )
        self.stats.abandoned += 1

    def _dead_letter(self, record: Record, error: BaseException) -> None:
        log.error("%s: dead-lettering %s[%d]@%d: %s", self.name, record.topic, record.partition, record.offset, error)
        letter = dead_letter(record, error=error, attempts=1, group=GROUP, producer=PRODUCER, blobs=self.ports.blobs)
        self.consumer.publish_and_commit([to_record(letter)], [record])
        self.stats.dead_lettered += 1
        self._next_offset[TopicPartition(record.topic, record.partition)] = record.offset + 1

    def _track_assignment(self) -> bool:
        """Notice a rebalance; True when the assignment or the group's membership changed since the last call. The
        membership counts even when the share comes back the same: a peer that joined while this worker ran an
        episode, took one of its partitions, started that partition's next request and was killed leaves the worker
        its old share and that request half run (a kill -9 chaos run found its attempt never closed, because the
        worker took the request as its own next one and did not check it against the log)."""
        current, generation = self.consumer.assignment(), self.consumer.generation()
        if current == self._assignment and generation == self._generation:
            return False
        self._assignment, self._generation = current, generation
        self._assigned_at = time.monotonic()
        self._next_offset.clear()  # partitions that moved may come back with a peer's broken attempt
        return True

    def close(self) -> None:
        self.consumer.close()


def _sampling(policy: Policy, request: RolloutRequested, member: int) -> Policy:
    """Group member ``member`` samples at the request's temperature with seed ``seed + member`` (RL groups);
    policies that cannot sample (scripted) run as they are."""
    if request.temperature is None or not hasattr(policy, "with_sampling"):
        return policy
    return policy.with_sampling(request.temperature, request.seed + member)
