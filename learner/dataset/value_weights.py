"""Per-token loss weights that stress an action's values over its fixed syntax.

A completion such as ``<action>{"kind":"tool_call","name":"contacts.search","args":{"query":"Nora A"}}</action>``
is mostly syntax the model writes the same way every time; the few tokens that decide whether the call works
are the values (a call's arguments, a memory query), most of them copied from the goal or an observation. With
equal weights the syntax dominates the token count. ``value_weights`` gives the tokens that overlap a value
``weight`` and every other completion token 1.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import orjson

from harness_service.actions.format import ACTION_CLOSE, ACTION_OPEN

_SYNTAX = {"kind", "name"}
"""Top-level fields whose values are a choice among a few names, not a value to copy or compose."""


def value_spans(completion: str) -> list[tuple[int, int]]:
    """Character spans of the values in ``completion``'s action: every leaf (list items included) but the action's
    ``kind`` and the tool's ``name``, so a call's arguments, a memory query, a finish answer. A string's span leaves
    its quotes out. None when the action does not parse."""
    head, tail = completion.find(ACTION_OPEN), completion.rfind(ACTION_CLOSE)
    begin = head + len(ACTION_OPEN) if head >= 0 else 0
    try:
        action = orjson.loads(completion[begin : tail if tail >= 0 else len(completion)])
    except orjson.JSONDecodeError:
        return []
    if not isinstance(action, dict):
        return []
    spans: list[tuple[int, int]] = []
    _leaves(completion, {k: v for k, v in action.items() if k not in _SYNTAX}, begin, spans)
    return spans


def _leaves(text: str, values: dict[str, Any], cursor: int, spans: list[tuple[int, int]]) -> int:
    """Appends the spans of ``values``' leaves, found in order from ``cursor`` on; returns where the search stopped."""
    for key, value in values.items():
        named = re.compile(re.escape(orjson.dumps(key).decode()) + r"\s*:").search(text, cursor)
        if named is None:
            return cursor
        cursor = named.end()
        if isinstance(value, dict):
            cursor = _leaves(text, value, cursor, spans)
            continue
        for leaf in value if isinstance(value, list) else [value]:
            if isinstance(leaf, (dict, list)):
                continue
            encoded = orjson.dumps(leaf).decode()
            found = text.find(encoded, cursor)
            if found < 0:
                return cursor
            cursor = found + len(encoded)
            quoted = isinstance(leaf, str)
            if len(encoded) > 2 * quoted:
                spans.append((found + quoted, cursor - quoted))
    return cursor


def value_weights(tokenizer: Any, completion_ids: Sequence[int], completion: str, weight: float) -> list[float]:
    """``weight`` for each token of ``completion_ids`` (the completion's tokens, maybe ending with an end-of-turn
    token the text does not contain) whose characters overlap a value (``value_spans``), 1.0 for the others."""
    spans = value_spans(completion)
    weights = [1.0] * len(completion_ids)
    if not spans or weight == 1.0:
        return weights
    position = 0
    for index, token_id in enumerate(completion_ids):
        piece = tokenizer.decode([token_id])
        end = position + len(piece)
        if any(begin < end and position < stop for begin, stop in spans):
            weights[index] = weight
        position = end
    return weights
