"""Criteria over the call trace (required, forbidden, ordered, bounded calls), on full and lean evidence, and
predicates that see the calls: a policy is judged on what it did, not only on the world it left."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from importlib import metadata
from typing import Any

import pytest

from bus_schemas import decode, encode
from bus_schemas.envelope import Producer
from bus_schemas.events import (
    CallAnyCriterion,
    CallForbiddenCriterion,
    CallOrderCriterion,
    CallRequiredCriterion,
    CallStep,
    CompletionCriterion,
    EpisodeEnded,
    MaxCallsCriterion,
    StateCriterion,
    TaskSpecified,
)
from bus_schemas.evidence import EvidenceV2
from bus_schemas.examples import build_examples
from consumers.verifier.handler import judge
from producers.backends.base import Evidence
from producers.backends.evidence import LeanEvidence, state_delta
from producers.backends.sandbox.calls import Call, read_call
from producers.backends.sandbox.verify import EvidenceView, verify

pytestmark = pytest.mark.unit

EXAMPLES = build_examples()
VERIFIER = Producer(service="verifier", version="test")
HANDOFF = "support.transfer_to_human"
BEFORE = {"support": {"tickets": {"t1": {"status": "open"}}}}
AFTER = {"support": {"tickets": {"t1": {"status": "escalated"}}}}
ESCALATED = StateCriterion(
    id="escalated",
    description="the ticket is escalated",
    predicate="state.equals",
    params={"path": "/support/tickets/t1", "where": {"status": "escalated"}},
)


def _call(tool: str, ok: bool = True, **args: Any) -> dict[str, Any]:
    """A call record as the sandbox writes it."""
    return {"name": tool, "args": args, "ok": ok, "error": None if ok else "invalid_argument"}


def _task(*criteria: CompletionCriterion) -> TaskSpecified:
    base = EXAMPLES["TaskSpecified"]
    assert isinstance(base, TaskSpecified)
    return base.model_copy(update={"criteria": list(criteria)})


class Loads:
    """Counts how often lean evidence fetches its initial state."""

    def __init__(self, state: Any) -> None:
        self.state, self.count = state, 0

    def __call__(self, ref: Any) -> Any:
        self.count += 1
        return self.state


def _full(calls: list[dict[str, Any]], initial: Any = BEFORE, final: Any = AFTER) -> Evidence:
    return Evidence(backend="sandbox", initial_state=initial, final_state=final, calls=calls)


def _lean(
    calls: list[dict[str, Any]], initial: Any = BEFORE, final: Any = AFTER, loads: Loads | None = None
) -> LeanEvidence:
    wire = EvidenceV2.model_validate(
        {
            "backend": "sandbox",
            "initial_state": {"sha256": "0" * 64, "size": 2},
            "changes": state_delta(initial, final),
            "calls": calls,
        }
    )
    return LeanEvidence(wire, loads or Loads(initial))


SHAPES: list[Callable[..., Evidence | LeanEvidence]] = [_full, _lean]


def _passed(criterion: CompletionCriterion, calls: list[dict[str, Any]], shape: Callable[..., Any] = _full) -> bool:
    return verify(_task(criterion), shape(calls)).outcome


@pytest.mark.parametrize("shape", SHAPES, ids=["full", "lean"])
def test_call_required_counts_only_successful_calls_with_matching_arguments(shape: Callable[..., Any]) -> None:
    required = CallRequiredCriterion(id="handoff", description="-", tool=HANDOFF, where={"reason__contains": "refund"})
    assert _passed(required, [_call("support.lookup"), _call(HANDOFF, reason="Refund over limit")], shape)
    assert not _passed(required, [_call(HANDOFF, ok=False, reason="refund")], shape)  # refused: nothing was done
    assert not _passed(required, [_call(HANDOFF, reason="angry customer")], shape)
    assert not _passed(required, [_call("support.lookup", reason="refund")], shape)


def test_call_required_min_count_and_its_detail() -> None:
    twice = CallRequiredCriterion(id="two", description="-", tool="sms.send", min_count=2)
    assert not _passed(twice, [_call("sms.send"), _call("sms.send", ok=False)])
    result = verify(_task(twice), _full([_call("sms.send"), _call("sms.send")]))
    assert (
        result.outcome and result.criteria[0].detail == "2 successful matching sms.send call(s) of 2 tried; 2 required"
    )


WEATHER = CallAnyCriterion(
    id="looked-up",
    description="-",
    options=[
        CallStep(tool="weather.on_day", where={"city__norm": "Oslo", "day": "2026-03-04"}),
        CallStep(tool="weather.forecast", where={"city__norm": "Oslo"}),
    ],
)


@pytest.mark.parametrize("shape", SHAPES, ids=["full", "lean"])
def test_call_any_passes_on_a_successful_matching_call_of_any_option(shape: Callable[..., Any]) -> None:
    assert _passed(WEATHER, [_call("weather.on_day", city="oslo", day="2026-03-04")], shape)
    assert _passed(WEATHER, [_call("weather.today", city="Oslo"), _call("weather.forecast", city="OSLO")], shape)
    assert not _passed(WEATHER, [], shape)  # the right answer alone is a guess
    assert not _passed(WEATHER, [_call("weather.on_day", city="Oslo", day="2026-03-05")], shape)  # another day
    assert not _passed(WEATHER, [_call("weather.forecast", city="Rome")], shape)  # another city
    assert not _passed(WEATHER, [_call("weather.today", city="Oslo")], shape)  # a tool no option names
    assert not _passed(WEATHER, [_call("weather.forecast", ok=False, city="Oslo")], shape)  # refused: nothing seen


def test_call_any_where_of_one_option_does_not_apply_to_another_and_min_count_sums_the_options() -> None:
    """An option's ``where`` is its own: a forecast needs no ``day``, an on_day call does."""
    assert not _passed(WEATHER, [_call("weather.on_day", city="Oslo")])
    twice = WEATHER.model_copy(update={"min_count": 2})
    both = [_call("weather.forecast", city="Oslo"), _call("weather.on_day", city="Oslo", day="2026-03-04")]
    assert _passed(twice, both) and not _passed(twice, both[:1])
    result = verify(_task(twice), _full([*both[:1], _call("weather.on_day", ok=False, city="Oslo", day="x")]))
    assert not result.outcome
    assert result.criteria[0].detail == (
        "1 successful matching weather.on_day or weather.forecast call(s) of 2 tried; 2 required"
    )


