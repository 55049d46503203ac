"""The consumer runtime: runs a pure handler over a consumer group with exactly-once effects.

A consumer is a :class:`ConsumerSpec` (name, topics, event types, handler). :class:`BatchHandler`
drops events already handled (durable dedupe by event id), calls the handler, retries failures a
bounded number of times and dead-letters poison records. Two loops drive it: :class:`ConsumerRunner`
on the bus port (the embedded log, or Kafka in process) and the FastStream app on Kafka
(``infra.runtime.kafka_app``); both publish the outputs together with the offset commit in one
atomic step (a Kafka transaction, or one SQLite transaction).
"""

from infra.runtime.batch import BatchHandler, BatchResult, RunStats
from infra.runtime.runner import ConsumerRunner
from infra.runtime.spec import ConsumerSpec, Handler

__all__ = ["BatchHandler", "BatchResult", "ConsumerRunner", "ConsumerSpec", "Handler", "RunStats"]
