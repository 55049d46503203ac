"""Every tool: its happy path (result matches its declared schema) and every documented error."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest
from sandbox_cases import ERRORS, SETUP
from sandbox_support import DENIED, GRANTED, replay

from producers.backends.sandbox.backend import SandboxBackend
from producers.backends.sandbox.catalog import APP_NAMES, TOOLS
from producers.backends.sandbox.registry import Tool

pytestmark = pytest.mark.unit

Call = tuple[str, dict[str, Any]]


def _id_key(tool: Tool) -> str | None:
    return next((k for k in tool.example if k == "id" or k.endswith("_id")), None)


def error_case(tool: Tool, code: str) -> tuple[Any, list[Call]]:
    """The task and calls whose last call must fail with ``code`` (explicit table first, then derived)."""
    setup, example = SETUP.get(tool.name, []), dict(tool.example)
    if (tool.name, code) in ERRORS:
        calls, args = ERRORS[tool.name, code]
        return GRANTED, [*calls, (tool.name, args)]
    if code == "invalid_argument":
        return GRANTED, [(tool.name, {**example, "zz_unknown": 1})]
    if code == "not_found" and _id_key(tool):
        return GRANTED, [*setup, (tool.name, {**example, _id_key(tool): "nope_404"})]  # type: ignore[dict-item]
    if code == "conflict":
        return GRANTED, [*setup, (tool.name, example), (tool.name, example)]
    if code == "permission_denied":
        return DENIED, [(tool.name, example)]
    if code == "needs_confirmation":
        return GRANTED, [*setup, (tool.name, {**example, "confirm": False})]
    raise LookupError(f"no test case for {tool.name} {code}; add one to cases.ERRORS")


ERROR_CASES = [(t.name, code) for t in TOOLS.values() for code in t.errors]


@pytest.fixture(scope="module")
def backend() -> SandboxBackend:
    return SandboxBackend()


def test_catalogue_size_and_naming() -> None:
    assert len(APP_NAMES) >= 14 and len(TOOLS) >= 220
    for name, tool in TOOLS.items():
        app, _, action = name.partition(".")
        assert app in APP_NAMES and action and tool.description, name


def test_specs_are_json_schemas_with_write_tags() -> None:
    for tool in TOOLS.values():
        spec = tool.spec
        jsonschema.Draft202012Validator.check_schema(spec.parameters)
        jsonschema.Draft202012Validator.check_schema(spec.result_schema)
        jsonschema.validate(dict(tool.example), spec.parameters)
    assert sum(t.writes for t in TOOLS.values()) > 100 and sum(not t.writes for t in TOOLS.values()) > 60


@pytest.mark.parametrize("name", list(TOOLS))
def test_happy_path(backend: SandboxBackend, name: str) -> None:
    tool = TOOLS[name]
    obs = replay(backend, GRANTED, [*SETUP.get(name, []), (name, dict(tool.example))])
    assert obs.error is None, obs.error
    jsonschema.validate(obs.result, tool.spec.result_schema)
    if not tool.writes:  # reads never change state
        assert not obs.changes


@pytest.mark.parametrize(("name", "code"), ERROR_CASES)
def test_documented_error(backend: SandboxBackend, name: str, code: str) -> None:
    task, calls = error_case(TOOLS[name], code)
    obs = replay(backend, task, calls)
    assert obs.error is not None and obs.error.code == code, (obs.error, obs.result)
    assert not obs.changes


def test_failed_call_leaves_no_partial_write(backend: SandboxBackend) -> None:
    """pay_request marks the request paid, then fails on the deleted payee: the mark must be rolled back."""
    backend.reset(GRANTED)
    payee = backend.state()["wallet"]["requests"]["req_1"]["contact_id"]
    obs = replay(
        backend, GRANTED, [("contacts.delete_contact", {"id": payee}), ("wallet.pay_request", {"id": "req_1"})]
    )
    assert obs.error is not None and obs.error.code == "not_found"
    assert (
        backend.state()["wallet"] is backend.initial_state(GRANTED, 0)["wallet"]
        or backend.state()["wallet"] == backend.initial_state(GRANTED, 0)["wallet"]
    )


def test_unknown_tool_and_tools_outside_the_task(backend: SandboxBackend) -> None:
    assert replay(backend, GRANTED, [("nope.tool", {})]).error.code == "unknown_tool"  # type: ignore[union-attr]
    assert len(backend.tools()) == len(TOOLS)
