"""v2 of ActionTaken/ActionRejected (behaviour log-probs as a blob) and RolloutRequested (sampling temperature):
v1 logs stay readable, upcast with the new fields empty."""

from __future__ import annotations

import pytest

from bus_schemas import ActionRejected, ActionTaken, RolloutRequested, decode
from bus_schemas.examples import golden_path

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("event_type", "cls", "field"),
    [
        ("ActionTaken", ActionTaken, "sampled"),
        ("ActionRejected", ActionRejected, "sampled"),
        ("RolloutRequested", RolloutRequested, "temperature"),
    ],
)
def test_v1_events_upcast_with_the_new_field_unset(event_type: str, cls: type, field: str) -> None:
    old = golden_path(event_type, 1).read_bytes()
    assert b'"schema_version":1' in old
    event = decode(old)
    assert isinstance(event, cls) and event.schema_version == 2 and getattr(event, field) is None
