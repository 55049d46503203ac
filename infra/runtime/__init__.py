"""The consumer runtime: runs a pure handler over a consumer group with exactly-once effects.

A consumer is a :class:`ConsumerSpec` (name, topics, event types, handler). The runner polls a
batch, drops events it has already handled (durable dedupe by event id), calls the handler, retries
failures a bounded number of times, dead-letters poison records, and publishes the outputs together
with the offset commit in one atomic step (a Kafka transaction, or one SQLite transaction).
"""

from infra.runtime.runner import ConsumerRunner, RunStats
from infra.runtime.spec import ConsumerSpec, Handler

__all__ = ["ConsumerRunner", "ConsumerSpec", "Handler", "RunStats"]
