"""FailureDiagnosed v1 (before ``invalid_output``) stays readable: its golden bytes upcast to the v2 model."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from bus_schemas import FailureDiagnosed, decode, encode
from bus_schemas.examples import build_examples, golden_path

pytestmark = pytest.mark.unit


def test_failure_diagnosed_v1_golden_upcasts_unchanged() -> None:
    old = golden_path("FailureDiagnosed", 1).read_bytes()
    assert b'"schema_version":1' in old

    event = decode(old)

    assert isinstance(event, FailureDiagnosed) and event.schema_version == 2
    assert event == build_examples()["FailureDiagnosed"]
    assert encode(event) + b"\n" == golden_path("FailureDiagnosed").read_bytes()


def test_invalid_output_is_a_v2_label_only() -> None:
    current = build_examples()["FailureDiagnosed"].model_copy(update={"attribution": "invalid_output"})
    assert decode(encode(current)).attribution == "invalid_output"  # type: ignore[attr-defined]
    with pytest.raises(ValidationError):
        FailureDiagnosed.model_validate({**current.model_dump(mode="json"), "attribution": "model_fault"})
