"""Which ids a call uses that the policy was never shown: a right id nobody showed is a guess, not a look-up.

The sandbox records, per call, the id arguments (``id``, ``*_id``, ``*_ids``) that appear nowhere in what the
policy could have read so far: the goal, the task's tool list (descriptions and examples: ``pl_1`` is an
example id of maps) and every earlier observation, results and error messages alike, its sub-agents' included
(they share the backend). Memory and skill texts never pass through the backend; no template puts an id there.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

_TOKEN = re.compile(r"\w+")

GROUNDED = "grounded_ids"
"""The verdict's extra criterion, listed only when it fails: a successful call used an id the policy was never shown,
so a right outcome rests on a guess. Every sandbox task has it; evidence without the record passes."""


def tokens(value: Any) -> set[str]:
    """The word tokens of a JSON value: every id it names, whatever field or sentence holds it."""
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return set(_TOKEN.findall(text))


def id_arguments(args: Mapping[str, Any]) -> Iterable[str]:
    """The values of a call's id arguments: ``id`` and ``*_id`` strings, ``*_ids`` lists of strings."""
    for key, value in args.items():
        if key == "id" or key.endswith("_id"):
            if isinstance(value, str):
                yield value
        elif key.endswith("_ids") and isinstance(value, list):
            yield from (v for v in value if isinstance(v, str))


class Shown:
    """The tokens shown to the policy in one episode; ``unseen`` names the id arguments of a call outside them."""

    def __init__(self, *sources: Any, known: Iterable[str] = ()) -> None:
        """``sources``: values to tokenise; ``known``: tokens already taken out of static texts (a tool's spec)."""
        self._seen: set[str] = set(known)
        for source in sources:
            self.add(source)

    def add(self, value: Any) -> None:
        self._seen |= tokens(value)

    def unseen(self, args: Mapping[str, Any]) -> list[str]:
        return [v for v in id_arguments(args) if v.strip() and v.strip() not in self._seen]
