"""Tool selection for free goals: BM25 over the tool docs picks the relevant app's tools."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from harness_service.config import CompactContext
from harness_service.tools.selection import episode_successors, fit_procedure, goal_successors, select_tools, step_tools
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


_SOLUTIONS = [
    *[("Pay Nora Chen $12 for lunch", ("contacts.search_contacts", "wallet.send_money"))] * 3,
    *[("Text Nora Chen that I am late", ("contacts.search_contacts", "messages.send"))] * 4,
    *[("How many unread messages from Nora Chen", ("contacts.search_contacts", "messages.conversation"))] * 3,
]


def test_a_fitted_prior_ranks_a_calls_successors_by_the_goals_words() -> None:
    prior = fit_procedure(_SOLUTIONS, min_cue=2)
    assert prior.follows["contacts.search_contacts"] == {
        "messages.conversation": 3,
        "messages.send": 4,
        "wallet.send_money": 3,
    }
    assert prior.cues["wallet.send_money"]["pay"] == 3 and "pay" not in prior.cues["messages.send"]
    after = "contacts.search_contacts"
    assert goal_successors(prior, "Pay Ada Berg $5 for the taxi")[after][0] == "wallet.send_money"
    assert goal_successors(prior, "How many unread messages do I have from Ada Berg?")[after][0] == (
        "messages.conversation"
    )
    # no known word: how often each followed decides (then the name); words no solution's goal held are no evidence
    assert goal_successors(prior, "Zorble Quux")[after] == ("messages.send", "messages.conversation")
    shown_one = prior.model_copy(update={"shown": 1})
    assert goal_successors(shown_one, "Pay Ada")[after] == ("wallet.send_money",)
    assert goal_successors(prior, "Pay Ada")[""] == ("contacts.search_contacts",)


def test_rare_goal_words_are_no_cue() -> None:
    prior = fit_procedure([("Pay Nora", ("wallet.send_money",)), ("Pay Ada", ("wallet.send_money",))], min_cue=2)
    assert prior.cues["wallet.send_money"] == {"pay": 2}


def test_an_episodes_successors_are_the_goal_ranked_prior_with_the_revisers_entries_in_their_place() -> None:
    prior = fit_procedure(_SOLUTIONS, min_cue=2)
    compact = CompactContext(procedure=prior, tool_successors={"contacts.search_contacts": ("calls.call",)})
    table = episode_successors(compact, "Pay Ada $5")
    assert table["contacts.search_contacts"] == ("calls.call",) and table[""] == ("contacts.search_contacts",)
    assert episode_successors(CompactContext(tool_successors={"": ("maps.search_places",)}), "Pay Ada") == {
        "": ("maps.search_places",)
    }


_RANK_DEV_GOALS = """
import hashlib, json
from harness_service.tools.selection import goal_successors
from learner.config import LearnerConfig
from learner.jobs import dev_tasks
from learner.procedure_prior import tiny_prior
ranked = [goal_successors(tiny_prior(), t.goal) for t in dev_tasks(LearnerConfig(dev_per_category=None), "t")]
print(hashlib.sha256(json.dumps(ranked).encode()).hexdigest())
"""


def test_the_ranking_is_the_same_in_every_process_whatever_the_hash_seed() -> None:
    """A set's order follows the process's hash seed; a score summed in that order rounded differently, two tools
    tied in one process and not in the next, and the learner's re-render of a recorded context differed (the
    episode was not trained on)."""
    digests = {
        subprocess.run(
            [sys.executable, "-c", _RANK_DEV_GOALS],
            env={**os.environ, "PYTHONHASHSEED": seed},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for seed in ("0", "1", "2")
    }
    assert len(digests) == 1, digests
