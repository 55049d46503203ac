"""Copy bias: while the model writes a tool call's argument, tokens that continue a passage of its own
prompt get a logit bonus.

The tiny planner chooses the right tool far more often than the right argument: it writes a value it memorised
from the train pools ("22:05" for the goal's "20:35", a train contact's name for a new one). Arguments are
mostly copied from what the harness showed it (the goal, a search result, a memory hit), so decoding favours
continuing a passage of the prompt: inside a string value of ``"args"``, every token that extends the value
written so far into a substring of the prompt text (starting at a word boundary), or closes it with ``"`` where
such a passage ends at a word boundary, gets ``+bonus`` before the argmax or the sampling. Inside a number value
the model has begun (``"minutes":3``), the digits that continue it into a number of the prompt (``35`` of "a
35-minute session", not a memorised ``30``), or the tokens closing the value where that number ends, get the
same bonus; the first digit stays the model's own choice. It is a soft bias,
not a constraint: a value the model composes (a message text) stays possible, and a large bonus is worse
than a moderate one (measured: see ``LearnerConfig.copy_bias``). Only the prompt the model was shown is used.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

_OPEN_VALUE = re.compile(r'":\s*"((?:[^"\\]|\\.)*)$')
"""The generated text ends inside a JSON string value (after ``"key":"``); group 1 is the value so far."""
_OPEN_NUMBER = re.compile(r'":\s*(-?[0-9]+(?:\.[0-9]*)?)$')
"""The generated text ends inside a JSON number value the model has begun (``"minutes":3``); group 1 is its text."""
_CLOSERS = ",}]"


class CopyBias:
    """The token pieces of one tokenizer, indexed for ``prompt()``; build once per policy."""

    def __init__(self, tokenizer: Any, bonus: float) -> None:
        self.bonus = bonus
        self.tokenizer = tokenizer
        self._by_piece: defaultdict[str, list[int]] = defaultdict(list)
        self._quoted: list[tuple[int, str]] = []
        for token_id in range(len(tokenizer)):
            piece = tokenizer.decode([token_id])
            if piece:
                self._by_piece[piece].append(token_id)
                if '"' in piece:
                    self._quoted.append((token_id, piece[: piece.index('"')]))
        self._longest = max((len(p) for p in self._by_piece), default=1)
        self._closers = sorted(
            i
            for piece, ids in self._by_piece.items()
            if piece[0] in _CLOSERS and not any(c.isdigit() for c in piece)
            for i in ids
        )

    def prompt(self, prompt_ids: list[int], slots: Sequence[int] = ()) -> PromptCopy:
        """The bias for one prompt (what the window kept of it, as the model sees it); ``slots``: the value slot
        tokens it holds (``learner.model.value_slots``), favoured where a value begins, as a passage's start is."""
        return PromptCopy(self, self.tokenizer.decode(prompt_ids, skip_special_tokens=True), slots)


class PromptCopy:
    def __init__(self, bias: CopyBias, text: str, slots: Sequence[int] = ()) -> None:
        self.bias = bias
        self.text = text
        self.slots = list(slots)
        self._starts = [i for i, ch in enumerate(text) if ch.isalnum() and (i == 0 or not text[i - 1].isalnum())]

    def favoured(self, generated: str) -> list[int]:
        """Token ids that continue a prompt passage from where ``generated`` (the output so far) stands; none outside
        a string value of a tool call's ``"args"``."""
        if '"args"' not in generated:
            return []
        found = _OPEN_VALUE.search(generated)
        if found is not None:
            return self.continuing(found.group(1))
        number = _OPEN_NUMBER.search(generated)
        return [] if number is None else self.continuing_number(number.group(1))

    def continuing(self, value: str) -> list[int]:
        """Token ids that extend ``value`` into a substring of the prompt starting at a word boundary, or close it."""
        text, longest = self.text, self.bias._longest
        starts = self._starts if not value else [i for i in self._starts if text.startswith(value, i)]
        ends = [i + len(value) for i in starts]
        ids: set[int] = set() if value else set(self.slots)
        if not ends:
            return sorted(ids)
        for end in ends:
            for size in range(1, min(longest, len(text) - end) + 1):
                ids.update(self.bias._by_piece.get(text[end : end + size], ()))
        if value:  # close the value with '"' (the piece's text before the quote must finish a passage at a boundary)
            for token_id, head in self.bias._quoted:
                if any(text.startswith(head, e) and _boundary(text, e + len(head)) for e in ends):
                    ids.add(token_id)
        return sorted(ids)

    def continuing_number(self, value: str) -> list[int]:
        """Digit (or ``.``) tokens that extend the number ``value`` the model began into a number of the prompt
        starting at a word boundary; where such a number ends there, the tokens that close the value (``,`` ``}``)."""
        text = self.text
        ids: set[int] = set()
        for start in self._starts:
            end = start + len(value)
            if not text.startswith(value, start):
                continue
            if end < len(text) and (text[end].isdigit() or (text[end] == "." and "." not in value)):
                ids.update(self.bias._by_piece.get(text[end], ()))
            elif _boundary(text, end):
                ids.update(self.bias._closers)
        return sorted(ids)


def _boundary(text: str, index: int) -> bool:
    return index >= len(text) or not text[index].isalnum()
