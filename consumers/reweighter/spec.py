"""Wiring: RoundStarted(r) -> read tasks, verdicts, diagnoses, dev scores of rounds before r -> the plan for r.

Only events of earlier rounds count, and round r starts after round r-1 completed, so a replay sees the
same inputs and publishes the same plan.
"""

from __future__ import annotations

from functools import cached_property

from bus_schemas.envelope import Event, Producer
from bus_schemas.events import (
    DevSetEvaluated,
    EpisodeVerified,
    FailureDiagnosed,
    RoundStarted,
    TaskSpecified,
    before_round,
    scripted_rounds,
)
from bus_schemas.topics import TOPIC_DIAGNOSES, TOPIC_MODELS, TOPIC_ROUNDS, TOPIC_TASKS, TOPIC_VERDICTS
from consumers.common.log_index import LogIndex
from consumers.reweighter.handler import VERSION, PlanConfig, plan, round_dev
from infra.bootstrap import Ports
from infra.runtime import ConsumerSpec

NAME = "reweighter"
PRODUCER = Producer(service=NAME, version=VERSION)


def _by_run(event: Event) -> str:
    return event.run_id


class Reweighter:
    def __init__(self, config: PlanConfig = PlanConfig()) -> None:
        self.config = config
        self.ports: Ports | None = None

    @cached_property
    def indexes(self) -> dict[str, LogIndex]:
        assert self.ports is not None
        return {
            t: LogIndex(self.ports.bus, t, _by_run)
            for t in (TOPIC_TASKS, TOPIC_VERDICTS, TOPIC_DIAGNOSES, TOPIC_MODELS, TOPIC_ROUNDS)
        }

    def _before(self, topic: str, kind: type, started: RoundStarted) -> list:
        index = self.indexes[topic]
        index.catch_up()
        return [e for e in index.get(started.run_id) if isinstance(e, kind) and before_round(e.round, started.round)]

    def handle(self, event: Event, ports: Ports) -> list[Event]:
        assert isinstance(event, RoundStarted)
        self.ports = ports
        tasks = self._before(TOPIC_TASKS, TaskSpecified, event)
        dev = round_dev(self._before(TOPIC_MODELS, DevSetEvaluated, event), event)
        # Competence is the model's: rounds rolled out by a scripted policy (the cold start) do not count.
        scripted = scripted_rounds(self._before(TOPIC_ROUNDS, RoundStarted, event))
        all_verdicts = self._before(TOPIC_VERDICTS, EpisodeVerified, event)
        verdicts = [v for v in all_verdicts if v.round not in scripted]
        demonstrated = {v.task_id for v in all_verdicts if v.round in scripted and v.outcome == "success"}
        diagnoses = [d for d in self._before(TOPIC_DIAGNOSES, FailureDiagnosed, event) if d.round not in scripted]
        return plan(event, tasks, verdicts, diagnoses, dev, PRODUCER, self.config, demonstrated)


def build() -> ConsumerSpec:
    return ConsumerSpec(NAME, (TOPIC_ROUNDS,), Reweighter().handle, frozenset({"RoundStarted"}), VERSION)
