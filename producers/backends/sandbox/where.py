"""``where`` matches: which records (state rows, call arguments) a criterion is about, in the task's own JSON.

A ``where`` maps ``field`` (equality) or ``field__op`` to the wanted value; ``not``, ``any`` and ``all`` combine
nested ``where``s. It is parsed once into a matcher, so an unknown operator or a malformed combinator raises
ValueError even when there is no record to match (an empty table, an empty call trace) and cannot pass unseen.
A field literally named ``not``/``any``/``all`` is matched with ``name__eq``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

Matcher = Callable[[Any], bool]


def norm(value: Any) -> str:
    """Lower case, punctuation and runs of spaces folded to one space: "New-York " and "new york" are equal."""
    return re.sub(r"[^a-z0-9.]+", " ", str(value).lower()).strip()


def _eq(have: Any, want: Any) -> bool:
    return bool(have == want)


def _approx(have: Any, want: Any) -> bool:
    return abs(float(have) - float(want)) <= 0.011


OPERATORS: dict[str, Callable[[Any, Any], bool]] = {
    "": _eq,
    "eq": _eq,
    "norm": lambda have, want: norm(have) == norm(want),
    "contains": lambda have, want: norm(want) in norm(have),
    "has": lambda have, want: want in have,
    "approx": _approx,
    "set": lambda have, want: sorted(have) == sorted(want),
}
"""``field__op`` -> test of (the record's value, the wanted value); a record without the field never matches."""

_COMBINATORS = ("not", "any", "all")


def where_matcher(where: Any) -> Matcher:
    """Parse ``where`` into a test of one record; ValueError names the first thing it cannot parse."""
    if not isinstance(where, Mapping):
        raise ValueError(f"a where must be a JSON object, got {where!r}"[:300])
    clauses = [_clause(str(key), want) for key, want in where.items()]
    return lambda record: all(clause(record) for clause in clauses)


def matches(record: Any, where: Mapping[str, Any]) -> bool:
    """Whether ``record`` satisfies every clause of ``where``."""
    return where_matcher(where)(record)


def _clause(key: str, want: Any) -> Matcher:
    if key == "not":
        inner = where_matcher(want)
        return lambda record: not inner(record)
    if key in _COMBINATORS:
        if not isinstance(want, list):
            raise ValueError(f"{key!r} takes a list of wheres, got {want!r}"[:300])
        inners = [where_matcher(w) for w in want]
        combine = any if key == "any" else all
        return lambda record: combine(inner(record) for inner in inners)
    field, _, op = key.partition("__")
    test = OPERATORS.get(op)
    if test is None:
        known = ", ".join(o for o in OPERATORS if o)
        raise ValueError(f"unknown where operator {op!r} in {key!r} (known: {known}; combinators: not, any, all)")

    def clause(record: Any) -> bool:
        if not isinstance(record, Mapping) or field not in record:
            return False
        try:
            return test(record[field], want)
        except (TypeError, ValueError):  # text where a number belongs (a policy's argument): no match, not a crash
            return False

    return clause
