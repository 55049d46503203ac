"""Golden files: the checked-in wire bytes of every event, so any wire change shows up in review."""

from __future__ import annotations

import pytest

from bus_schemas import EVENT_TYPES, EpisodeEnded, decode, encode
from bus_schemas.examples import GOLDEN_DIR, build_examples, golden_path

pytestmark = pytest.mark.unit

EXAMPLES = build_examples()


def test_every_event_type_has_an_example_and_a_golden_file() -> None:
    assert set(EXAMPLES) == set(EVENT_TYPES)
    current = {path.name for path in GOLDEN_DIR.glob("*.json") if ".v" not in path.stem}
    assert current == {f"{name}.json" for name in EVENT_TYPES}


@pytest.mark.parametrize("event_type", sorted(EVENT_TYPES))
def test_golden_bytes_round_trip_byte_stable(event_type: str) -> None:
    golden = golden_path(event_type).read_bytes()
    assert golden.endswith(b"\n")
    event = decode(golden)
    assert type(event) is EVENT_TYPES[event_type]
    assert encode(event) + b"\n" == golden


@pytest.mark.parametrize("event_type", sorted(EVENT_TYPES))
def test_examples_encode_to_the_golden_bytes(event_type: str) -> None:
    """Fails when a model change alters the wire form; rerun ``python -m bus_schemas.examples --write``."""
    assert encode(EXAMPLES[event_type]) + b"\n" == golden_path(event_type).read_bytes()


def test_episode_ended_v1_golden_upcasts_to_the_current_model() -> None:
    old = golden_path("EpisodeEnded", 1).read_bytes()
    assert b'"schema_version":1' in old and b'"wall_time_ms":4250' in old

    event = decode(old)

    assert isinstance(event, EpisodeEnded)
    assert event.schema_version == 2
    assert event.wall_time_s == 4.25
    assert event.thinking_tokens == 0
    assert event.cost_estimate_usd is None
    expected = EXAMPLES["EpisodeEnded"].model_copy(
        update={"event_id": event.event_id, "thinking_tokens": 0, "cost_estimate_usd": None}
    )
    assert event == expected
    assert b'"schema_version":2' in encode(event)


def test_dev_set_evaluated_v1_golden_upcasts_with_no_external_suites() -> None:
    old = golden_path("DevSetEvaluated", 1).read_bytes()
    assert b'"schema_version":1' in old and b'"external"' not in old
    event = decode(old)
    assert event.schema_version == 2 and event.external == {} and event.overall == 0.5
