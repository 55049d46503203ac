"""Property tests: every event round-trips, and no input makes the decoder raise anything but a SchemaError."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemas_strategies import events, json_values

from bus_schemas import (
    CURRENT_VERSIONS,
    EVENT_TYPES,
    MalformedEvent,
    PayloadTooLarge,
    SchemaError,
    UnsupportedSchemaVersion,
    decode,
    encode,
)
from bus_schemas.examples import golden_path
from bus_schemas.json_types import JsonData

pytestmark = pytest.mark.unit

FAST = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
EVENT_NAMES = sorted(EVENT_TYPES)
ENVELOPE_DISCRIMINATORS = ("event_type", "schema_version")


def _golden_raw(event_type: str) -> dict[str, Any]:
    return orjson.loads(golden_path(event_type).read_bytes())


def _free_json_fields(event_type: str) -> set[str]:
    """Fields typed as any-JSON: no replacement value is a wrong type for them."""
    return {
        name for name, info in EVENT_TYPES[event_type].model_fields.items() if info.annotation is JsonData.__origin__
    }


@pytest.mark.parametrize("event_type", EVENT_NAMES)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(data=st.data())
def test_every_event_round_trips_byte_stable(event_type: str, data: st.DataObject) -> None:
    event = data.draw(events(EVENT_TYPES[event_type]))
    wire = encode(event)
    decoded = decode(wire)
    assert decoded == event
    assert type(decoded) is type(event)
    assert encode(decoded) == wire


@FAST
@given(st.binary(max_size=256) | st.text(max_size=256))
def test_random_input_raises_only_schema_errors(data: bytes | str) -> None:
    with pytest.raises(SchemaError):
        decode(data)


@FAST
@given(json_values)
def test_random_json_raises_only_schema_errors(value: Any) -> None:
    with pytest.raises(SchemaError):
        decode(orjson.dumps(value))


_WRONG_KIND: dict[type, Any] = {str: 12345, int: "12", float: "1.5", bool: "yes", list: {"a": 1}, dict: ["a"]}


@FAST
@given(event_type=st.sampled_from(EVENT_NAMES), data=st.data())
def test_wrong_type_is_rejected_naming_the_field(event_type: str, data: st.DataObject) -> None:
    raw = _golden_raw(event_type)
    candidates = sorted(k for k, v in raw.items() if v is not None and k not in _free_json_fields(event_type))
    field = data.draw(st.sampled_from(candidates))
    raw[field] = _WRONG_KIND[type(raw[field])]
    with pytest.raises(SchemaError) as caught:
        decode(orjson.dumps(raw))
    if field not in ENVELOPE_DISCRIMINATORS:
        assert isinstance(caught.value, MalformedEvent)
        assert any(loc.split(".")[0] == field for loc in caught.value.fields), caught.value


@FAST
@given(event_type=st.sampled_from(EVENT_NAMES), data=st.data())
def test_missing_required_field_is_rejected_naming_it(event_type: str, data: st.DataObject) -> None:
    required = sorted(name for name, info in EVENT_TYPES[event_type].model_fields.items() if info.is_required())
    field = data.draw(st.sampled_from(required))
    raw = _golden_raw(event_type)
    del raw[field]
    with pytest.raises(MalformedEvent, match=field):
        decode(orjson.dumps(raw))


@FAST
@given(event_type=st.sampled_from(EVENT_NAMES), extra=st.text(min_size=1, max_size=20), value=json_values)
def test_unknown_field_is_rejected_naming_it(event_type: str, extra: str, value: Any) -> None:
    raw = _golden_raw(event_type)
    if extra in raw:
        extra = extra + "_unknown"
    raw[extra] = value
    with pytest.raises(MalformedEvent) as caught:
        decode(orjson.dumps(raw))
    assert extra in caught.value.fields


@FAST
@given(event_type=st.sampled_from(EVENT_NAMES), ahead=st.integers(1, 10**6))
def test_future_version_is_rejected_naming_type_and_version(event_type: str, ahead: int) -> None:
    version = CURRENT_VERSIONS[event_type] + ahead
    raw = {**_golden_raw(event_type), "schema_version": version}
    with pytest.raises(UnsupportedSchemaVersion, match=f"{event_type} schema_version {version} ") as caught:
        decode(orjson.dumps(raw))
    assert caught.value.version == version


@FAST
@given(event_type=st.sampled_from(EVENT_NAMES), limit=st.integers(16, 4096))
def test_oversized_events_are_rejected_both_ways(event_type: str, limit: int) -> None:
    wire = golden_path(event_type).read_bytes().rstrip(b"\n")
    if len(wire) <= limit:
        assert decode(wire, max_inline_bytes=limit).event_type == event_type
        return
    with pytest.raises(PayloadTooLarge, match="BlobRef"):
        decode(wire, max_inline_bytes=limit)
    with pytest.raises(PayloadTooLarge, match=f"{event_type} is {len(wire)} bytes"):
        encode(decode(wire), max_inline_bytes=limit)
