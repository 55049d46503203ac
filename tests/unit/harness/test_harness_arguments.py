"""The parser's compiled argument check agrees with jsonschema on every sandbox tool's schema, whatever the values."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from bus_schemas.actions import ToolCall, ToolError
from harness_service.actions.arguments import compile_check
from harness_service.actions.parser import ActionParser
from producers.backends.base import ToolSpec
from producers.backends.sandbox.catalog import TOOLS

pytestmark = pytest.mark.unit

SCHEMAS = [TOOLS[name].spec.parameters for name in sorted(TOOLS)]
SCALARS = st.none() | st.booleans() | st.integers(-300, 300) | st.floats(-300, 300) | st.text(max_size=70)
JSON = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner))


def _near(schema: Any) -> st.SearchStrategy[Any]:
    """Values near what ``schema`` accepts: its own examples and defaults, boundary lengths and numbers, any JSON."""
    if not isinstance(schema, dict):
        return JSON
    options = [JSON, *(st.just(e) for e in schema.get("examples", [])), *(st.just(e) for e in schema.get("enum", []))]
    if "default" in schema:
        options.append(st.just(schema["default"]))
    for key in ("minLength", "maxLength"):
        if key in schema:
            options.append(st.integers(max(0, schema[key] - 1), schema[key] + 1).map(lambda n: "7" * n))
    for key in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        if key in schema:
            bound = schema[key]
            options.append(st.sampled_from([bound - 1, bound, bound + 1, float(bound), True]))
    if "items" in schema:
        options.append(st.lists(_near(schema["items"]), max_size=4))
    for sub in schema.get("anyOf", []):
        options.append(_near(sub))
    properties = schema.get("properties")
    if isinstance(properties, dict):
        fields = st.fixed_dictionaries({}, optional={name: _near(sub) for name, sub in properties.items()})
        options.append(
            st.tuples(fields, st.dictionaries(st.sampled_from(["extra", "x"]), JSON, max_size=1)).map(
                lambda pair: {**pair[0], **pair[1]}
            )
        )
    return st.one_of(options)


@st.composite
def schema_and_value(draw: st.DrawFn) -> tuple[dict[str, Any], Any]:
    schema = draw(st.sampled_from(SCHEMAS))
    return schema, draw(_near(schema))


def test_every_sandbox_schema_compiles() -> None:
    assert all(compile_check(schema) is not None for schema in SCHEMAS)


@settings(max_examples=500, deadline=None)
@given(schema_and_value())
def test_the_check_agrees_with_jsonschema(case: tuple[dict[str, Any], Any]) -> None:
    schema, value = case
    check = compile_check(schema)
    assert check is not None
    assert check(value) == Draft202012Validator(schema).is_valid(value)


@pytest.mark.parametrize(
    ("schema", "valid", "invalid"),
    [
        ({"type": "integer"}, [3, 3.0], [True, 3.5, "3"]),
        ({"enum": ["a", None]}, ["a", None], ["b", 0, []]),
        ({"type": ["string", "null"], "maxLength": 2}, ["ab", None], ["abc", 1]),
        ({"additionalProperties": {"type": "string"}, "properties": {"n": {}}}, [{"n": 1, "s": "x"}], [{"s": 1}]),
        ({"items": {"minimum": 0}, "minItems": 1}, [[0, 2], "not an array"], [[], [-1]]),
        ({"pattern": "^a"}, ["ab", 5], ["ba"]),
        ({"properties": {"p": {"$ref": "#/$defs/d"}}, "$defs": {"d": {"type": "string"}}}, [{"p": "mon"}], [{"p": 1}]),
        ({"oneOf": [{"type": "string"}, {"maxLength": 1}]}, ["ab", 3], ["a"]),
        ({"format": "email", "type": "string"}, ["not an email"], [3]),
    ],
)
def test_the_check_follows_jsonschema_on_each_keyword(
    schema: dict[str, Any], valid: list[Any], invalid: list[Any]
) -> None:
    check, validator = compile_check(schema), Draft202012Validator(schema)
    assert check is not None
    assert all(check(v) and validator.is_valid(v) for v in valid)
    assert not any(check(v) or validator.is_valid(v) for v in invalid)


def test_the_check_leaves_defaults_out_of_the_arguments() -> None:
    check, value = compile_check({"properties": {"label": {"default": "Alarm"}}}), {}
    assert check is not None and check(value) and value == {}


@pytest.mark.parametrize(
    "schema",
    [
        {"const": False},  # fastjsonschema would take 0 for false; jsonschema does not
        {"properties": {"level": {"enum": [0, 1]}}},  # ... and true for 1
        {"type": "decimal"},  # not a JSON Schema type
    ],
)
def test_schemas_it_could_get_wrong_are_left_to_jsonschema(schema: object) -> None:
    assert compile_check(schema) is None


def test_a_revised_tool_is_checked_against_its_own_schema() -> None:
    """The check is kept per tool object: a revision of the same tool (a new spec) never gets the old one's check."""
    schema: dict[str, Any] = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
    loose = ToolSpec(name="notes.add", description="Add a note.", parameters=schema)
    strict = loose.model_copy(update={"parameters": {**schema, "properties": {"text": {"maxLength": 3}}}})
    text = '<action>{"kind": "tool_call", "name": "notes.add", "args": {"text": "hello"}}</action>'
    assert isinstance(ActionParser([loose]).parse(text), ToolCall)
    rejected = ActionParser([strict]).parse(text)
    assert isinstance(rejected, ToolError) and "is too long" in rejected.message
    assert isinstance(ActionParser([loose]).parse(text), ToolCall)


def test_a_schema_decoded_afresh_reuses_its_compiled_check() -> None:
    """Compiling costs ~1 ms: a tool spec rebuilt from JSON (a served request's tools) gets the check compiled
    for the same schema, and a different schema its own."""
    schema = TOOLS["clock.set_alarm"].spec.parameters
    copy = orjson.loads(orjson.dumps(schema))
    assert copy is not schema and compile_check(copy) is compile_check(schema)
    other = {**copy, "required": ["time", "label"]}
    assert compile_check(other) is not compile_check(schema)
    check = compile_check(other)
    assert check is not None and not check({"time": "07:30"})
