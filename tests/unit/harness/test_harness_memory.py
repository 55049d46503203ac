"""Memory: per-user SQLite FTS5 store, BM25 search, seeding from a task, rule-based and model-assisted consolidation."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from bus_schemas.events.tasks import MemoryFact
from harness_service.memory.consolidate import consolidate, normalise
from harness_service.memory.model_merge import PolicyMerger
from harness_service.memory.store import MemoryStore
from harness_service.policy.scripted import ScriptedPolicy

pytestmark = pytest.mark.unit


def test_search_ranks_by_bm25_and_filters_by_user(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    alex = MemoryStore(path, user_id="alex")
    alex.write("Alex's sister Dana lives in Lisbon", ["family"])
    alex.write("Alex prefers meetings in the morning", ["preference"])
    alex.write("Dana's birthday is on March 3; Dana likes tulips", ["family", "dates"])
    MemoryStore(path, user_id="sam").write("Dana is Sam's manager")
    found = MemoryStore(path, user_id="alex").search("When is Dana's birthday?", top_k=2)
    assert [r.content for r in found] == [
        "Dana's birthday is on March 3; Dana likes tulips",
        "Alex's sister Dana lives in Lisbon",
    ]
    assert found[0].tags == ["family", "dates"]


def test_query_syntax_is_never_interpreted() -> None:
    store = MemoryStore()
    store.write('quote " and NEAR(AND OR) * ^ stars')
    assert store.search('" NEAR( AND * ^') and store.search("") and store.search("???") == store.search("")


def test_seed_from_task_facts() -> None:
    store = MemoryStore()
    store.seed([MemoryFact(content="Gym on Tuesdays", tags=["routine"])])
    assert [(r.content, r.tags) for r in store.all()] == [("Gym on Tuesdays", ["routine"])]


def test_in_memory_stores_start_empty_and_apart_whatever_was_read_or_written_before() -> None:
    first = MemoryStore()
    assert first.search("tea") == [] and first.search("") == [] and first.all() == []
    first.delete([1])
    first.replace(1, "x", [])
    assert first.seed([]) == [] and first.all() == []
    first.seed([MemoryFact(content="the user likes tea", tags=["prefs"]), MemoryFact(content="tea at noon", tags=[])])
    second = MemoryStore()
    assert second.all() == [] and second.write("coffee", ["prefs"]).id == 1
    assert [(r.id, r.content) for r in first.search("tea")] == [(2, "tea at noon"), (1, "the user likes tea")]
    assert [r.content for r in second.all()] == ["coffee"]


def test_consolidation_merges_exact_and_near_duplicates_keeping_the_oldest_slot() -> None:
    store = MemoryStore()
    store.write("Dana likes tulips.", ["flowers"])
    store.write("Gym on Tuesdays")
    store.write("dana LIKES tulips", ["family"])
    store.write("Dana really likes tulips", [])
    report = consolidate(store, threshold=0.75)
    assert (report.groups_merged, report.removed) == (1, 2)
    assert [(r.content, r.tags) for r in store.all()] == [
        ("Dana really likes tulips", ["family", "flowers"]),
        ("Gym on Tuesdays", []),
    ]
    assert consolidate(store, threshold=0.75).removed == 0  # idempotent


class JoiningMerger:
    def __init__(self) -> None:
        self.groups: list[list[str]] = []

    def merge(self, contents: Sequence[str]) -> str:
        self.groups.append(list(contents))
        return " / ".join(contents)


def test_model_assisted_consolidation_writes_the_merged_text() -> None:
    store = MemoryStore()
    store.write("Call mom on Sunday")
    store.write("call Mom on sunday!")
    merger = JoiningMerger()
    consolidate(store, merger=merger)
    assert merger.groups == [["Call mom on Sunday", "call Mom on sunday!"]]
    assert [r.content for r in store.all()] == ["Call mom on Sunday / call Mom on sunday!"]
    assert normalise("Call  MOM, on Sunday!") == "call mom on sunday"


def test_policy_merger_asks_the_model_and_strips_its_thinking() -> None:
    policy = ScriptedPolicy(["<think>same fact</think> Call mom on Sundays.", ""], "merger")
    merger = PolicyMerger(policy)
    assert merger.merge(["Call mom on Sunday", "call Mom on sunday!"]) == "Call mom on Sundays."
    assert merger.merge(["short", "the longest note"]) == "the longest note"  # empty reply: rules fallback
