"""Criteria over the call trace: which tools the policy called, with which arguments, in which order, how often.

Failed calls (the environment answered with an error): what a criterion asks to be *done* (``call_required``,
``call_any``, ``call_order``) counts only calls that succeeded, since a refused call changed nothing; what it bounds
(``call_forbidden``, ``max_calls``) counts every attempt, since a refused call was still the policy's choice and
still spent a step. Arguments are matched with the ``where`` operators of :mod:`.where`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bus_schemas.events.tasks import (
    CallAnyCriterion,
    CallCriterion,
    CallForbiddenCriterion,
    CallOrderCriterion,
    CallRequiredCriterion,
    CallStep,
)
from producers.backends.sandbox.where import where_matcher

Check = tuple[bool, str]


@dataclass(frozen=True)
class Call:
    """One call of the trace as criteria see it, whatever backend recorded it.

    ``unseen_ids``: its id arguments the policy was never shown (the sandbox records them; other backends do not).
    """

    tool: str
    args: Mapping[str, Any]
    ok: bool
    unseen_ids: tuple[str, ...] = ()


def read_call(record: Mapping[str, Any]) -> Call:
    """A call record of any backend: the sandbox writes ``name, args, ok, error``, the device ``tool, args, ok``,
    the LLM simulator ``tool, args, observation`` (failed when the observation carries an error).

    TypeError when the record names no tool: the evidence has the wrong shape and the episode is unjudgeable.
    """
    tool = record.get("name", record.get("tool"))
    args = record.get("args") or {}
    if not isinstance(tool, str) or not isinstance(args, Mapping):
        raise TypeError(f"a call record needs a tool name and an arguments object, got {dict(record)!r}"[:300])
    if "ok" in record:
        ok = bool(record["ok"])
    else:
        observation = record.get("observation")
        ok = not (isinstance(observation, Mapping) and observation.get("error"))
    unseen = record.get("unseen_ids") or ()
    return Call(tool, args, ok, tuple(str(i) for i in unseen) if isinstance(unseen, list) else ())


def read_calls(records: Sequence[Mapping[str, Any]]) -> tuple[Call, ...]:
    return tuple(read_call(r) for r in records)


def check_calls(c: CallCriterion, calls: Sequence[Call]) -> Check:
    """Judge one call criterion on the trace; ValueError when its ``where`` cannot be parsed."""
    if isinstance(c, CallRequiredCriterion):
        return _required(c, calls)
    if isinstance(c, CallAnyCriterion):
        return _any(c, calls)
    if isinstance(c, CallForbiddenCriterion):
        return _forbidden(c, calls)
    if isinstance(c, CallOrderCriterion):
        return _order(c, calls)
    count = sum(1 for call in calls if c.tool is None or call.tool == c.tool)
    return count <= c.limit, f"{count} call(s){f' of {c.tool}' if c.tool else ''}; at most {c.limit} allowed"


def check_grounded(calls: Sequence[Call]) -> Check:
    """No successful call rests on an id the policy was never shown (a refused one changed and showed nothing)."""
    guessed = [(i, call) for i, call in enumerate(calls) if call.ok and call.unseen_ids]
    if not guessed:
        return True, "every id a call used was shown first"
    shown = "; ".join(f"{', '.join(c.unseen_ids)} in {c.tool} at call {i}" for i, c in guessed[:3])
    return False, f"used ids it was never shown: {shown}"


def _required(c: CallRequiredCriterion, calls: Sequence[Call]) -> Check:
    match = where_matcher(c.where)
    hits = sum(1 for call in calls if call.ok and call.tool == c.tool and match(call.args))
    tried = sum(1 for call in calls if call.tool == c.tool)
    return hits >= c.min_count, (
        f"{hits} successful matching {c.tool} call(s) of {tried} tried; {c.min_count} required"
    )


def _any(c: CallAnyCriterion, calls: Sequence[Call]) -> Check:
    options = [(step.tool, where_matcher(step.where)) for step in c.options]
    hits = sum(1 for call in calls if call.ok and any(call.tool == t and m(call.args) for t, m in options))
    tools = " or ".join(dict.fromkeys(step.tool for step in c.options))
    tried = sum(1 for call in calls if any(call.tool == t for t, _ in options))
    return hits >= c.min_count, f"{hits} successful matching {tools} call(s) of {tried} tried; {c.min_count} required"


def _forbidden(c: CallForbiddenCriterion, calls: Sequence[Call]) -> Check:
    match = where_matcher(c.where)
    at = [i for i, call in enumerate(calls) if call.tool == c.tool and match(call.args)]
    return not at, f"forbidden {c.tool} call(s) at step(s) {at[:5]}" if at else f"no forbidden {c.tool} call"


def _order(c: CallOrderCriterion, calls: Sequence[Call]) -> Check:
    """Greedy: taking each step at its earliest matching call finds the order whenever it exists."""
    steps = [CallStep(tool=s) if isinstance(s, str) else s for s in c.steps]
    matchers = [where_matcher(s.where) for s in steps]
    done = 0
    for call in calls:
        if done < len(steps) and call.ok and call.tool == steps[done].tool and matchers[done](call.args):
            done += 1
    if done == len(steps):
        return True, f"all {done} steps in order"
    return False, f"{done} of {len(steps)} steps in order; missing {steps[done].tool} after them"
