"""Tool selection for free goals: BM25 over the tool docs picks the relevant app's tools."""

from __future__ import annotations

import pytest

from harness_service.tools.selection import select_tools, step_tools
from producers.backends.sandbox.catalog import TOOLS

pytestmark = pytest.mark.unit

SPECS = [t.spec for t in TOOLS.values()]


def test_the_relevant_tools_come_first() -> None:
    chosen = select_tools("Create a calendar event with Dana tomorrow at 10", SPECS, 8)
    assert len(chosen) == 8 and "calendar.create_event" in chosen
    assert select_tools("Send a text message to Sam", SPECS, 5)[0].startswith("messages.")


def test_selection_is_deterministic_and_bounded() -> None:
    assert select_tools("play some music", SPECS, 10) == select_tools("play some music", SPECS, 10)
    assert select_tools("???", SPECS, 3) == sorted(t.name for t in SPECS)[:3]
    assert select_tools("anything", SPECS[:2], 5) == sorted(t.name for t in SPECS[:2])


def _names(tools) -> list[str]:
    return [t.name for t in tools]


def test_a_step_shows_the_successors_of_the_last_call_first() -> None:
    goal = select_tools("Book me a comfort ride from home to my gym", SPECS, 3)
    successors = {
        "": ("maps.search_places",),
        "maps.search_places": ("rides.request_ride",),
        "rides.request_ride": ("rides.confirm_pickup", "no_such.tool"),
    }
    first = _names(step_tools(SPECS, (), (), goal, 3, successors))
    assert first[0] == "maps.search_places" and first[1:] == [n for n in goal if n != "maps.search_places"][:2]
    after = _names(step_tools(SPECS, (), ["maps.search_places", "rides.request_ride"], goal, 3, successors))
    assert after[:3] == ["rides.confirm_pickup", "rides.request_ride", "maps.search_places"]  # unknown names skipped
    assert _names(step_tools(SPECS, (), ["maps.search_places"], goal, 3)) == _names(
        step_tools(SPECS, (), ["maps.search_places"], goal, 3, {})
    )  # no table: the called tools, then the goal's matches
    assert len(step_tools(SPECS, (), [], goal, 1, successors)) == 1
