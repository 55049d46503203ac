"""Tool selection for free goals: BM25 over the tool docs picks the relevant app's tools."""

from __future__ import annotations

import pytest

from harness_service.tools.selection import select_tools
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
