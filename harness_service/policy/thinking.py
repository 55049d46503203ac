"""Splits a completion into its reasoning (``<think>...</think>``) and the rest, for thinking-token accounting."""

from __future__ import annotations

THINK_OPEN, THINK_CLOSE = "<think>", "</think>"


def thinking_part(text: str) -> str:
    """The text of the ``<think>`` block (an unclosed block runs to the end); empty when there is none."""
    start = text.find(THINK_OPEN)
    if start < 0:
        return ""
    end = text.find(THINK_CLOSE, start)
    return text[start + len(THINK_OPEN) : None if end < 0 else end]
