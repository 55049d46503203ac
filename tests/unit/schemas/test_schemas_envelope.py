"""The envelope and the domain rules the event models enforce on construction."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta, timezone

import pytest
from pydantic import ValidationError

from bus_schemas import (
    EpisodeVerified,
    Producer,
    TaskRetired,
    ToolError,
    correlate,
    new_event_id,
    overall_score,
)
from bus_schemas.examples import build_examples

pytestmark = pytest.mark.unit

EXAMPLES = build_examples()
PRODUCER = Producer(service="test", version="0")


def test_new_event_ids_are_uuid7_and_sort_by_creation_time() -> None:
    first = new_event_id()
    time.sleep(0.002)
    second = new_event_id()
    assert first[14] == second[14] == "7"
    assert first < second


def test_envelope_defaults_fill_id_and_utc_time() -> None:
    before = datetime.now(UTC)
    event = TaskRetired(producer=PRODUCER, run_id="r", task_id="t", reason="dup")
    assert event.event_type == "TaskRetired" and event.schema_version == 1
    assert event.occurred_at.utcoffset() == timedelta(0) and event.occurred_at >= before
    assert event.event_id != TaskRetired(producer=PRODUCER, run_id="r", task_id="t", reason="dup").event_id


def test_occurred_at_is_normalised_to_utc_and_must_be_aware() -> None:
    plus_two = datetime(2026, 1, 1, 12, 0, tzinfo=timezone(timedelta(hours=2)))
    event = TaskRetired(producer=PRODUCER, run_id="r", task_id="t", reason="x", occurred_at=plus_two)
    assert event.occurred_at.utcoffset() == timedelta(0) and event.occurred_at.hour == 10
    with pytest.raises(ValidationError, match="timezone"):
        TaskRetired(producer=PRODUCER, run_id="r", task_id="t", reason="x", occurred_at=datetime(2026, 1, 1))


def test_events_are_frozen_strict_and_closed() -> None:
    event = EXAMPLES["TaskRetired"]
    with pytest.raises(ValidationError, match="frozen"):
        event.reason = "other"  # type: ignore[misc]
    with pytest.raises(ValidationError, match="Extra inputs"):
        TaskRetired(producer=PRODUCER, run_id="r", task_id="t", reason="x", colour="red")  # type: ignore[call-arg]
    with pytest.raises(ValidationError, match="valid integer"):
        TaskRetired(producer=PRODUCER, run_id="r", task_id="t", reason="x", round="3")  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="event_type"):
        TaskRetired(producer=PRODUCER, run_id="r", task_id="t", reason="x", event_type="TaskSpecified")  # type: ignore[arg-type]


def test_event_ids_must_be_canonical_uuids() -> None:
    with pytest.raises(ValidationError, match="event_id"):
        TaskRetired(producer=PRODUCER, run_id="r", task_id="t", reason="x", event_id="evt-1")
    with pytest.raises(ValidationError, match="causation_id"):
        TaskRetired(producer=PRODUCER, run_id="r", task_id="t", reason="x", causation_id=new_event_id().upper())


def test_correlate_copies_correlation_ids_and_points_at_the_cause() -> None:
    ended = EXAMPLES["EpisodeEnded"]
    verdict = EpisodeVerified(
        **correlate(ended),
        producer=PRODUCER,
        outcome="failure",
        score=0.0,
        criteria=[],
        verifier_version="v1",
    )
    assert verdict.causation_id == ended.event_id
    assert (verdict.run_id, verdict.round, verdict.task_id, verdict.episode_id, verdict.attempt) == (
        ended.run_id,
        ended.round,
        ended.task_id,
        ended.episode_id,
        ended.attempt,
    )


def test_task_criteria_ids_must_be_unique() -> None:
    task = EXAMPLES["TaskSpecified"]
    with pytest.raises(ValidationError, match="unique"):
        type(task)(**{**dict(task), "criteria": [task.criteria[0], task.criteria[0]]})
    assert type(task)(**{**dict(task), "criteria": []}).criteria == []  # the backend's own judge decides


def test_observation_carries_result_or_error_not_both() -> None:
    observation = EXAMPLES["ObservationReturned"]
    error = ToolError(code="not_found", message="no such event")
    with pytest.raises(ValidationError, match="not both"):
        type(observation)(**{**dict(observation), "error": error})
    assert type(observation)(**{**dict(observation), "error": error, "result": None}).error == error


def test_verified_success_requires_every_criterion_to_pass() -> None:
    verdict = EXAMPLES["EpisodeVerified"]
    failed = verdict.criteria[0].model_copy(update={"passed": False})
    with pytest.raises(ValidationError, match="every criterion"):
        EpisodeVerified(**{**dict(verdict), "criteria": [failed, *verdict.criteria[1:]]})
    assert EpisodeVerified(**{**dict(verdict), "outcome": "failure", "criteria": [failed]}).outcome == "failure"


def test_review_correction_needs_a_trajectory() -> None:
    review = EXAMPLES["ReviewDecided"]
    with pytest.raises(ValidationError, match="corrected_trajectory"):
        type(review)(**{**dict(review), "corrected_trajectory": None})
    with pytest.raises(ValidationError, match="corrected_trajectory"):
        type(review)(**{**dict(review), "decision": "approve"})


def test_training_success_needs_a_checkpoint() -> None:
    run = EXAMPLES["TrainingRunCompleted"]
    with pytest.raises(ValidationError, match="checkpoint"):
        type(run)(**{**dict(run), "checkpoint": None})


def test_dev_set_overall_is_the_weighted_formula() -> None:
    evaluation = EXAMPLES["DevSetEvaluated"]
    rates = {name: score.success_rate for name, score in evaluation.per_category.items()}
    assert overall_score(rates) == pytest.approx(0.5 * 0.5 + 0.2 * 0.25 + 0.2 * 0.75 + 0.1 * 0.5)
    with pytest.raises(ValidationError, match="overall"):
        type(evaluation)(**{**dict(evaluation), "overall": 0.6})
    with pytest.raises(ValidationError, match="sub_agent"):
        partial = {k: v for k, v in evaluation.per_category.items() if k != "sub_agent"}
        type(evaluation)(**{**dict(evaluation), "per_category": partial})


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), 2**64])
def test_free_json_fields_reject_values_that_cannot_round_trip(bad: float) -> None:
    run = EXAMPLES["TrainingRunStarted"]
    with pytest.raises(ValidationError, match="config"):
        type(run)(**{**dict(run), "config": {"nested": [1, {"x": bad}]}})
