"""Picks the tools relevant to a free-form goal by BM25 over tool names and descriptions (SQLite FTS5)."""

from __future__ import annotations

import re
import sqlite3
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from fnmatch import fnmatchcase

from harness_service.revisions import MAX_SUCCESSORS
from harness_service.skills.skill import Skill
from producers.backends.base import ToolSpec

_WORD = re.compile(r"\w+", re.UNICODE)


def _words(text: str) -> str:
    """Names like ``contacts.search_contacts`` become searchable words."""
    return " ".join(_WORD.findall(text.replace("_", " ").lower()))


def select_tools(goal: str, tools: Sequence[ToolSpec], limit: int) -> list[str]:
    """The names of the ``limit`` best-matching tools, best first; ties broken by name. Deterministic."""
    words = sorted(set(_words(goal).split()))
    if not words or len(tools) <= limit:
        return sorted(t.name for t in tools)[:limit]
    with sqlite3.connect(":memory:") as db:
        db.execute("CREATE VIRTUAL TABLE tool USING fts5(name UNINDEXED, words, tokenize='porter unicode61')")
        db.executemany(
            "INSERT INTO tool VALUES (?, ?)", [(t.name, f"{_words(t.name)} {_words(t.description)}") for t in tools]
        )
        match = " OR ".join(f'"{w}"' for w in words)
        sql = "SELECT name FROM tool WHERE tool MATCH ? ORDER BY bm25(tool), name LIMIT ?"
        return [row[0] for row in db.execute(sql, (match, limit))]


def step_tools(
    tools: Sequence[ToolSpec],
    loaded: Sequence[Skill],
    called: Sequence[str],
    goal_matches: Sequence[str],
    limit: int,
    successors: Mapping[str, Sequence[str]] | None = None,
) -> list[ToolSpec]:
    """The tools one step of a compact context shows, at most ``limit``: the tools that followed the last call in
    solutions first (``successors`` of it, or of ``""`` before any call), then the loaded skills' tools, the tools
    already called (newest first), then ``goal_matches`` (``select_tools`` of the goal). Deterministic."""
    by_name = {t.name: t for t in tools}
    names: list[str] = [n for n in (successors or {}).get(called[-1] if called else "", ()) if n in by_name]
    for skill in loaded:
        names += sorted(n for n in by_name if any(fnmatchcase(n, pattern) for pattern in skill.tools))
    names += [n for n in reversed(called) if n in by_name]
    names += goal_matches
    chosen = list(dict.fromkeys(names))[:limit]
    return [by_name[n] for n in chosen]


def successor_table(procedures: Iterable[Sequence[str]]) -> dict[str, tuple[str, ...]]:
    """Each call (``""``: the start) -> the tools that followed it in ``procedures``, most frequent first (ties by
    name), at most ``MAX_SUCCESSORS``; a repeated call is not its own successor (the called tools are shown)."""
    follows: defaultdict[str, Counter[str]] = defaultdict(Counter)
    for calls in procedures:
        for before, call in zip(("", *calls), calls, strict=False):
            if before != call:
                follows[before][call] += 1
    return {
        before: tuple(sorted(counts, key=lambda name: (-counts[name], name))[:MAX_SUCCESSORS])
        for before, counts in sorted(follows.items())
    }
