"""Per-user memory in one SQLite file (or ``:memory:``): write, read, BM25 search through FTS5, delete."""

from __future__ import annotations

import re
import sqlite3
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Protocol

import orjson

from harness_service.memory.records import MemoryRecord

_WORD = re.compile(r"\w+", re.UNICODE)
_SCHEMA = "CREATE VIRTUAL TABLE IF NOT EXISTS memory USING fts5(content, tags, user_id UNINDEXED)"


class Fact(Protocol):
    """Anything with content and tags, e.g. a task's ``MemoryFact``."""

    @property
    def content(self) -> str: ...

    @property
    def tags(self) -> list[str]: ...


class MemoryStore:
    """Memories of one user. Rows are ordered by insertion; search ranks by BM25, ties by insertion."""

    def __init__(self, path: Path | str = ":memory:", user_id: str = "default") -> None:
        self.user_id = user_id
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        """A new in-memory store gets its database and table on the first write: most episodes of a rollout have
        no memories to seed and only search."""
        if str(path) != ":memory:":
            self._db = _connect(str(path))
            self._db.execute(_SCHEMA)

    def write(self, content: str, tags: Sequence[str] = ()) -> MemoryRecord:
        """Store one fact and return it with its id."""
        with self._lock:
            return self._insert(self._table(), content, tags)

    def seed(self, facts: Iterable[Fact]) -> list[MemoryRecord]:
        """Write each fact (e.g. a task's ``initial_conditions.memories``), in one transaction."""
        facts = list(facts)
        if not facts:
            return []
        with self._lock:
            db = self._table()
            db.execute("BEGIN")
            try:
                return [self._insert(db, f.content, f.tags) for f in facts]
            finally:  # what was written stays written, as with one write per fact
                db.execute("COMMIT")

    def _table(self) -> sqlite3.Connection:
        """The database, made (with the empty table) on first use."""
        if self._db is None:
            self._db = _connect(":memory:")
            _copy_empty_store(self._db)
        return self._db

    def _insert(self, db: sqlite3.Connection, content: str, tags: Sequence[str]) -> MemoryRecord:
        cursor = db.execute(
            "INSERT INTO memory(content, tags, user_id) VALUES (?, ?, ?)",
            (content, orjson.dumps(list(tags)).decode(), self.user_id),
        )
        return MemoryRecord(id=int(cursor.lastrowid or 0), content=content, tags=list(tags))

    def all(self) -> list[MemoryRecord]:
        """Every memory of the user, oldest first."""
        return self._select("SELECT rowid, content, tags FROM memory WHERE user_id = ? ORDER BY rowid", ())

    def search(self, query: str, top_k: int = 5) -> list[MemoryRecord]:
        """The ``top_k`` best BM25 matches of any word of ``query``; the newest memories for an empty query."""
        if self._db is None:
            return []
        words = sorted({w.lower() for w in _WORD.findall(query)})
        if not words:
            sql = "SELECT rowid, content, tags FROM memory WHERE user_id = ? ORDER BY rowid DESC LIMIT ?"
            return self._select(sql, (top_k,))
        match = " OR ".join('"' + w.replace('"', '""') + '"' for w in words)
        sql = (
            "SELECT rowid, content, tags FROM memory WHERE memory MATCH ? AND user_id = ? "
            "ORDER BY bm25(memory), rowid LIMIT ?"
        )
        with self._lock:
            rows = self._db.execute(sql, (match, self.user_id, top_k)).fetchall()
        return [_record(row) for row in rows]

    def delete(self, ids: Iterable[int]) -> None:
        """Remove memories by id (consolidation replaces merged groups)."""
        if self._db is None:
            return
        with self._lock:
            self._db.executemany("DELETE FROM memory WHERE rowid = ? AND user_id = ?", [(i, self.user_id) for i in ids])

    def replace(self, record_id: int, content: str, tags: Sequence[str]) -> None:
        """Overwrite one memory in place of its id (keeps its position in insertion order)."""
        if self._db is None:
            return
        with self._lock:
            self._db.execute(
                "UPDATE memory SET content = ?, tags = ? WHERE rowid = ? AND user_id = ?",
                (content, orjson.dumps(list(tags)).decode(), record_id, self.user_id),
            )

    def close(self) -> None:
        if self._db is not None:
            self._db.close()

    def _select(self, sql: str, params: tuple[object, ...]) -> list[MemoryRecord]:
        if self._db is None:
            return []
        with self._lock:
            rows = self._db.execute(sql, (self.user_id, *params)).fetchall()
        return [_record(row) for row in rows]


def _connect(path: str) -> sqlite3.Connection:
    return sqlite3.connect(path, check_same_thread=False, isolation_level=None)


_EMPTY_LOCK = threading.Lock()
_empty: sqlite3.Connection | None = None


def _copy_empty_store(db: sqlite3.Connection) -> None:
    """Give the in-memory database ``db`` the (empty) memory table by copying the pages of one made once: a
    quarter of what FTS5's ``CREATE VIRTUAL TABLE`` costs each time."""
    global _empty
    with _EMPTY_LOCK:
        if _empty is None:
            _empty = _connect(":memory:")
            _empty.execute(_SCHEMA)
        _empty.backup(db)


def _record(row: tuple[int, str, str]) -> MemoryRecord:
    return MemoryRecord(id=row[0], content=row[1], tags=orjson.loads(row[2]))
