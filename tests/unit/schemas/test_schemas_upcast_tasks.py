"""TaskSpecified v1 (sandbox fields required, no ``backend_params``) stays readable as v2."""

from __future__ import annotations

import pytest

from bus_schemas import TaskSpecified, decode, encode
from bus_schemas.examples import build_examples, golden_path

pytestmark = pytest.mark.unit


def test_task_specified_v1_golden_upcasts_unchanged() -> None:
    old = golden_path("TaskSpecified", 1).read_bytes()
    assert b'"schema_version":1' in old and b"backend_params" not in old

    event = decode(old)

    assert isinstance(event, TaskSpecified) and event.schema_version == 2
    assert event.backend_params == {} and event.observation_chars is None
    assert event == build_examples()["TaskSpecified"]
    assert encode(event) + b"\n" == golden_path("TaskSpecified").read_bytes()
