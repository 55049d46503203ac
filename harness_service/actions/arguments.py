"""A fast check of tool arguments for the JSON Schema keywords tool specs use (pydantic's schemas of flat argument
models). jsonschema's validator takes tens of microseconds per call; the parser runs it only to word the errors of
arguments this check refuses, and for every schema with a keyword outside the subset."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from numbers import Number
from typing import Any

Check = Callable[[Any], bool]
"""``Draft202012Validator(schema).is_valid`` (without a format checker), for a schema in the subset."""

_ANNOTATIONS = frozenset(
    {"title", "description", "examples", "default", "format", "$comment", "deprecated", "readOnly", "writeOnly"}
)
"""Keywords that never fail: ``format`` asserts only with a format checker, which the parser's validator has not."""


def _is_number(value: object) -> bool:
    return isinstance(value, Number) and not isinstance(value, bool)


def _is_integer(value: object) -> bool:
    return (isinstance(value, int) and not isinstance(value, bool)) or (isinstance(value, float) and value.is_integer())


_TYPES: dict[str, Check] = {
    "string": lambda v: isinstance(v, str),
    "integer": _is_integer,
    "number": _is_number,
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "array": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict),
}
"""jsonschema's Draft 2020-12 type checker."""


def _same(a: object, b: object) -> bool:
    """jsonschema's equality of two values, one of them a scalar: a boolean equals only itself."""
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    return a == b


def _type(names: object) -> Check | None:
    names = [names] if isinstance(names, str) else names
    if not isinstance(names, list) or not all(isinstance(n, str) and n in _TYPES for n in names):
        return None
    checks = [_TYPES[n] for n in names]
    return lambda v: any(check(v) for check in checks)


def _compiled(schemas: Sequence[object]) -> list[Check] | None:
    """The checks of ``schemas``, or ``None`` when one of them is outside the subset."""
    checks = []
    for schema in schemas:
        check = compile_check(schema)
        if check is None:
            return None
        checks.append(check)
    return checks


def _properties(properties: object) -> Check | None:
    if not isinstance(properties, dict):
        return None
    compiled = _compiled(list(properties.values()))
    if compiled is None:
        return None
    checks = list(zip(properties, compiled, strict=True))
    return lambda v: not isinstance(v, dict) or all(check(v[k]) for k, check in checks if k in v)


def _any_of(schemas: object) -> Check | None:
    checks = _compiled(schemas) if isinstance(schemas, list) and schemas else None
    return None if checks is None else lambda v: any(check(v) for check in checks)


def _additional(extra: object, schema: Mapping[str, Any]) -> Check | None:
    known = schema.get("properties", {})
    if "patternProperties" in schema or not isinstance(known, dict):
        return None
    if extra is False:
        return lambda v: not isinstance(v, dict) or all(k in known for k in v)
    sub = compile_check(extra)
    if sub is None:
        return None
    return lambda v: not isinstance(v, dict) or all(sub(item) for k, item in v.items() if k not in known)


def _items(items: object, schema: Mapping[str, Any]) -> Check | None:
    sub = None if "prefixItems" in schema else compile_check(items)
    if sub is None:
        return None
    return lambda v: not isinstance(v, list) or all(map(sub, v))


def _enum(values: object) -> Check | None:
    if not isinstance(values, list) or any(isinstance(e, (list, dict)) for e in values):
        return None
    return lambda v: any(_same(v, e) for e in values)


def _bound(key: str, limit: object) -> Check | None:
    """``minLength``, ``maximum``, ``minItems``...: a limit that applies to one type of value."""
    if not _is_number(limit):
        return None
    n: Any = limit
    bounds: dict[str, Check] = {
        "minLength": lambda v: not isinstance(v, str) or len(v) >= n,
        "maxLength": lambda v: not isinstance(v, str) or len(v) <= n,
        "minItems": lambda v: not isinstance(v, list) or len(v) >= n,
        "maxItems": lambda v: not isinstance(v, list) or len(v) <= n,
        "minimum": lambda v: not _is_number(v) or v >= n,
        "maximum": lambda v: not _is_number(v) or v <= n,
        "exclusiveMinimum": lambda v: not _is_number(v) or v > n,
        "exclusiveMaximum": lambda v: not _is_number(v) or v < n,
    }
    return bounds.get(key)


def _keyword(key: str, value: Any, schema: Mapping[str, Any]) -> Check | None:
    if key == "type":
        return _type(value)
    if key == "properties":
        return _properties(value)
    if key == "required":
        names = value if isinstance(value, list) and all(isinstance(n, str) for n in value) else None
        return None if names is None else lambda v: not isinstance(v, dict) or all(n in v for n in names)
    if key == "additionalProperties":
        return _additional(value, schema)
    if key == "pattern":
        pattern = re.compile(value) if isinstance(value, str) else None  # jsonschema: re.search(pattern, value)
        return None if pattern is None else lambda v: not isinstance(v, str) or pattern.search(v) is not None
    if key == "items":
        return _items(value, schema)
    if key == "anyOf":
        return _any_of(value)
    if key == "enum":
        return _enum(value)
    if key == "const":
        return _enum([value])
    return _bound(key, value)


def compile_check(schema: object) -> Check | None:
    """``schema``'s check, or ``None`` when it has a keyword outside the subset (``$ref``, ``oneOf``, ...)."""
    if schema is True:
        return lambda v: True
    if not isinstance(schema, dict):
        return None
    checks = []
    for key, value in schema.items():
        if key in _ANNOTATIONS:
            continue
        check = _keyword(key, value, schema)
        if check is None:
            return None
        checks.append(check)
    return lambda v: all(check(v) for check in checks)
