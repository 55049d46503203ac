"""The per-episode world state: three levels (app -> collection -> key -> JSON value), copy-on-write.

The initial state is shared and never mutated; an episode copies only the tables it writes, so a reset
is O(1), and unchanged tables stay the very same objects, which makes diffs cheap. Values are treated
as immutable: tools replace a record, they never edit it in place.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any, Literal

import orjson

from bus_schemas.actions import StateChange
from producers.backends.sandbox.errors import ToolFailure

State = dict[str, dict[str, dict[str, Any]]]

_MISSING: Any = object()


def state_hash(state: Mapping[str, Any]) -> str:
    """sha256 of canonical JSON (sorted keys): equal states hash equal, bit for bit, across runs."""
    return hashlib.sha256(orjson.dumps(state, option=orjson.OPT_SORT_KEYS)).hexdigest()


def _change(path: str, before: Any, after: Any) -> StateChange:
    op: Literal["added", "removed", "changed"] = (
        "added" if before is _MISSING else "removed" if after is _MISSING else "changed"
    )
    return StateChange.model_construct(
        path=path,
        op=op,
        before=None if before is _MISSING else before,
        after=None if after is _MISSING else after,
    )


def diff(initial: Mapping[str, Any], final: Mapping[str, Any]) -> list[StateChange]:
    """Every changed leaf as ``/app/collection/key``; identical (shared) tables are skipped by identity."""
    out: list[StateChange] = []
    for app in sorted(initial.keys() | final.keys()):
        a_app, b_app = initial.get(app, {}), final.get(app, {})
        if a_app is b_app:
            continue
        for coll in sorted(a_app.keys() | b_app.keys()):
            a, b = a_app.get(coll, {}), b_app.get(coll, {})
            if a is b or a == b:
                continue
            for key in sorted(a.keys() | b.keys()):
                before, after = a.get(key, _MISSING), b.get(key, _MISSING)
                if before is not after and before != after:
                    out.append(_change(f"/{app}/{coll}/{key}", before, after))
    return out


class World:
    """Mutable view of one episode over a shared, frozen initial state."""

    __slots__ = ("base", "tables", "log")

    def __init__(self, base: State) -> None:
        self.base = base
        self.tables: dict[tuple[str, str], dict[str, Any]] = {}
        self.log: list[StateChange] = []

    def table(self, app: str, coll: str) -> Mapping[str, Any]:
        table = self.tables.get((app, coll))
        return self.base[app][coll] if table is None else table

    def find(self, app: str, coll: str, key: str) -> Any:
        return self.table(app, coll).get(key)

    def get(self, app: str, coll: str, key: str, noun: str) -> Any:
        value = self.table(app, coll).get(key)
        if value is None:
            raise ToolFailure("not_found", f"no {noun} with id {key!r}")
        return value

    def _writable(self, app: str, coll: str) -> dict[str, Any]:
        table = self.tables.get((app, coll))
        if table is None:
            table = self.tables[app, coll] = dict(self.base[app][coll])
        return table

    def put(self, app: str, coll: str, key: str, value: Any) -> Any:
        table = self._writable(app, coll)
        before = table.get(key, _MISSING)
        table[key] = value
        self.log.append(_change(f"/{app}/{coll}/{key}", before, value))
        return value

    def patch(self, app: str, coll: str, key: str, **fields: Any) -> Any:
        return self.put(app, coll, key, {**self.table(app, coll)[key], **fields})

    def delete(self, app: str, coll: str, key: str) -> Any:
        table = self._writable(app, coll)
        before = table.pop(key)
        self.log.append(_change(f"/{app}/{coll}/{key}", before, _MISSING))
        return before

    def rollback(self, mark: int) -> None:
        """Undo every write after ``mark`` in the log, so a failed tool call leaves no partial change."""
        while len(self.log) > mark:
            change = self.log.pop()
            _, app, coll, key = change.path.split("/", 3)
            table = self._writable(app, coll)
            if change.op == "added":
                del table[key]
            else:
                table[key] = change.before

    def new_id(self, app: str, coll: str, prefix: str) -> str:
        """Deterministic fresh id: the next free ``prefix_N`` given the table's current size."""
        table = self.table(app, coll)
        n = len(table) + 1
        while f"{prefix}_{n}" in table:
            n += 1
        return f"{prefix}_{n}"

    def state(self) -> State:
        """The current state; untouched apps and tables are the initial objects themselves."""
        if not self.tables:
            return self.base
        out = dict(self.base)
        for (app, coll), table in self.tables.items():
            if out[app] is self.base[app]:
                out[app] = dict(self.base[app])
            out[app][coll] = table
        return out
