"""The topic registry: every event on exactly one topic, with a key it always has."""

from __future__ import annotations

from typing import get_args

import pytest

from bus_schemas import EVENT_TYPES, TOPIC_EPISODES, TOPICS, route, topic_for
from bus_schemas.examples import build_examples
from bus_schemas.topics import KEEP_FOREVER

pytestmark = pytest.mark.unit

EXAMPLES = build_examples()
AUDIT_TOPICS = {"tasks", "episodes", "verdicts", "curation", "diagnoses", "sampling", "models", "harness", "rounds"}


def test_every_event_type_is_on_exactly_one_topic() -> None:
    placements = [name for topic in TOPICS.values() for name in topic.event_types]
    assert sorted(placements) == sorted(EVENT_TYPES)


def test_topic_names_match_their_keys_and_design_table() -> None:
    assert all(name == spec.name for name, spec in TOPICS.items())
    assert set(TOPICS) == AUDIT_TOPICS | {"rollouts", "dead-letters"}
    assert topic_for("EpisodeEnded").name == TOPIC_EPISODES
    assert topic_for(EVENT_TYPES["EpisodeEnded"]) is topic_for("EpisodeEnded")


@pytest.mark.parametrize("event_type", sorted(EVENT_TYPES))
def test_key_field_is_a_required_non_null_field_of_the_event(event_type: str) -> None:
    spec = topic_for(event_type)
    field = EVENT_TYPES[event_type].model_fields[spec.key_field]
    assert type(None) not in get_args(field.annotation)
    assert field.is_required() or field.default is not None


@pytest.mark.parametrize("event_type", sorted(EVENT_TYPES))
def test_route_returns_topic_and_key(event_type: str) -> None:
    event = EXAMPLES[event_type]
    topic, key = route(event)
    spec = TOPICS[topic]
    assert event_type in spec.event_types
    assert key == str(getattr(event, spec.key_field)) and key


def test_episode_events_share_the_episode_key_so_they_stay_ordered() -> None:
    keys = {route(EXAMPLES[name]) for name in TOPICS[TOPIC_EPISODES].event_types}
    assert keys == {(TOPIC_EPISODES, "ep-0001")}


def test_audit_topics_keep_everything_and_work_queues_expire() -> None:
    assert all(TOPICS[name].retention_ms == KEEP_FOREVER for name in AUDIT_TOPICS)
    assert TOPICS["rollouts"].retention_ms > 0 and TOPICS["dead-letters"].retention_ms > 0
    assert all(spec.partitions >= 1 for spec in TOPICS.values())
