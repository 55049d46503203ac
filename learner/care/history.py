"""What the controller remembers, read back from the ``models`` topic: the schedule in force and recent dev scores."""

from __future__ import annotations

from bus_schemas.events.training import DevSetEvaluated, RewardScheduleSelected
from bus_schemas.topics import TOPIC_MODELS
from infra.bus.port import Bus
from infra.events import from_record
from learner.care.schedules import SCHEDULE_BY_NAME, SCHEDULES, RewardSchedule


def schedule_in_force(bus: Bus, model_name: str) -> RewardSchedule:
    """The last schedule chosen for ``model_name``; the first (``partial_credit``) before any choice."""
    current = SCHEDULES[0]
    if TOPIC_MODELS not in bus.topics():
        return current
    for record in bus.replay(TOPIC_MODELS):
        event = from_record(record)
        if isinstance(event, RewardScheduleSelected) and event.model_name == model_name:
            current = SCHEDULE_BY_NAME.get(event.schedule, current)
    return current


def recent_dev_overall(bus: Bus, model_name: str) -> tuple[float | None, float | None]:
    """(latest, previous) dev Overall of ``model_name``'s versions. Evaluations of harness revisions are not the
    model's: a rejected candidate's 0.000 read as the latest score made the controller see dev collapse."""
    scores: list[float] = []
    if TOPIC_MODELS in bus.topics():
        for record in bus.replay(TOPIC_MODELS):
            event = from_record(record)
            if isinstance(event, DevSetEvaluated) and event.model_name == model_name and event.model_dev_score:
                scores.append(event.overall)
    latest = scores[-1] if scores else None
    previous = scores[-2] if len(scores) > 1 else None
    return latest, previous
