"""The codec's contract: canonical bytes, typed decoding, and only SchemaError subclasses on bad input."""

from __future__ import annotations

from collections.abc import Iterator

import orjson
import pytest

from bus_schemas import (
    DEFAULT_MAX_INLINE_BYTES,
    EVENT_TYPES,
    EpisodeEnded,
    MalformedEvent,
    PayloadTooLarge,
    SchemaError,
    TaskRetired,
    TaskSpecified,
    UnexpectedEventType,
    UnknownEventType,
    UnsupportedSchemaVersion,
    decode,
    decode_as,
    encode,
    get_max_inline_bytes,
    set_max_inline_bytes,
)
from bus_schemas.examples import build_examples, golden_path
from bus_schemas.upcasters import UPCASTERS

pytestmark = pytest.mark.unit

EXAMPLES = build_examples()


def _raw(event_type: str) -> dict:
    return orjson.loads(golden_path(event_type).read_bytes())


@pytest.fixture
def restore_limit() -> Iterator[None]:
    before = get_max_inline_bytes()
    yield
    set_max_inline_bytes(before)


def test_encode_is_canonical_sorted_keys_regardless_of_dict_order() -> None:
    event = EXAMPLES["TrainingRunStarted"]
    reordered = event.model_copy(update={"config": dict(reversed(list(event.config.items())))})
    assert list(reordered.config) != list(event.config)
    assert encode(reordered) == encode(event)
    assert list(orjson.loads(encode(event))) == sorted(orjson.loads(encode(event)))


def test_decode_accepts_str_and_bytes() -> None:
    data = encode(EXAMPLES["TaskRetired"])
    assert decode(data.decode()) == decode(data) == EXAMPLES["TaskRetired"]


def test_decode_as_checks_the_type() -> None:
    data = encode(EXAMPLES["TaskRetired"])
    assert isinstance(decode_as(data, TaskRetired), TaskRetired)
    with pytest.raises(UnexpectedEventType, match="expected a TaskSpecified event, got TaskRetired"):
        decode_as(data, TaskSpecified)


def test_unknown_event_type_is_named() -> None:
    raw = {**_raw("TaskRetired"), "event_type": "TaskExploded"}
    with pytest.raises(UnknownEventType, match="TaskExploded") as caught:
        decode(orjson.dumps(raw))
    assert caught.value.event_type == "TaskExploded"


def test_future_version_names_type_and_version() -> None:
    raw = {**_raw("EpisodeEnded"), "schema_version": 9}
    with pytest.raises(UnsupportedSchemaVersion, match="EpisodeEnded schema_version 9") as caught:
        decode(orjson.dumps(raw))
    assert (caught.value.event_type, caught.value.version, caught.value.current) == ("EpisodeEnded", 9, 2)


def test_old_version_without_upcaster_path_is_unsupported(monkeypatch: pytest.MonkeyPatch) -> None:
    old = golden_path("EpisodeEnded", 1).read_bytes()
    monkeypatch.delitem(UPCASTERS, ("EpisodeEnded", 1))
    with pytest.raises(UnsupportedSchemaVersion, match="EpisodeEnded schema_version 1"):
        decode(old)


def test_old_event_missing_a_field_names_it_after_upcasting() -> None:
    raw = orjson.loads(golden_path("EpisodeEnded", 1).read_bytes())
    del raw["wall_time_ms"]
    with pytest.raises(MalformedEvent, match=r"EpisodeEnded \(upcast from v1\).*wall_time_s: Field required"):
        decode(orjson.dumps(raw))


def test_old_event_with_a_wrongly_typed_field_is_malformed() -> None:
    raw = {**orjson.loads(golden_path("EpisodeEnded", 1).read_bytes()), "wall_time_ms": "soon"}
    with pytest.raises(MalformedEvent, match="wall_time_s"):
        decode(orjson.dumps(raw))


def test_validation_errors_list_every_bad_field() -> None:
    raw = {**_raw("EpisodeEnded"), "steps": "three", "surprise": 1}
    del raw["reason"]
    with pytest.raises(MalformedEvent) as caught:
        decode(orjson.dumps(raw))
    assert set(caught.value.fields) == {"steps", "surprise", "reason"}
    message = str(caught.value)
    assert message.startswith("EpisodeEnded: invalid event:")
    assert "surprise: Extra inputs are not permitted" in message


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "not valid JSON"),
        (b"\xff\xfe", "not valid JSON"),
        (b"[1, 2]", "JSON object, got list"),
        (b'{"schema_version": 1}', "event_type"),
        (b'{"event_type": "TaskRetired", "schema_version": "1"}', "schema_version"),
        (b'{"event_type": "TaskRetired", "schema_version": true}', "schema_version"),
        (b'{"event_type": "TaskRetired", "schema_version": 0}', "schema_version"),
    ],
)
def test_garbage_is_malformed(data: bytes, message: str) -> None:
    with pytest.raises(MalformedEvent, match=message):
        decode(data)


def test_lone_surrogate_text_is_malformed() -> None:
    with pytest.raises(MalformedEvent, match="UTF-8"):
        decode('{"event_type": "\ud800"}')


@pytest.mark.parametrize(
    ("number", "message"),
    [
        (b"NaN", "not valid JSON"),
        (b"1e400", "not valid JSON"),
        (b"123456789012345678901234567890", "config.lr: .*64 bits"),
    ],
)
def test_numbers_that_cannot_round_trip_are_rejected(number: bytes, message: str) -> None:
    data = orjson.dumps({**_raw("TrainingRunStarted"), "config": {"lr": 0}}).replace(b'"lr":0', b'"lr":' + number)
    with pytest.raises(MalformedEvent, match=message):
        decode(data)


def test_oversized_event_is_rejected_on_encode_with_blob_advice() -> None:
    event = EXAMPLES["TaskRetired"].model_copy(update={"reason": "x" * 4000})
    with pytest.raises(PayloadTooLarge, match="blob store.*BlobRef") as caught:
        encode(event, max_inline_bytes=1024)
    assert caught.value.limit == 1024 and caught.value.size > 4000
    assert isinstance(caught.value, SchemaError)


def test_oversized_message_is_rejected_on_decode_before_parsing() -> None:
    with pytest.raises(PayloadTooLarge, match="over the inline limit of 64 bytes"):
        decode(b"{" + b" " * 100 + b"}", max_inline_bytes=64)


def test_default_limit_is_64_kib_and_configurable(restore_limit: None) -> None:
    assert DEFAULT_MAX_INLINE_BYTES == get_max_inline_bytes() == 65536
    data = encode(EXAMPLES["TaskSpecified"])
    set_max_inline_bytes(len(data) - 1)
    with pytest.raises(PayloadTooLarge):
        encode(EXAMPLES["TaskSpecified"])
    with pytest.raises(PayloadTooLarge):
        decode(data)
    assert decode(data, max_inline_bytes=len(data)) == EXAMPLES["TaskSpecified"]
    with pytest.raises(ValueError):
        set_max_inline_bytes(0)


def test_every_registered_type_decodes_through_the_fast_path() -> None:
    for name, event in EXAMPLES.items():
        decoded = decode(encode(event))
        assert type(decoded) is EVENT_TYPES[name]


def test_upcast_event_reencodes_as_current_version() -> None:
    event = decode(golden_path("EpisodeEnded", 1).read_bytes())
    assert isinstance(event, EpisodeEnded)
    assert decode(encode(event)) == event
