"""State-based verification: criteria over (initial state, final state, calls, final answer), never a reference plan.

State predicates are registered by name (``state.exists`` ...) so a task names the check and its params;
"nothing else changed" is a diff of the two states against the task's allowed path prefixes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from bus_schemas.events.tasks import AnswerCriterion, NoCollateralCriterion, StateCriterion, TaskSpecified
from producers.backends.base import Evidence
from producers.backends.sandbox.world import diff

Check = tuple[bool, str]
Predicate = Callable[[Mapping[str, Any], Mapping[str, Any], Mapping[str, Any]], Check]
PREDICATES: dict[str, Predicate] = {}


@dataclass(frozen=True)
class CriterionResult:
    id: str
    passed: bool
    detail: str


@dataclass(frozen=True)
class VerificationResult:
    outcome: bool
    criteria: list[CriterionResult]


def predicate(name: str) -> Callable[[Predicate], Predicate]:
    def register(fn: Predicate) -> Predicate:
        PREDICATES[name] = fn
        return fn

    return register


def lookup(state: Mapping[str, Any], path: str) -> Any:
    """Resolve ``/app/collection[/key]``; None when any level is missing."""
    node: Any = state
    for part in path.strip("/").split("/"):
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return node


def _norm(value: Any) -> str:
    return re.sub(r"[^a-z0-9.]+", " ", str(value).lower()).strip()


def _match_one(record: Any, key: str, want: Any) -> bool:
    field, _, op = key.partition("__")
    if not isinstance(record, Mapping) or field not in record:
        return False
    have = record[field]
    if op == "":
        return bool(have == want)
    if op == "contains":
        return _norm(want) in _norm(have)
    if op == "has":
        return want in have
    if op == "approx":
        return abs(float(have) - float(want)) <= 0.011
    if op == "set":
        return sorted(have) == sorted(want)
    raise ValueError(f"unknown where operator {op!r}")


def matches(record: Any, where: Mapping[str, Any]) -> bool:
    """``where`` maps ``field`` (equality) or ``field__contains|has|approx|set`` to the wanted value."""
    return all(_match_one(record, key, want) for key, want in where.items())


@predicate("state.exists")
def _exists(initial: Mapping[str, Any], final: Mapping[str, Any], p: Mapping[str, Any]) -> Check:
    """Some record of a table matches; with ``new`` it must not have matched in the initial state."""
    before = lookup(initial, p["path"]) or {}
    table = lookup(final, p["path"]) or {}
    where = p.get("where", {})
    hits = [k for k, r in table.items() if matches(r, where) and not (p.get("new") and matches(before.get(k), where))]
    return bool(hits), f"{len(hits)} matching record(s) in {p['path']}"


@predicate("state.absent")
def _absent(initial: Mapping[str, Any], final: Mapping[str, Any], p: Mapping[str, Any]) -> Check:
    """No record of a table matches (e.g. the email left the inbox, the event was deleted)."""
    table = lookup(final, p["path"]) or {}
    hits = [k for k, r in table.items() if matches(r, p.get("where", {}))]
    return not hits, f"still matching: {hits[:5]}" if hits else "none left"


@predicate("state.equals")
def _equals(initial: Mapping[str, Any], final: Mapping[str, Any], p: Mapping[str, Any]) -> Check:
    """The value at a path equals ``value``, or the record there matches ``where``."""
    have = lookup(final, p["path"])
    ok = matches(have, p["where"]) if "where" in p else have == p["value"]
    return ok, f"{p['path']} = {have!r}"[:300]


def _numbers(text: str) -> list[float]:
    return [float(x) for x in re.findall(r"-?\d+(?:\.\d+)?", text.replace(",", ""))]


def check_answer(c: AnswerCriterion, answer: str) -> Check:
    got = _norm(answer)
    if c.match == "exact":
        ok = answer.strip() in c.expected
    elif c.match == "normalized":
        ok = got in {_norm(e) for e in c.expected}
    elif c.match == "contains":
        ok = any(_norm(e) in got for e in c.expected)
    else:
        tol = c.tolerance or 0.0
        ok = any(abs(n - float(e)) <= tol for n in _numbers(answer) for e in c.expected)
    return ok, f"answer {answer[:80]!r} vs {c.expected[:3]}"


def check_collateral(c: NoCollateralCriterion, initial: Mapping[str, Any], final: Mapping[str, Any]) -> Check:
    stray = [ch.path for ch in diff(initial, final) if not any(ch.path == a or ch.path.startswith(a.rstrip("/") + "/") for a in c.allowed_paths)]
    return not stray, f"unexpected changes: {stray[:5]}" if stray else "no collateral changes"


def verify(task: TaskSpecified, evidence: Evidence, final_answer: str = "") -> VerificationResult:
    """Judge an episode; the outcome is true only when every criterion passes."""
    initial, final = evidence.initial_state, evidence.final_state
    if not isinstance(initial, Mapping) or not isinstance(final, Mapping):
        raise TypeError(f"{evidence.backend} evidence carries no JSON object state")
    results = []
    for c in task.criteria:
        if isinstance(c, StateCriterion):
            fn = PREDICATES.get(c.predicate)
            passed, detail = fn(initial, final, c.params) if fn else (False, f"unknown predicate {c.predicate}")
        elif isinstance(c, AnswerCriterion):
            passed, detail = check_answer(c, final_answer)
        else:
            passed, detail = check_collateral(c, initial, final)
        results.append(CriterionResult(c.id, passed, detail))
    return VerificationResult(all(r.passed for r in results), results)
