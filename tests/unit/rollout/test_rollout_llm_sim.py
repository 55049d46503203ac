"""The LLM-simulated backend: declared tools answered by a (scripted) model; bad answers are flagged, not trusted."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bus_schemas.actions import ToolCall
from harness_service.policy.scripted import ScriptedPolicy
from producers.backends.base import Backend
from producers.backends.llm_sim import LlmSimBackend, load_toolsets
from producers.backends.llm_sim.toolset import ToolsetError

pytestmark = pytest.mark.unit
SEARCH = ToolCall(name="flights.search", args={"origin": "ZRH", "destination": "LIS", "date": "2026-03-01"})
FLIGHT = {"id": "LX2084", "departs": "09:40", "price_eur": 180}


def simulator(*answers: object) -> ScriptedPolicy:
    return ScriptedPolicy([a if isinstance(a, str) else json.dumps(a) for a in answers], "simulator")


def backend(*answers: object) -> LlmSimBackend:
    sim = LlmSimBackend(load_toolsets(), simulator(*answers))
    sim.reset(task=None)
    return sim


def test_it_is_a_simulated_backend_over_the_declared_tools() -> None:
    sim = backend({"flights": [FLIGHT]})
    assert isinstance(sim, Backend) and sim.trust == "simulated" and sim.name == "llm_sim"
    assert {t.name for t in sim.tools()} == {"flights.search", "flights.book", "hotels.search"}
    observation = sim.step(SEARCH)
    assert observation.result == {"flights": [FLIGHT]} and observation.flags == ["simulated"]


def test_schema_invalid_results_are_flagged() -> None:
    sim = backend({"flights": [{"id": "LX1", "price_eur": -3}]}, "Sure! The flight leaves at nine.")
    wrong_shape = sim.step(SEARCH)
    assert wrong_shape.result is not None and "schema_invalid" in wrong_shape.flags
    not_json = sim.step(SEARCH)
    assert not_json.error is not None and not_json.error.code == "internal" and "schema_invalid" in not_json.flags


def test_results_contradicting_earlier_observations_are_flagged() -> None:
    moved = {**FLIGHT, "departs": "14:05"}
    sim = backend({"flights": [FLIGHT]}, {"flights": [moved]})
    assert "contradiction" not in sim.step(SEARCH).flags
    assert "contradiction" in sim.step(SEARCH).flags


def test_an_entity_changing_across_different_calls_is_a_contradiction_unless_written() -> None:
    other_day = ToolCall(name="flights.search", args={**SEARCH.args, "date": "2026-03-02"})
    book = ToolCall(name="flights.book", args={"flight_id": "LX2084", "passenger": "Ada"})
    sim = backend(
        {"flights": [FLIGHT]},
        {"flights": [{**FLIGHT, "price_eur": 999}]},  # same id, other price, no write between: contradiction
        {"booking_id": "B1", "status": "confirmed"},
        {"flights": [{**FLIGHT, "price_eur": 1200}]},  # after booking that flight, a new price is plausible
    )
    flags = [sim.step(c).flags for c in (SEARCH, other_day, book, other_day)]
    assert ["contradiction" in f for f in flags] == [False, True, False, False]


def test_invalid_arguments_never_reach_the_model() -> None:
    sim = backend({"flights": []})
    bad = sim.step(ToolCall(name="flights.search", args={"origin": "zurich"}))
    assert bad.error is not None and bad.error.code == "invalid_argument"
    assert sim.step(SEARCH).result == {"flights": []}  # the one scripted answer was not used up


def test_evidence_records_every_call_and_its_flags() -> None:
    sim = backend({"flights": [FLIGHT]})
    sim.step(SEARCH)
    evidence = sim.evidence()
    assert evidence.backend == "llm_sim" and evidence.calls[0]["observation"]["flags"] == ["simulated"]


def test_users_add_tool_sets_as_yaml_files_and_bad_files_are_named(tmp_path: Path) -> None:
    (tmp_path / "notes.yaml").write_text(
        "name: notes\ntools:\n  - name: notes.list\n    description: List notes.\n"
        "    parameters: {type: object}\n    result_schema: {type: array}\n"
    )
    assert "notes" in load_toolsets(tmp_path)
    (tmp_path / "broken.json").write_text('{"name": "broken", "tools": [{"name": "x"}]}')
    with pytest.raises(ToolsetError, match="broken.json"):
        load_toolsets(tmp_path)
