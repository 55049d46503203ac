"""A fast check of tool arguments: the tool's JSON Schema compiled to Python by fastjsonschema (~2 us a call where
jsonschema's validator takes ~50 us). The parser runs jsonschema only to word the errors of arguments this check
refuses, and for a schema this check leaves to it."""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import Any

import fastjsonschema
import orjson

Check = Callable[[Any], bool]
"""``Draft202012Validator(schema).is_valid`` (without a format checker)."""


def compile_check(schema: object) -> Check | None:
    """``schema``'s check, or ``None`` where it could disagree with jsonschema: a schema fastjsonschema cannot compile,
    or an ``enum``/``const`` with a boolean or a number in it (fastjsonschema compares with Python's ``==``, so
    ``true`` would pass for ``1``; JSON Schema keeps them apart). Formats are not asserted and defaults are not filled
    in (the arguments stay as the model wrote them), as with jsonschema's validator. Compiling takes ~1 ms, so checks
    are kept by the schema's content: a tool spec decoded afresh (a served request's tools) reuses its check."""
    if not isinstance(schema, (dict, bool)) or _compares_numbers(schema):
        return None
    try:
        key = orjson.dumps(schema, option=orjson.OPT_SORT_KEYS)
    except TypeError:
        return None
    return _compiled(key)


@lru_cache(maxsize=1024)
def _compiled(schema_json: bytes) -> Check | None:
    try:
        validate = fastjsonschema.compile(
            orjson.loads(schema_json), use_default=False, use_formats=False, detailed_exceptions=False
        )
    except (fastjsonschema.JsonSchemaDefinitionException, TypeError, ValueError):
        return None

    def check(value: Any) -> bool:
        try:
            validate(value)
        except fastjsonschema.JsonSchemaValueException:
            return False
        return True

    return check


def _compares_numbers(schema: object) -> bool:
    """An ``enum`` or ``const`` anywhere in ``schema`` holds a boolean or a number."""
    if isinstance(schema, list):
        return any(_compares_numbers(item) for item in schema)
    if not isinstance(schema, dict):
        return False
    values = [*schema.get("enum", []), *([schema["const"]] if "const" in schema else [])]
    if any(isinstance(v, (bool, int, float)) for v in values):
        return True
    return any(_compares_numbers(v) for k, v in schema.items() if k not in ("enum", "const"))
