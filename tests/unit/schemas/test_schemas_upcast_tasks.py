"""Old TaskSpecified versions stay readable as the current one: v1 (sandbox fields required, no
``backend_params``) and v2 (no ``call_any`` criterion kind)."""

from __future__ import annotations

import pytest

from bus_schemas import MalformedEvent, TaskSpecified, decode, encode
from bus_schemas.examples import build_examples, golden_path

pytestmark = pytest.mark.unit


def _example_without_call_any() -> TaskSpecified:
    """The current example as an older version could state it: every criterion but the ``call_any`` one."""
    example = build_examples()["TaskSpecified"]
    assert isinstance(example, TaskSpecified)
    return example.model_copy(update={"criteria": [c for c in example.criteria if c.kind != "call_any"]})


def test_task_specified_v1_golden_upcasts_unchanged() -> None:
    old = golden_path("TaskSpecified", 1).read_bytes()
    assert b'"schema_version":1' in old and b"backend_params" not in old

    event = decode(old)

    assert isinstance(event, TaskSpecified) and event.schema_version == 3
    assert event.backend_params == {} and event.observation_chars is None
    assert event == _example_without_call_any()


def test_task_specified_v2_golden_upcasts_unchanged() -> None:
    old = golden_path("TaskSpecified", 2).read_bytes()
    assert b'"schema_version":2' in old and b'"call_any"' not in old

    event = decode(old)

    assert isinstance(event, TaskSpecified) and event.schema_version == 3
    assert event == _example_without_call_any()
    assert b'"schema_version":3' in encode(event)


def test_a_call_any_criterion_needs_at_least_one_option() -> None:
    raw = encode(build_examples()["TaskSpecified"]).replace(
        b'"options":[{"tool":"calendar.search","where":{"title__norm":"Design review"}},'
        b'{"tool":"calendar.get","where":{"id":"ev_1"}}]',
        b'"options":[]',
    )
    assert b'"options":[]' in raw
    with pytest.raises(MalformedEvent, match="options"):
        decode(raw)