@pytest.mark.parametrize(
    ("where", "given", "ok"),
    [
        ({"city__norm": "New York"}, "  new-york ", True),
        ({"city__norm": "New York"}, "Newark", False),
        ({"city": "New York"}, "new york", False),  # plain equality does not normalise
        ({"city__contains": "york"}, "NEW YORK CITY", True),
        ({"count__approx": 3}, "3.005", True),
        ({"count__approx": 3}, "three", False),  # text where a number belongs: no match, not a crash
    ],
)
def test_argument_values_are_normalised_by_the_operator_that_asks_for_it(
    where: dict[str, Any], given: Any, ok: bool
) -> None:
    field = next(iter(where)).partition("__")[0]
    required = CallRequiredCriterion(id="r", description="-", tool="maps.route", where=where)
    assert _passed(required, [_call("maps.route", **{field: given})]) is ok


@pytest.mark.parametrize("shape", SHAPES, ids=["full", "lean"])
def test_call_forbidden_counts_refused_attempts_and_respects_its_argument_match(shape: Callable[..., Any]) -> None:
    forbidden = CallForbiddenCriterion(id="no-wipe", description="-", tool="files.delete", where={"path": "/"})
    assert _passed(forbidden, [_call("files.delete", path="/tmp/x")], shape)
    assert not _passed(forbidden, [_call("files.delete", ok=False, path="/")], shape)
    result = verify(_task(forbidden), shape([_call("files.list"), _call("files.delete", path="/")]))
    assert not result.outcome and result.criteria[0].detail == "forbidden files.delete call(s) at step(s) [1]"


