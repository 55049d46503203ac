"""Consolidation: merge exact and near-duplicate memories by rules, optionally letting a model write the merged text."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from harness_service.memory.records import MemoryRecord
from harness_service.memory.store import MemoryStore

_WORD = re.compile(r"\w+", re.UNICODE)


class MemoryMerger(Protocol):
    """Model-assisted merge: one text that keeps every fact of a group of similar memories."""

    def merge(self, contents: Sequence[str]) -> str: ...


@dataclass(frozen=True)
class ConsolidationReport:
    """What a consolidation pass did: groups merged and rows removed."""

    groups_merged: int
    removed: int


def normalise(text: str) -> str:
    """Lower-case words joined by single spaces: exact duplicates share this form."""
    return " ".join(_WORD.findall(text.lower()))


def similarity(a: str, b: str) -> float:
    """Jaccard similarity of the word sets of two normalised texts."""
    left, right = set(a.split()), set(b.split())
    if not left and not right:
        return 1.0
    return len(left & right) / len(left | right)


def group_duplicates(records: Sequence[MemoryRecord], threshold: float) -> list[list[MemoryRecord]]:
    """Groups (in insertion order) of records whose normalised text matches the group's first within ``threshold``."""
    groups: list[tuple[str, list[MemoryRecord]]] = []
    for record in records:
        norm = normalise(record.content)
        for head, members in groups:
            if similarity(head, norm) >= threshold:
                members.append(record)
                break
        else:
            groups.append((norm, [record]))
    return [members for _, members in groups]


def consolidate(store: MemoryStore, threshold: float = 0.85, merger: MemoryMerger | None = None) -> ConsolidationReport:
    """Keep one memory per duplicate group, in place of the oldest; tags are united.

    The kept text is the longest member (ties: the oldest), or the merger's text when a model is configured.
    """
    merged = removed = 0
    for group in group_duplicates(store.all(), threshold):
        if len(group) < 2:
            continue
        keeper = group[0]
        longest = max(group, key=lambda r: (len(r.content), -r.id))
        content = merger.merge([r.content for r in group]) if merger is not None else longest.content
        tags = sorted({tag for r in group for tag in r.tags})
        store.replace(keeper.id, content, tags)
        store.delete(r.id for r in group[1:])
        merged += 1
        removed += len(group) - 1
    return ConsolidationReport(groups_merged=merged, removed=removed)
