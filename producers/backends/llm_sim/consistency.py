"""Catches simulated results that contradict what the episode already observed.

Two rules, both reset by a write: the same read call must return the same result, and an entity
(an object with an ``id``) must keep the values of its scalar fields.
"""

from __future__ import annotations

from typing import Any

import orjson

Scalar = (str, int, float, bool, type(None))


def _facts(value: Any, found: dict[tuple[str, str], Any]) -> dict[tuple[str, str], Any]:
    if isinstance(value, dict):
        entity = value.get("id")
        if isinstance(entity, (str, int)) and not isinstance(entity, bool):
            for key, field in value.items():
                if key != "id" and isinstance(field, Scalar):
                    found[(str(entity), key)] = field
        for field in value.values():
            _facts(field, found)
    elif isinstance(value, list):
        for item in value:
            _facts(item, found)
    return found


def _scalars(value: Any, found: set[str]) -> set[str]:
    """Every scalar in ``value`` as a string: the entity ids a write may have changed."""
    if isinstance(value, dict):
        for item in value.values():
            _scalars(item, found)
    elif isinstance(value, list):
        for item in value:
            _scalars(item, found)
    else:
        found.add(str(value))
    return found


class ConsistencyTracker:
    """Per episode: what read calls returned and what each entity's fields were."""

    def __init__(self) -> None:
        self._reads: dict[bytes, Any] = {}
        self._facts: dict[tuple[str, str], Any] = {}

    def check(self, tool: str, args: dict[str, Any], result: Any, writes: bool) -> list[str]:
        """Contradictions of ``result`` with earlier observations (human-readable), then remembers it."""
        problems: list[str] = []
        if writes:
            self._reads.clear()
            mentioned = _scalars(args, set())
            self._facts = {k: v for k, v in self._facts.items() if k[0] not in mentioned}
        else:
            call = orjson.dumps([tool, args], option=orjson.OPT_SORT_KEYS)
            if call in self._reads and self._reads[call] != result:
                problems.append(f"{tool} returned a different result for the same arguments")
            self._reads[call] = result
        for key, value in _facts(result, {}).items():
            if key in self._facts and self._facts[key] != value:
                problems.append(f"{key[0]}.{key[1]} was {self._facts[key]!r}, now {value!r}")
            self._facts[key] = value
        return problems
