"""Free-form JSON fields that are guaranteed to survive a round trip through orjson byte for byte."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Annotated

from pydantic import AfterValidator, JsonValue

_INT_MIN = -(2**63)
_INT_MAX = 2**64 - 1  # orjson writes integers in [-2**63, 2**64 - 1] only


def _check_wire_safe(value: JsonValue) -> JsonValue:
    """Reject NaN/Infinity and integers orjson cannot write, which pydantic's JsonValue lets through."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, float) and not math.isfinite(item):
            raise ValueError("JSON numbers must be finite (no NaN or Infinity)")
        if isinstance(item, int) and not isinstance(item, bool) and not _INT_MIN <= item <= _INT_MAX:
            raise ValueError("JSON integers must fit in 64 bits")
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return value


JsonData = Annotated[JsonValue, AfterValidator(_check_wire_safe)]
"""Any JSON value (object, array, string, finite number, bool, null) that encodes losslessly."""


def json_leaves(value: object) -> Iterator[object]:
    """The scalars of a JSON value (strings, numbers, booleans, nulls), depth first, in order: a mapping's values,
    a list's items."""
    if isinstance(value, dict):
        for item in value.values():
            yield from json_leaves(item)
    elif isinstance(value, list):
        for item in value:
            yield from json_leaves(item)
    else:
        yield value
