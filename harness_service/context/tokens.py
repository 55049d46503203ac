"""Token counters: a deterministic approximation by default, the model tokenizer when one is loaded."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any, Protocol, get_args

from harness_service.context.messages import ChatMessage, Role, render_message

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


def _ascii_class(char: str) -> bytes:
    """``a`` for a word character (``\\w``), a space for a space (``str.split``), ``.`` for a punctuation mark."""
    if _WORD_PIECE.match(char):
        return b"a"
    return b" " if char.isspace() else b"."


_ASCII_CLASSES = bytes.maketrans(bytes(range(128)), b"".join(_ascii_class(chr(code)) for code in range(128)))
_DOT_TO_SPACE = bytes.maketrans(b".", b" ")


@lru_cache(maxsize=512)
def _approx_count(text: str) -> int:
    """``len(_PIECE.findall(text))`` without a string per piece. ASCII text (most observations and prompts) is
    classified with ``bytes.translate`` and counted at C speed, several times faster than the regex; other text
    cuts its word pieces out with the regex, and what is left is spaces and punctuation (``str.split`` and ``\\s``
    agree on what a space is). Memoised: system prompts repeat across the episodes of a task family."""
    if text.isascii():
        classes = text.encode("ascii").translate(_ASCII_CLASSES)
        words = classes.translate(_DOT_TO_SPACE) + b" "
        # a word of n characters is ceil(n / 4) pieces: pad every word with three characters, count whole fours
        return classes.count(b".") + words.replace(b"a ", b"aaaa ").count(b"aaaa")
    punctuation, word_pieces = _WORD_PIECE.subn("", text)
    return word_pieces + sum(map(len, punctuation.split()))


class TokenizerCounter:
    """Exact counts from a Hugging Face tokenizer (anything with ``encode(text, add_special_tokens=...)``)."""

    additive = False

    def __init__(self, tokenizer: Any) -> None:
        self._tokenizer = tokenizer

    def count(self, text: str) -> int:
        return len(self._tokenizer.encode(text, add_special_tokens=False))


_ROLE_TOKENS = {role: _approx_count(render_message(ChatMessage(role=role, content=""))) for role in get_args(Role)}
"""Approximate tokens of a message's role line and end tag. No piece spans them (the role line ends in a newline, the
end tag starts with ``<``): a rendered message counts these plus its content's tokens."""
_SYSTEM_TOKENS: dict[ChatMessage, int] = {}
_SYSTEM_TOKENS_SIZE = 256


def message_tokens(counter: TokenCounter, message: ChatMessage) -> int:
    """Tokens of one rendered message (``render_message``). The approximate counter counts the content alone, so a
    content it counted before (the policy's output, a message the context builder counted) is a cache hit without
    rendering the message again. Its counts of system messages are remembered across episodes: one with every
    tool's schema (thousands of tokens) opens every episode of a task family."""
    if type(counter) is not ApproxTokenCounter:
        return counter.count(render_message(message))
    if message.role != "system":
        return _ROLE_TOKENS[message.role] + _approx_count(message.content)
    count = _SYSTEM_TOKENS.get(message)
    if count is None:
        if len(_SYSTEM_TOKENS) >= _SYSTEM_TOKENS_SIZE:
            _SYSTEM_TOKENS.clear()
        count = _SYSTEM_TOKENS[message] = _ROLE_TOKENS["system"] + _approx_count(message.content)
    return count
