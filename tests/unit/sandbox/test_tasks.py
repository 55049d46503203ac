"""The task suite: size and coverage, no split leakage, and every task sound (solvable, not trivially passed,
collateral-aware)."""

from __future__ import annotations

from collections import Counter
from types import SimpleNamespace
from typing import Any

import pytest

from bus_schemas.actions import Finish, ToolCall
from bus_schemas.events.tasks import AnswerCriterion, TaskSpecified
from producers.backends.base import Evidence
from producers.backends.sandbox.backend import SandboxBackend
from producers.backends.sandbox.catalog import TOOLS
from producers.backends.sandbox.skill_docs import SKILLS
from producers.backends.sandbox.verify import verify
from producers.tasks.runner import noop_policy, random_policy, run_episode
from producers.tasks.solver import reference_solver
from producers.tasks.suite import build_task_suite
from producers.tasks.template import Solver, call

pytestmark = pytest.mark.unit

SUITE = build_task_suite("test-run")
BY_ID = {t.task_id: t for t in SUITE}


@pytest.fixture(scope="module")
def backend() -> SandboxBackend:
    return SandboxBackend()


def passes(backend: SandboxBackend, task: TaskSpecified, policy: Any) -> bool:
    episode = run_episode(backend, task, policy)
    return verify(task, episode.evidence, episode.answer).outcome


def test_suite_covers_categories_difficulties_and_splits() -> None:
    assert len(SUITE) >= 600 and len(BY_ID) == len(SUITE)
    cells = Counter((t.category, t.difficulty, t.split) for t in SUITE)
    assert len(cells) == 4 * 3 * 3 and min(cells.values()) >= 4


def test_suite_is_deterministic() -> None:
    again = build_task_suite("other-run")
    assert [(t.task_id, t.goal, t.criteria, t.initial_conditions) for t in again] == [
        (t.task_id, t.goal, t.criteria, t.initial_conditions) for t in SUITE
    ]


CONSTANT_GOALS = {
    "mem.wake_alarm",
    "mem.ride_to_gym",
    "mem.workout_playlist",
    "sa.settle_requests",
}  # the instance lives in memories / world


def _instance(task: TaskSpecified) -> tuple[object, ...]:
    ic = task.initial_conditions
    varying = (ic.memories, ic.fixtures) if task.source.template_id in CONSTANT_GOALS else ()
    return (task.source.template_id, task.goal, *map(repr, varying))


def test_no_instance_or_world_leaks_from_dev_and_test_into_train() -> None:
    train = [t for t in SUITE if t.split == "train"]
    held = [t for t in SUITE if t.split != "train"]
    assert not {t.source.instance_key for t in held} & {t.source.instance_key for t in train}
    assert not {_instance(t) for t in held} & {_instance(t) for t in train}


def test_tasks_reference_real_tools_and_skills() -> None:
    for task in SUITE:
        assert set(task.tools) <= set(TOOLS) and set(task.skills) <= set(SKILLS), task.task_id
    for skill in SKILLS.values():
        assert set(skill.tools) <= set(TOOLS) and skill.when_to_use, skill.name


def test_memory_facts_are_not_in_the_world() -> None:
    for task in (t for t in SUITE if t.category == "memory"):
        assert task.initial_conditions.memories, task.task_id


def test_every_task_is_solvable_and_not_passed_by_doing_nothing_or_random_calls(backend: SandboxBackend) -> None:
    wrong = [
        (t.task_id, name)
        for t in SUITE
        for name, policy, expected in (
            ("reference", reference_solver, True),
            ("noop", noop_policy, False),
            ("random", random_policy, False),
        )
        if passes(backend, t, policy) != expected
    ]
    assert not wrong


def test_an_extra_unrelated_write_fails_every_task(backend: SandboxBackend) -> None:
    still_passing = []
    for task in SUITE:
        episode = run_episode(backend, task, reference_solver)
        final = {**episode.evidence.final_state, "notes": {**episode.evidence.final_state["notes"]}}  # type: ignore[dict-item]
        final["notes"]["notes"] = {**final["notes"]["notes"], "note_999": {"id": "note_999", "title": "stray"}}
        tampered = episode.evidence.model_copy(update={"final_state": final})
        if verify(task, tampered, episode.answer).outcome:
            still_passing.append(task.task_id)
    assert not still_passing


