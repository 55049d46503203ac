"""Picks the tools a step shows: BM25 of the goal over tool names and descriptions (SQLite FTS5), and the procedure
prior's successors of the last call (a frequency table, or ranked for the goal by ``goal_successors``)."""

from __future__ import annotations

import math
import re
import sqlite3
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from fnmatch import fnmatchcase

from harness_service.config import CompactContext, ProcedurePrior
from harness_service.revisions import MAX_SUCCESSORS
from harness_service.skills.skill import Skill
from producers.backends.base import ToolSpec

_WORD = re.compile(r"\w+", re.UNICODE)
MIN_CUE = 3
"""A goal word becomes a cue of a tool once that many of the tool's counted calls had it in their goal."""
_CUE_SMOOTHING = 0.1
"""Added to a cue's count (and twice to the calls) so a word a tool's goals never held costs, but not infinitely."""


def _words(text: str) -> str:
    """Names like ``contacts.search_contacts`` become searchable words."""
    return " ".join(_WORD.findall(text.replace("_", " ").lower()))


def select_tools(goal: str, tools: Sequence[ToolSpec], limit: int) -> list[str]:
    """The names of the ``limit`` best-matching tools, best first; ties broken by name. Deterministic."""
    words = sorted(set(_words(goal).split()))
    if not words or len(tools) <= limit:
        return sorted(t.name for t in tools)[:limit]
    with sqlite3.connect(":memory:") as db:
        db.execute("CREATE VIRTUAL TABLE tool USING fts5(name UNINDEXED, words, tokenize='porter unicode61')")
        db.executemany(
            "INSERT INTO tool VALUES (?, ?)", [(t.name, f"{_words(t.name)} {_words(t.description)}") for t in tools]
        )
        match = " OR ".join(f'"{w}"' for w in words)
        sql = "SELECT name FROM tool WHERE tool MATCH ? ORDER BY bm25(tool), name LIMIT ?"
        return [row[0] for row in db.execute(sql, (match, limit))]


def step_tools(
    tools: Sequence[ToolSpec],
    loaded: Sequence[Skill],
    called: Sequence[str],
    goal_matches: Sequence[str],
    limit: int,
    successors: Mapping[str, Sequence[str]] | None = None,
) -> list[ToolSpec]:
    """The tools one step of a compact context shows, at most ``limit``: the tools that followed the last call in
    solutions first (``successors`` of it, or of ``""`` before any call), then the loaded skills' tools, the tools
    already called (newest first), then ``goal_matches`` (``select_tools`` of the goal). Deterministic."""
    by_name = {t.name: t for t in tools}
    names: list[str] = [n for n in (successors or {}).get(called[-1] if called else "", ()) if n in by_name]
    for skill in loaded:
        names += sorted(n for n in by_name if any(fnmatchcase(n, pattern) for pattern in skill.tools))
    names += [n for n in reversed(called) if n in by_name]
    names += goal_matches
    chosen = list(dict.fromkeys(names))[:limit]
    return [by_name[n] for n in chosen]


def _transitions(calls: Sequence[str]) -> Iterator[tuple[str, str]]:
    """(the call before, or ``""`` at the start; the call) for each call of a solution, a repeated call left out (it
    is not its own successor: the called tools are shown anyway)."""
    return ((before, call) for before, call in zip(("", *calls), calls, strict=False) if before != call)


def successor_table(procedures: Iterable[Sequence[str]]) -> dict[str, tuple[str, ...]]:
    """Each call (``""``: the start) -> the tools that followed it in ``procedures``, most frequent first (ties by
    name), at most ``MAX_SUCCESSORS``; a repeated call is not its own successor (the called tools are shown)."""
    follows: defaultdict[str, Counter[str]] = defaultdict(Counter)
    for calls in procedures:
        for before, call in _transitions(calls):
            follows[before][call] += 1
    return {
        before: tuple(sorted(counts, key=lambda name: (-counts[name], name))[:MAX_SUCCESSORS])
        for before, counts in sorted(follows.items())
    }


def fit_procedure(solutions: Iterable[tuple[str, Sequence[str]]], *, min_cue: int = MIN_CUE) -> ProcedurePrior:
    """The prior of ``solutions`` (each a goal and the tools its solution called, in order): which tool followed
    which (``_transitions``, as ``successor_table`` counts them) and, for each call counted, the
    words of its goal. Deterministic: sorted keys."""
    follows: defaultdict[str, Counter[str]] = defaultdict(Counter)
    cues: defaultdict[str, Counter[str]] = defaultdict(Counter)
    for goal, calls in solutions:
        words = set(_words(goal).split())
        for before, call in _transitions(calls):
            follows[before][call] += 1
            cues[call].update(words)
    return ProcedurePrior(
        follows={before: dict(sorted(after.items())) for before, after in sorted(follows.items())},
        cues={
            tool: {word: n for word, n in sorted(counts.items()) if n >= min_cue}
            for tool, counts in sorted(cues.items())
        },
    )


def goal_successors(prior: ProcedurePrior, goal: str) -> dict[str, tuple[str, ...]]:
    """Each call of ``prior`` -> the ``prior.shown`` tools most likely to follow it for ``goal``: scored by
    ``log(times it followed) + sum over the goal's known words of log P(word in the goal | the tool is called)``
    (naive Bayes; a word no tool's goals held is no evidence), ties by name."""
    calls: Counter[str] = Counter()
    for after in prior.follows.values():
        calls.update(after)
    known = {word for counts in prior.cues.values() for word in counts}
    words = sorted(set(_words(goal).split()) & known)

    def score(before: str, tool: str) -> float:
        """Summed exactly (``fsum``): a plain sum's rounding follows the order of its terms, and two tools whose
        scores are equal must tie in every process (a set's order changes with the hash seed), or a re-rendered
        context differs from the recorded one."""
        cues = prior.cues.get(tool, {})
        terms = [math.log((cues.get(w, 0) + _CUE_SMOOTHING) / (calls[tool] + 2 * _CUE_SMOOTHING)) for w in words]
        return math.fsum([math.log(prior.follows[before][tool]), *terms])

    return {
        before: tuple(sorted(after, key=lambda tool: (-score(before, tool), tool))[: prior.shown])
        for before, after in prior.follows.items()
    }


def episode_successors(compact: CompactContext, goal: str) -> dict[str, tuple[str, ...]]:
    """The successor table one episode's steps use: ``compact.procedure`` ranked for ``goal``, with the entries of
    ``compact.tool_successors`` (a reviser's edits) in place of its own."""
    ranked = goal_successors(compact.procedure, goal) if compact.procedure is not None else {}
    return {**ranked, **compact.tool_successors}
