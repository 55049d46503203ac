"""Picks the tools relevant to a free-form goal by BM25 over tool names and descriptions (SQLite FTS5)."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Sequence

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