def _first(template_id: str) -> TaskSpecified:
    return next(t for t in SUITE if t.source.template_id == template_id)


def test_a_different_valid_plan_passes_too(backend: SandboxBackend) -> None:
    """The verifier judges the end state, not the route: other orders and other tools must pass."""
    ride = _first("tu.ride_to_contact")
    person = ride.goal.split(" ride from home to ")[1].removesuffix("'s place.")

    def ride_plan(task: TaskSpecified) -> Solver:
        yield call("settings.grant_permission", permission="rides.location")  # grant up front instead of recovering
        spot = yield call("maps.search_places", query=f"{person} (home)")  # the place search instead of geocoding
        product = task.goal.split(" ")[3]
        quote = yield call("rides.estimate", pickup_id="pl_1", dropoff_id=spot.result[0]["id"])
        assert quote.ok
        ride_obs = yield call("rides.request_ride", pickup_id="pl_1", dropoff_id=spot.result[0]["id"], product=product)
        yield call("rides.confirm_pickup", id=ride_obs.result["id"])
        yield Finish(answer="ok")

    focus = _first("sk.focus_session")
    minutes = int(focus.goal.split("-minute")[0].split()[-1])

    def focus_plan(task: TaskSpecified) -> Solver:
        yield ToolCall(name="clock.start_timer", args={"minutes": minutes, "label": "Deep focus"})
        yield ToolCall(name="settings.set_ring_volume", args={"level": 0})
        yield ToolCall(name="settings.set_do_not_disturb", args={"on": False})
        yield ToolCall(name="settings.set_do_not_disturb", args={"on": True})
        yield Finish(answer="")

    assert passes(backend, ride, ride_plan)
    assert passes(backend, focus, focus_plan)


def test_a_wrong_plan_fails(backend: SandboxBackend) -> None:
    task = _first("tu.pay_contact")

    def overpay(t: TaskSpecified) -> Solver:
        """The reference plan, except it sends one dollar too much."""
        plan = reference_solver(t)
        action = next(plan)
        while True:
            if isinstance(action, ToolCall) and action.name == "wallet.send_money":
                action = ToolCall(name=action.name, args={**action.args, "amount": float(action.args["amount"]) + 1})  # type: ignore[arg-type]
            obs = yield action
            try:
                action = plan.send(obs)
            except StopIteration:
                return

    assert not passes(backend, task, overpay)


def test_verdicts_survive_the_wire(backend: SandboxBackend) -> None:
    """The verifier service gets evidence as JSON: same verdicts after a round trip, for every template."""
    for task in {t.source.template_id: t for t in SUITE}.values():
        episode = run_episode(backend, task, reference_solver)
        wired = Evidence.model_validate_json(episode.evidence.model_dump_json())
        assert wired.state_hash == episode.evidence.state_hash
        assert verify(task, wired, episode.answer).outcome, task.task_id


GUESSABLE_TEMPLATES = (
    "tu.unread_from",  # "0" or "1": a constant guess passed 14 of 26 instances
    "tu.weather_high",
    "sk.trip_prep",  # "yes" or "no", after the bookings
    "sa.warmest_city",
    "sa.closest_place",
    "sa.ride_or_transit",
)


def _expected(task: TaskSpecified) -> str:
    return next(c.expected[0] for c in task.criteria if isinstance(c, AnswerCriterion))


def _destination(task: TaskSpecified) -> str:
    return task.goal.split(" from home to ")[1].split(". If public transit")[0]


def _book_ride(task: TaskSpecified) -> Solver:
    spot = yield call("maps.search_places", query=_destination(task))
    yield call("settings.grant_permission", permission="rides.location")
    ride = yield call("rides.request_ride", pickup_id="pl_1", dropoff_id=spot.result[0]["id"], product="economy")
    yield call("rides.confirm_pickup", id=ride.result["id"])


def _without_weather(task: TaskSpecified) -> Solver:
    """The reference plan of ``sk.trip_prep`` with its rain check left out (the right answer is handed back)."""
    plan = reference_solver(task)
    action = next(plan)
    while True:
        if isinstance(action, ToolCall) and action.name == "weather.will_it_rain":
            action = plan.send(SimpleNamespace(result=_expected(task) == "yes"))
            continue
        obs = yield action
        try:
            action = plan.send(obs)
        except StopIteration:
            return


