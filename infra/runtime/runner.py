"""The consumer loop on the bus port: poll, handle the batch (shared code), publish + commit atomically."""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path

from infra.bootstrap import Ports
from infra.bus.port import GroupConsumer
from infra.bus.records import Record, by_partition
from infra.runtime.batch import BatchHandler, RunStats
from infra.runtime.spec import ConsumerSpec

log = logging.getLogger("flywheel.runtime")


class ConsumerRunner:
    """Runs one :class:`ConsumerSpec` as a member of its consumer group on the given ports."""

    def __init__(
        self,
        spec: ConsumerSpec,
        ports: Ports,
        *,
        state_dir: Path = Path(".flywheel/state"),
        max_attempts: int = 3,
        retry_backoff_s: float = 0.05,
        outage_retry_s: float = 120.0,
        batch_size: int = 200,
    ) -> None:
        self.spec = spec
        self.ports = ports
        self.batch_size = batch_size
        self.batches = BatchHandler(
            spec,
            ports,
            state_dir=state_dir,
            max_attempts=max_attempts,
            retry_backoff_s=retry_backoff_s,
            outage_retry_s=outage_retry_s,
        )
        self._consumer: GroupConsumer | None = None

    @property
    def stats(self) -> RunStats:
        return self.batches.stats

    @property
    def consumer(self) -> GroupConsumer:
        if self._consumer is None:
            self._consumer = self.ports.bus.consumer(
                self.spec.group, list(self.spec.topics), max_poll_interval_s=self.spec.max_handle_s
            )
        return self._consumer

    def run(self, stop: threading.Event | None = None, *, idle_exit_s: float | None = None) -> RunStats:
        """Loop until ``stop`` is set (or, with ``idle_exit_s``, until nothing arrived for that long)."""
        stop = stop or threading.Event()
        idle_since = time.monotonic()
        log.info("%s: consuming %s as group %s", self.spec.name, ",".join(self.spec.topics), self.spec.group)
        while not stop.is_set():
            if self.step():
                idle_since = time.monotonic()
            elif idle_exit_s is not None and time.monotonic() - idle_since >= idle_exit_s:
                break
        return self.stats

    def step(self, timeout_s: float = 0.5) -> int:
        """Handle one polled batch; returns how many records it held."""
        records = self.consumer.poll(max_records=self.batch_size, timeout_s=timeout_s)
        if records:
            self.handle_batch(records)
        return len(records)

    def handle_batch(self, records: list[Record]) -> None:
        """One transaction per partition: on Kafka each is fenced against a zombie owner of that partition."""
        for part in by_partition(records).values():
            result = self.batches.handle(part)
            self.consumer.publish_and_commit(result.outputs, part)
            self.batches.done(result)

    def close(self) -> None:
        if self._consumer is not None:
            self._consumer.close()
        self.batches.close()
