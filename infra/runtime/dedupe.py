"""Durable record of which input events a consumer group has already handled (idempotency by event id)."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterable
from pathlib import Path


class ProcessedStore:
    """A SQLite file per consumer group under the state directory, shared by the group's local replicas."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(path, timeout=30, isolation_level=None, check_same_thread=False)
        self._conn.execute("PRAGMA journal_mode=WAL")
        # As the embedded bus: a commit survives a killed process; an OS crash may lose the last marks,
        # which only matters for a record that is also redelivered (its offset was committed first).
        self._conn.execute("PRAGMA synchronous=NORMAL")
        self._conn.execute("CREATE TABLE IF NOT EXISTS processed(event_id TEXT PRIMARY KEY) WITHOUT ROWID")

    def seen(self, event_ids: Iterable[str]) -> set[str]:
        ids = list(event_ids)
        if not ids:
            return set()
        with self._lock:
            rows = self._conn.execute(
                f"SELECT event_id FROM processed WHERE event_id IN ({','.join('?' * len(ids))})", ids
            ).fetchall()
        return {r[0] for r in rows}

    def mark(self, event_ids: Iterable[str]) -> None:
        with self._lock:
            self._conn.executemany("INSERT OR IGNORE INTO processed(event_id) VALUES(?)", [(e,) for e in event_ids])

    def count(self) -> int:
        with self._lock:
            return int(self._conn.execute("SELECT COUNT(*) FROM processed").fetchone()[0])

    def close(self) -> None:
        self._conn.close()