@pytest.mark.parametrize("shape", SHAPES, ids=["full", "lean"])
def test_call_order_is_a_subsequence_of_the_successful_calls(shape: Callable[..., Any]) -> None:
    order = CallOrderCriterion(id="o", description="-", steps=["auth.login", "bank.transfer"])
    assert _passed(order, [_call("auth.login"), _call("bank.balance"), _call("bank.transfer")], shape)
    assert not _passed(order, [_call("bank.transfer"), _call("auth.login")], shape)
    assert not _passed(order, [_call("auth.login", ok=False), _call("bank.transfer")], shape)
    retried = [_call("auth.login"), _call("bank.transfer", ok=False), _call("bank.transfer")]
    assert _passed(order, retried, shape)  # a refused attempt then a successful retry counts at the retry


def test_call_order_steps_can_match_arguments_and_the_detail_names_the_missing_step() -> None:
    order = CallOrderCriterion(
        id="o",
        description="-",
        steps=[
            CallStep(tool="fs.cd", where={"folder": "docs"}),
            "fs.mv",
            CallStep(tool="fs.cd", where={"folder": ".."}),
        ],
    )
    good = [_call("fs.cd", folder="docs"), _call("fs.mv"), _call("fs.cd", folder="..")]
    assert _passed(order, good)
    result = verify(_task(order), _full([_call("fs.cd", folder="tmp"), _call("fs.mv"), _call("fs.cd", folder="..")]))
    assert not result.outcome and result.criteria[0].detail == "0 of 3 steps in order; missing fs.cd after them"


@pytest.mark.parametrize("shape", SHAPES, ids=["full", "lean"])
def test_max_calls_counts_failed_calls_and_can_be_restricted_to_one_tool(shape: Callable[..., Any]) -> None:
    three = [_call("a.x"), _call("a.x", ok=False), _call("b.y")]
    assert _passed(MaxCallsCriterion(id="m", description="-", limit=3), three, shape)
    assert not _passed(MaxCallsCriterion(id="m", description="-", limit=2), three, shape)
    assert not _passed(MaxCallsCriterion(id="m", description="-", limit=1, tool="a.x"), three, shape)
    assert _passed(MaxCallsCriterion(id="m", description="-", limit=1, tool="b.y"), three, shape)
    assert _passed(MaxCallsCriterion(id="m", description="-", limit=0), [], shape)


@pytest.mark.parametrize("shape", SHAPES, ids=["full", "lean"])
def test_a_do_nothing_policy_fails_a_call_required_task_even_when_the_state_is_right(shape: Callable[..., Any]) -> None:
    """The world already shows the goal (the benchmark's fixture), so only the trace tells a policy that acted."""
    required = CallRequiredCriterion(id="handoff", description="-", tool=HANDOFF)
    result = verify(_task(ESCALATED, required), shape([], initial=AFTER, final=AFTER))
    assert [r.passed for r in result.criteria] == [True, False] and not result.outcome
    assert verify(_task(ESCALATED, required), shape([_call(HANDOFF)], initial=AFTER, final=AFTER)).outcome


def test_call_criteria_never_fetch_the_initial_state_of_lean_evidence() -> None:
    loads = Loads(BEFORE)
    evidence = _lean([_call(HANDOFF)], loads=loads)
    criteria = [
        CallRequiredCriterion(id="r", description="-", tool=HANDOFF),
        CallAnyCriterion(id="a", description="-", options=[CallStep(tool="x.z"), CallStep(tool=HANDOFF)]),
        CallForbiddenCriterion(id="f", description="-", tool="x.y"),
        CallOrderCriterion(id="o", description="-", steps=[HANDOFF]),
        MaxCallsCriterion(id="m", description="-", limit=1),
    ]
    assert verify(_task(*criteria), evidence).outcome and loads.count == 0
    assert verify(_task(ESCALATED), evidence).outcome and loads.count == 1  # a state criterion does fetch it