def _guess(task: TaskSpecified) -> Solver:
    """The right answer with no look-up behind it (what a lucky guess looks like). The rest of the task is done:
    a ride is booked without checking transit first, a trip prepared without checking the weather."""
    if task.source.template_id == "sk.trip_prep":
        yield from _without_weather(task)
        return
    if _expected(task) == "ride":
        yield from _book_ride(task)
    yield Finish(answer=_expected(task))


@pytest.mark.parametrize("template_id", GUESSABLE_TEMPLATES)
def test_a_right_answer_without_the_look_ups_behind_it_fails(backend: SandboxBackend, template_id: str) -> None:
    """An answer must rest on the look-ups that show it: otherwise a blind guess among n options passes 1 time in n."""
    tasks = [t for t in SUITE if t.source.template_id == template_id]
    assert len(tasks) >= 10
    if template_id == "sa.ride_or_transit":
        assert {_expected(t) for t in tasks} == {"ride", "transit"}
    assert all(passes(backend, t, reference_solver) for t in tasks)
    assert not [t.task_id for t in tasks if passes(backend, t, _guess)]


def test_every_route_to_the_evidence_passes_and_a_forecast_too_short_to_reach_the_day_does_not(
    backend: SandboxBackend,
) -> None:
    """``weather.forecast`` instead of ``weather.on_day``; ``maps.compare_modes`` (either direction) instead of
    ``maps.directions``; the unread list instead of the conversation: the verifier asks that the evidence was seen,
    not which tool showed it."""
    warmest = [t for t in SUITE if t.source.template_id == "sa.warmest_city"]
    far = next(t for t in warmest if "2026-03-05" in t.goal)  # day 4 of the forecast: its default 3 days miss it

    def by_forecast(days: int | None) -> Any:
        def plan(task: TaskSpecified) -> Solver:
            cities = task.goal.removeprefix("Which of ").split(" will be warmest")[0].split(", ")
            day = task.goal.split(" on ")[1].split("?")[0]
            highs = {}
            for city in cities:
                obs = yield call("weather.forecast", city=city, **({} if days is None else {"days": days}))
                highs[city] = next((f["high_c"] for f in obs.result if f["date"] == day), -99)
            yield Finish(answer=max(highs, key=highs.__getitem__))

        return plan

    def by_compare_modes(task: TaskSpecified) -> Solver:
        ride_or_transit = task.source.template_id == "sa.ride_or_transit"
        if ride_or_transit:
            names = [_destination(task)]
        else:
            names = task.goal.split("my home: ")[1].removesuffix("? Answer with its name.").split(", ")
        modes = {}
        for name in names:
            spot = yield call("maps.search_places", query=name)
            found = yield call("maps.compare_modes", origin_id=spot.result[0]["id"], destination_id="pl_1")
            modes[name] = {r["mode"]: r for r in found.result}
        if not ride_or_transit:
            yield Finish(answer=min(modes, key=lambda n: modes[n]["driving"]["distance_km"]))
        elif modes[names[0]]["transit"]["duration_min"] <= 40:
            yield Finish(answer="transit")
        else:
            yield from _book_ride(task)
            yield Finish(answer="ride")

    assert all(passes(backend, t, by_forecast(7)) for t in warmest)
    assert not passes(backend, far, by_forecast(None)) and passes(backend, far, by_forecast(4))
    assert not passes(backend, far, by_forecast(3))
    near = next(t for t in warmest if "2026-03-03" in t.goal)
    assert passes(backend, near, by_forecast(None)) and not passes(backend, near, by_forecast(1))

    def by_unread_list(task: TaskSpecified) -> Solver:
        name = task.goal.removeprefix("How many unread messages do I have from ").removesuffix(
            "? Answer with a number."
        )
        found = yield call("contacts.search_contacts", query=name)
        unread = yield call("messages.list_unread")
        yield Finish(answer=str(sum(1 for m in unread.result if m["contact_id"] == found.result[0]["id"])))

    unread = [t for t in SUITE if t.source.template_id == "tu.unread_from"]
    assert all(passes(backend, t, by_unread_list) for t in unread)
    for template_id in ("sa.closest_place", "sa.ride_or_transit"):
        tasks = [t for t in SUITE if t.source.template_id == template_id][:8]
        assert template_id == "sa.closest_place" or {_expected(t) for t in tasks} == {"ride", "transit"}
        assert all(passes(backend, t, by_compare_modes) for t in tasks), template_id
