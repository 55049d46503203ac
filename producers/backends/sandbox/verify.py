"""State-based verification: criteria over (initial state, final state, calls, final answer), never a reference plan.

State predicates are registered by name through entry points (``state.exists`` ...) so a task names the check and
its params; a predicate reads the episode through an :class:`EvidenceView` (both states and the calls). Call
criteria judge the trace alone (``calls.py``); records are picked with ``where`` matches (``where.py``). "Nothing
else changed" is a diff of the two states against the task's allowed path prefixes. An answer must commit to one
value (``check_answer``): listing numbers or options, hedging, contradicting itself or padding never passes, so a
policy cannot farm reward by saying everything (tests/unit/sandbox/test_verify_adversarial.py).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from bus_schemas.events.tasks import (
    AnswerCriterion,
    CompletionCriterion,
    NoCollateralCriterion,
    StateCriterion,
    TaskSpecified,
)
from producers.backends import plugins
from producers.backends.base import Evidence
from producers.backends.evidence import LeanEvidence
from producers.backends.sandbox.calls import Call, check_calls, check_grounded, read_calls
from producers.backends.sandbox.grounding import GROUNDED
from producers.backends.sandbox.where import matches, norm, where_matcher
from producers.backends.sandbox.world import diff

Check = tuple[bool, str]


class EvidenceView:
    """What criteria read of an episode: each part is built on its first read and kept for the next criterion.

    Lazy on purpose (not a dataclass of values): with lean evidence the initial state is fetched only when a
    criterion reads a state, so a task judged on its calls alone never touches the blob store.
    """

    def __init__(self, evidence: Evidence | LeanEvidence) -> None:
        self.evidence = evidence

    @cached_property
    def initial(self) -> Mapping[str, Any]:
        return _state(self.evidence, "initial_state")

    @cached_property
    def final(self) -> Mapping[str, Any]:
        return _state(self.evidence, "final_state")

    @cached_property
    def calls(self) -> tuple[Call, ...]:
        return read_calls(self.evidence.calls)

    @cached_property
    def changed_paths(self) -> list[str]:
        """``/app/collection/key`` of every changed record; lean evidence names them without reading a state."""
        if isinstance(self.evidence, LeanEvidence):
            return self.evidence.changed_paths
        return [change.path for change in diff(self.initial, self.final)]


Predicate = Callable[[EvidenceView, Mapping[str, Any]], Check]
"""Registered by name through the ``planner_flywheel.predicates`` entry points (``producers/backends/plugins.py``)."""


@dataclass(frozen=True)
class CriterionResult:
    id: str
    passed: bool
    detail: str


@dataclass(frozen=True)
class VerificationResult:
    outcome: bool
    criteria: list[CriterionResult]


def lookup(state: Mapping[str, Any], path: str) -> Any:
    """Resolve ``/app/collection[/key]``; None when any level is missing."""
    node: Any = state
    for part in path.strip("/").split("/"):
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return node


def state_exists(e: EvidenceView, p: Mapping[str, Any]) -> Check:
    """Some record of a table matches; with ``new`` it must not have matched in the initial state."""
    match = where_matcher(p.get("where", {}))
    before = lookup(e.initial, p["path"]) or {}
    table = lookup(e.final, p["path"]) or {}
    hits = [k for k, r in table.items() if match(r) and not (p.get("new") and match(before.get(k)))]
    return bool(hits), f"{len(hits)} matching record(s) in {p['path']}"


def state_absent(e: EvidenceView, p: Mapping[str, Any]) -> Check:
    """No record of a table matches (e.g. the email left the inbox, the event was deleted)."""
    match = where_matcher(p.get("where", {}))
    table = lookup(e.final, p["path"]) or {}
    hits = [k for k, r in table.items() if match(r)]
    return not hits, f"still matching: {hits[:5]}" if hits else "none left"


def state_equals(e: EvidenceView, p: Mapping[str, Any]) -> Check:
    """The value at a path equals ``value``, or the record there matches ``where``."""
    have = lookup(e.final, p["path"])
    ok = matches(have, p["where"]) if "where" in p else have == p["value"]
    return ok, f"{p['path']} = {have!r}"[:300]


MAX_ANSWER_CHARS = 1_000
"""A final answer is a reply to a user, not a dump: anything longer fails every answer criterion."""

_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?")  # not the 2 of "B2", not a date's "-03"
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}\b)")
_SLOT = re.compile(r"\b(?:final answer|answer)\s*(?:is|:|=)", re.IGNORECASE)
_NEGATION = r"\b(?:not|no|never|isn t|isnt|wasn t|won t|don t|nor)\s+(?:\S+\s+){0,2}"
_LIST_SEPARATORS = re.compile(r"[,;/|\n]|\s(?:or|and|vs|versus)\s")
_HEDGE = re.compile(r"\b(?:or|either|maybe|perhaps|possibly|probably)\b")


def _numbers(text: str) -> list[float]:
    return [float(x) for x in _NUMBER.findall(_THOUSANDS.sub("", text))]


def answer_slot(answer: str) -> str:
    """The text after the last ``answer:`` / ``answer is`` marker, or the whole answer when it has none."""
    marks = list(_SLOT.finditer(answer))
    return answer[marks[-1].end() :] if marks else answer


def _echoes(goal: str) -> list[str]:
    """Compound tokens of the goal with digits (dates, times: ``2026-03-04``, ``07:30``) that an answer may repeat."""
    tokens = (t.strip(".,;:!?()'\"") for t in goal.split())
    return sorted({t for t in tokens if re.search(r"\d[-:/]\d", t)}, key=len, reverse=True)


def answer_value(answer: str, goal: str = "") -> float | None:
    """The one number the answer gives (in its answer slot); None when it gives none or several.

    Dates and times the goal names are echoes, not answers, and are cut out first; a value repeated verbatim
    counts once ("21 °C, i.e. 21"). A bare number of the goal is not an echo: "6 or 7" commits to nothing.
    """
    slot = answer_slot(answer)
    for echo in _echoes(goal):
        slot = slot.replace(echo, " ")
    values = set(_numbers(slot))
    return values.pop() if len(values) == 1 else None


def _negated(text: str, phrase: str) -> bool:
    return re.search(_NEGATION + re.escape(phrase) + r"\b", text) is not None


def _rivals(expected: list[str], world: Mapping[str, Any] | None) -> set[str]:
    """Values of the world that stand where an expected answer stands (other cities, other names): the options.

    Found by field: every field holding an expected value somewhere in ``world`` contributes its other values.
    """
    if not world:
        return set()
    wanted = {norm(e) for e in expected}
    fields: set[str] = set()
    leaves: list[tuple[str, str]] = []

    def walk(node: Any, key: str) -> None:
        if isinstance(node, Mapping):
            for k, v in node.items():
                walk(v, str(k))
        elif isinstance(node, list):
            for v in node:
                walk(v, key)
        elif isinstance(node, str):
            value = norm(node)
            leaves.append((key, value))
            if value in wanted:
                fields.add(key)

    walk(world, "")
    return {v for k, v in leaves if k in fields and v and v not in wanted}


def _goal_options(goal: str) -> set[str]:
    """Options the goal itself offers: quoted phrases ('transit') and parenthesised alternatives (yes or no)."""
    quoted = re.findall(r"(?<!\w)['\"]([^'\"]{1,60})['\"](?!\w)", goal)
    alternatives = [
        a for group in re.findall(r"\(([^()]{1,80})\)", goal) if " or " in group for a in group.split(" or ")
    ]
    return {o for o in (norm(x) for x in [*quoted, *alternatives]) if o}


def _enumerates(answer: str, wanted: set[str]) -> bool:
    """The answer is a list of options with an expected one among them ("Lisbon, Porto or Faro")."""
    items = [i for i in (norm(x) for x in _LIST_SEPARATORS.split(f" {answer.lower()} ")) if i]
    return len(items) > 1 and any(i in wanted for i in items)


def _contains(c: AnswerCriterion, answer: str, goal: str, world: Mapping[str, Any] | None) -> Check:
    """An expected phrase occurs, is not negated, is not one item of a list, and no rival option is named."""
    got = f" {norm(answer)} "
    wanted = {norm(e) for e in c.expected}
    hits = [w for w in wanted if w and f" {w} " in got]
    if not hits:
        return False, "no expected phrase in the answer"
    if any(_negated(got, w) for w in hits):
        return False, "the answer negates the expected phrase"
    if _enumerates(answer, wanted):
        return False, "the answer lists options instead of choosing one"
    if _HEDGE.search(got):
        return False, "the answer hedges (or, maybe, ...) instead of committing"
    rest = got
    for w in hits:
        rest = rest.replace(f" {w} ", " ")
    rivals = (_rivals(c.expected, world) | _goal_options(goal)) - wanted
    named = sorted(r for r in rivals if f" {r} " in rest)
    if named:
        return False, f"the answer also names {named[:3]}"
    return True, "expected phrase found, no rival named"


def check_answer(c: AnswerCriterion, answer: str, goal: str = "", world: Mapping[str, Any] | None = None) -> Check:
    """Judge the final answer; ``goal`` (numbers it names are echoes) and ``world`` (rival options) harden it.

    One answer must commit to one value: a numeric answer is the single number of its answer slot (or its
    only number once dates and times of the goal are set aside), ``contains`` fails on a list of options, a negation
    or a rival named beside the expected phrase, and an over-long answer fails every match.
    """
    if len(answer) > MAX_ANSWER_CHARS:
        return False, f"answer has {len(answer)} characters; the limit is {MAX_ANSWER_CHARS}"
    if c.match == "exact":
        ok, why = answer.strip() in c.expected, "exact"
    elif c.match == "normalized":
        ok, why = norm(answer) in {norm(e) for e in c.expected}, "normalized"
    elif c.match == "contains":
        ok, why = _contains(c, answer, goal, world)
    else:
        value, tol = answer_value(answer, goal), c.tolerance or 0.0
        ok = value is not None and any(abs(value - float(e)) <= tol for e in c.expected)
        ok = ok and not _negated(norm(answer), norm(_format(value)))
        why = "no single number" if value is None else f"value {_format(value)}"
    return ok, f"answer {answer[:80]!r} vs {c.expected[:3]}: {why}"


def _format(value: float | None) -> str:
    return "" if value is None else (str(int(value)) if value == int(value) else str(value))


def check_collateral(c: NoCollateralCriterion, changed: list[str]) -> Check:
    """Every changed path (``EvidenceView.changed_paths``) lies under an allowed prefix."""
    stray = [p for p in changed if not any(p == a or p.startswith(a.rstrip("/") + "/") for a in c.allowed_paths)]
    return not stray, f"unexpected changes: {stray[:5]}" if stray else "no collateral changes"


def _state(evidence: Evidence | LeanEvidence, which: str) -> Mapping[str, Any]:
    state = getattr(evidence, which)
    if not isinstance(state, Mapping):
        raise TypeError(f"{evidence.backend} evidence carries no JSON object state")
    return state


def _check(c: CompletionCriterion, view: EvidenceView, goal: str, final_answer: str) -> Check:
    if isinstance(c, StateCriterion):
        try:
            fn = plugins.predicate(c.predicate)
        except plugins.PluginError as exc:  # a broken plugin fails the criteria that use it, nothing else
            return False, str(exc)
        return fn(view, c.params) if fn else (False, f"unknown predicate {c.predicate}")
    if isinstance(c, AnswerCriterion):
        return check_answer(c, final_answer, goal, view.initial if c.match == "contains" else None)
    if isinstance(c, NoCollateralCriterion):
        return check_collateral(c, view.changed_paths)
    return check_calls(c, view.calls)


def verify(task: TaskSpecified, evidence: Evidence | LeanEvidence, final_answer: str = "") -> VerificationResult:
    """Judge an episode; the outcome is true only when every criterion passes and no call guessed an id.

    A state is read only when a criterion needs it: with lean evidence a no-collateral check reads the delta
    and a call criterion the trace, so the initial state is fetched (once per task instance) only for state and
    answer criteria. A criterion the verifier cannot parse (an unknown ``where`` operator) fails with the reason.
    A task without criteria raises ``TypeError`` (the verifier's "unjudgeable": an ``error`` verdict).
    """
    if not task.criteria:  # all() of nothing is True: a task without checks must not pass for doing nothing
        raise TypeError(f"task {task.task_id} has no criteria, and the built-in judge judges only by criteria")
    view = EvidenceView(evidence)
    if not isinstance(evidence, LeanEvidence):  # full states: a wrong shape is unjudgeable, whatever the criteria
        _state(evidence, "initial_state"), _state(evidence, "final_state")
    results = []
    for c in task.criteria:
        try:
            passed, detail = _check(c, view, task.goal, final_answer)
        except ValueError as exc:
            passed, detail = False, f"invalid criterion: {exc}"
        results.append(CriterionResult(c.id, passed, detail))
    grounded, detail = check_grounded(view.calls)
    if not grounded:
        results.append(CriterionResult(GROUNDED, False, detail))
    return VerificationResult(all(r.passed for r in results), results)
