"""Token counters: a deterministic approximation by default, the model tokenizer when one is loaded."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any, Protocol

from harness_service.context.messages import ChatMessage, render_message

_PIECE = re.compile(r"\w{1,4}|[^\w\s]", re.UNICODE)
"""A token of the approximation: a started 4 characters of a word, or one punctuation mark."""
_WORD_PIECE = re.compile(r"\w{1,4}", re.UNICODE)


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
    """``len(_PIECE.findall(text))`` without a string per piece: the word pieces are counted as they are cut out,
    what is left is spaces and punctuation (``str.split`` and ``\\s`` agree on what a space is).
    Memoised: system prompts repeat across the episodes of a task family."""
    punctuation, word_pieces = _WORD_PIECE.subn("", text)
    return word_pieces + sum(map(len, punctuation.split()))


class TokenizerCounter:
    """Exact counts from a Hugging Face tokenizer (anything with ``encode(text, add_special_tokens=...)``)."""

    additive = False

    def __init__(self, tokenizer: Any) -> None:
        self._tokenizer = tokenizer

    def count(self, text: str) -> int:
        return len(self._tokenizer.encode(text, add_special_tokens=False))


_SYSTEM_TOKENS: dict[ChatMessage, int] = {}
_SYSTEM_TOKENS_SIZE = 256


def message_tokens(counter: TokenCounter, message: ChatMessage) -> int:
    """Tokens of one rendered message (``render_message``). The approximate counter's counts of system messages are
    remembered across episodes: one with every tool's schema (thousands of tokens) opens every episode of a task
    family."""
    if message.role != "system" or type(counter) is not ApproxTokenCounter:
        return counter.count(render_message(message))
    count = _SYSTEM_TOKENS.get(message)
    if count is None:
        if len(_SYSTEM_TOKENS) >= _SYSTEM_TOKENS_SIZE:
            _SYSTEM_TOKENS.clear()
        count = _SYSTEM_TOKENS[message] = counter.count(render_message(message))
    return count
