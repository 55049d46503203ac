"""The list an episode is working through: the newest tool result that listed several records, and which of their
ids the episode's tool calls have used since.

A small model's window keeps the task and the newest turns; a list result ("every Amber Fields track", "every
receipt") scrolls out of it after a few steps, and the ids still to handle go with it. The worklist line names the
next id no call has used yet, so the step that needs it sees it (``CompactContext.worklist``)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import orjson

from bus_schemas.json_types import JsonData, json_leaves

MIN_ITEMS = 2
"""A result listing fewer records is a lookup, not a list to work through."""
WORKLIST_LINE = re.compile(r'Not used yet from step \d+ \(\d+ of \d+\): \{"id":"((?:[^"\\]|\\.)*)"\}')
"""A worklist line as the context shows it; group 1 the id it names (JSON-escaped)."""


@dataclass
class Worklist:
    """The ids of the newest list result, in its order, and those the episode's calls have used since."""

    step: int = 0
    ids: tuple[str, ...] = ()
    used: set[str] = field(default_factory=set)

    def observe(self, step: int, result: JsonData) -> None:
        """A tool result of ``step``: a list of at least ``MIN_ITEMS`` records that each have a string ``id``
        starts a new worklist; any other result leaves the current one."""
        if not isinstance(result, list) or len(result) < MIN_ITEMS:
            return
        ids = [i for item in result if isinstance(item, dict) and isinstance(i := item.get("id"), str) and i]
        if len(ids) == len(result):
            self.step, self.ids, self.used = step, tuple(dict.fromkeys(ids)), set()

    def use(self, args: JsonData) -> None:
        """A tool call's arguments: each string among them (nested too) that is an id of the list is used."""
        listed = set(self.ids)
        self.used.update(value for value in json_leaves(args) if isinstance(value, str) and value in listed)

    def line(self) -> str | None:
        """``Not used yet from step 3 (2 of 3): {"id":"trk_12"}`` while some of the list's ids are unused; None when
        there is no list or every id of it is used."""
        left = [i for i in self.ids if i not in self.used]
        if not left:
            return None
        shown = orjson.dumps({"id": left[0]}).decode()
        return f"Not used yet from step {self.step} ({len(left)} of {len(self.ids)}): {shown}"
