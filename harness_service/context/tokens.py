"""Token counters: a deterministic approximation by default, the model tokenizer when one is loaded."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any, Protocol

_PIECE = re.compile(r"\w{1,4}|[^\w\s]", re.UNICODE)


class TokenCounter(Protocol):
    """Counts the tokens of a text."""

    def count(self, text: str) -> int: ...


class ApproxTokenCounter:
    """One token per punctuation mark and per started 4 characters of a word: close to BPE, fully deterministic."""

    additive = True
    """``count(a + b) == count(a) + count(b)`` when ``a`` ends in whitespace: rendered messages can be summed."""

    def count(self, text: str) -> int:
        return _approx_count(text)


@lru_cache(maxsize=512)
def _approx_count(text: str) -> int:
    """Memoised: system prompts repeat across the episodes of a task family."""
    return len(_PIECE.findall(text))


class TokenizerCounter:
    """Exact counts from a Hugging Face tokenizer (anything with ``encode(text, add_special_tokens=...)``)."""

    additive = False

    def __init__(self, tokenizer: Any) -> None:
        self._tokenizer = tokenizer

    def count(self, text: str) -> int:
        return len(self._tokenizer.encode(text, add_special_tokens=False))