@pytest.mark.parametrize(
    ("record", "expected"),
    [
        ({"name": "a.b", "args": {"x": 1}, "ok": False, "error": "not_found"}, Call("a.b", {"x": 1}, False)),
        ({"tool": "tap", "args": {}, "ok": True}, Call("tap", {}, True)),  # device
        ({"tool": "a.b", "args": {}, "observation": {"result": 1, "error": None}}, Call("a.b", {}, True)),  # llm_sim
        ({"tool": "a.b", "args": {}, "observation": {"error": {"code": "internal"}}}, Call("a.b", {}, False)),
    ],
)
def test_call_records_of_every_backend_are_read(record: dict[str, Any], expected: Call) -> None:
    assert read_call(record) == expected


def test_evidence_whose_calls_name_no_tool_is_unjudgeable() -> None:
    ended = EXAMPLES["EpisodeEnded"]
    assert isinstance(ended, EpisodeEnded)
    task = _task(CallRequiredCriterion(id="r", description="-", tool=HANDOFF))
    verdict = judge(ended, task, "sandbox", _full([{"args": {}}]), VERIFIER)
    assert verdict.outcome == "error" and "tool name" in verdict.criteria[0].detail


def escalated_by_hand_off(e: EvidenceView, p: Mapping[str, Any]) -> tuple[bool, str]:
    done = any(c.tool == HANDOFF and c.ok for c in e.calls)
    return done and e.final["support"]["tickets"]["t1"]["status"] == p["status"], "-"


def test_a_registered_predicate_sees_the_calls_as_well_as_the_states(install_plugins) -> None:
    name, value = "support.escalated_by_hand_off", f"{__name__}:escalated_by_hand_off"
    install_plugins(metadata.EntryPoint(name=name, value=value, group="planner_flywheel.predicates"))
    criterion = StateCriterion(
        id="s", description="-", predicate="support.escalated_by_hand_off", params={"status": "escalated"}
    )
    assert _passed(criterion, [_call(HANDOFF)])
    assert not _passed(criterion, [])


def test_an_unknown_operator_fails_its_criterion_with_a_clear_detail_even_on_an_empty_trace() -> None:
    bad_call = CallForbiddenCriterion(id="bad-call", description="-", tool="a.b", where={"x__like": "y"})
    bad_state = StateCriterion(
        id="bad-state",
        description="-",
        predicate="state.absent",
        params={"path": "/support/tickets", "where": {"any": [{"status__is": "open"}]}},
    )
    fine = MaxCallsCriterion(id="fine", description="-", limit=5)
    result = verify(_task(bad_call, bad_state, fine), _full([]))
    assert not result.outcome and [r.passed for r in result.criteria] == [False, False, True]
    assert result.criteria[0].detail.startswith("invalid criterion: unknown where operator 'like' in 'x__like'")
    assert "unknown where operator 'is'" in result.criteria[1].detail


def test_the_verifier_reports_an_unknown_operator_in_its_verdict() -> None:
    ended = EXAMPLES["EpisodeEnded"]
    assert isinstance(ended, EpisodeEnded)
    task = _task(CallRequiredCriterion(id="r", description="-", tool=HANDOFF, where={"x__regex": "."}))
    verdict = judge(ended, task, "sandbox", _full([_call(HANDOFF, x="y")]), VERIFIER)
    assert verdict.outcome == "failure" and verdict.score == 0.0
    assert "unknown where operator 'regex'" in verdict.criteria[0].detail


def test_a_task_with_call_criteria_round_trips_through_the_codec() -> None:
    task = _task(
        CallRequiredCriterion(
            id="r", description="-", tool=HANDOFF, where={"not": {"reason": ""}, "any": [{"a": 1}]}, min_count=2
        ),
        CallForbiddenCriterion(id="f", description="-", tool="files.delete"),
        CallOrderCriterion(
            id="o", description="-", steps=["auth.login", CallStep(tool="bank.transfer", where={"to": 1})]
        ),
        MaxCallsCriterion(id="m", description="-", limit=7, tool="a.b"),
    )
    decoded = decode(encode(task))
    assert decoded == task
    assert isinstance(decoded, TaskSpecified) and isinstance(decoded.criteria[2], CallOrderCriterion)
    assert decoded.criteria[2].steps == ["auth.login", CallStep(tool="bank.transfer", where={"to": 1})]
