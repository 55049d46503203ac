"""Ids a policy was never shown: the sandbox records them per call and the judge fails a success that rests on one.

Seen in the default run: the tiny model searched a train name, got ``[]``, then booked a ride to ``pl_30``, which
happened to be the place the goal named. The state was right; the id was a guess.
"""

from __future__ import annotations

from typing import Any

import pytest

from bus_schemas.actions import Finish
from bus_schemas.events.tasks import TaskSpecified
from producers.backends.sandbox.backend import SandboxBackend
from producers.backends.sandbox.calls import read_call
from producers.backends.sandbox.grounding import Shown, id_arguments
from producers.backends.sandbox.verify import GROUNDED, verify
from producers.tasks.runner import run_episode
from producers.tasks.solver import reference_solver
from producers.tasks.suite import build_task_suite
from producers.tasks.template import Solver, call

pytestmark = pytest.mark.unit

SUITE = build_task_suite("grounding")


def _first(template_id: str) -> TaskSpecified:
    return next(t for t in SUITE if t.source.template_id == template_id and t.split == "dev")


def test_id_arguments_are_id_and_star_id_strings_and_star_ids_lists() -> None:
    args = {"id": "ride_6", "dropoff_id": "pl_30", "photo_ids": ["ph_1", 3, "ph_2"], "query": "pl_9", "n": 2}
    assert list(id_arguments(args)) == ["ride_6", "pl_30", "ph_1", "ph_2"]


def test_an_id_counts_as_shown_once_any_text_the_policy_read_names_it() -> None:
    shown = Shown({"goal": "Call c_7 back"}, [{"name": "maps.directions", "example": {"origin_id": "pl_1"}}])
    assert shown.unseen({"contact_id": "c_7", "origin_id": "pl_1", "destination_id": "pl_30"}) == ["pl_30"]
    shown.add([{"id": "pl_30", "name": "Fig Gym"}])
    assert shown.unseen({"destination_id": "pl_30"}) == []
    shown.add("no place pl_31; did you mean pl_32?")  # an error message is read too
    assert shown.unseen({"id": "pl_32"}) == [] and shown.unseen({"id": "pl_3"}) == ["pl_3"]  # tokens, not substrings


def _ride_by_guessed_id(task: TaskSpecified, place_id: str) -> Any:
    def plan(_: TaskSpecified) -> Solver:
        yield call("maps.search_places", query="Tamarind Gym")  # a name of another world: []
        yield call("settings.grant_permission", permission="rides.location")
        ride = yield call("rides.request_ride", pickup_id="pl_1", dropoff_id=place_id, product="economy")
        yield call("rides.confirm_pickup", id=ride.result["id"])
        yield Finish(answer="ride")

    return plan


def _ride_task() -> tuple[TaskSpecified, str]:
    """An ``sa.ride_or_transit`` task whose answer is a ride, and the id of the place it must go to."""
    task = next(
        t for t in SUITE if t.source.template_id == "sa.ride_or_transit" and any(c.id == "ride" for c in t.criteria)
    )
    ride = next(c for c in task.criteria if c.id == "ride")
    return task, ride.params["where"]["dropoff"]  # type: ignore[union-attr, index, call-overload, return-value]


def test_a_ride_to_the_right_place_by_a_guessed_id_fails_and_the_looked_up_one_passes() -> None:
    backend = SandboxBackend()
    task, place_id = _ride_task()
    assert verify(task, run_episode(backend, task, reference_solver).evidence, "ride").outcome

    episode = run_episode(backend, task, _ride_by_guessed_id(task, place_id))
    calls = [read_call(r) for r in episode.evidence.calls]
    assert [c.unseen_ids for c in calls if c.unseen_ids] == [(place_id,)]  # confirm_pickup's ride id was shown

    result = verify(task, episode.evidence, "ride")
    by_id = {r.id: r for r in result.criteria}
    assert not result.outcome and not by_id[GROUNDED].passed
    assert by_id[GROUNDED].detail == f"used ids it was never shown: {place_id} in rides.request_ride at call 2"
    assert all(r.passed for r in result.criteria if r.id not in (GROUNDED, "transit_time"))  # the state was right


def test_a_refused_call_with_a_made_up_id_does_not_fail_the_episode() -> None:
    """A refused call changed and showed nothing; recovering from a wrong id is the policy's job, not a guess."""
    backend = SandboxBackend()
    task = _first("tu.ride_to_contact")

    def plan(t: TaskSpecified) -> Solver:
        yield call("contacts.get_contact", id="c_999")
        yield from reference_solver(t)

    episode = run_episode(backend, task, plan)
    assert read_call(episode.evidence.calls[0]).unseen_ids == ("c_999",)
    result = verify(task, episode.evidence, episode.answer)
    assert result.outcome and GROUNDED not in {r.id for r in result.criteria}


@pytest.mark.parametrize("seed", [0, 1])
def test_every_reference_solver_looks_up_the_ids_it_uses(seed: int) -> None:
    """The cold-start demonstrations must not teach guessing: mem.usual_order added the remembered dish by its id
    and sk.join_wifi joined net_2 without listing the networks, until this check found them."""
    backend = SandboxBackend()
    guessed = {}
    for task in build_task_suite("grounding", seed):
        calls = [read_call(r) for r in run_episode(backend, task, reference_solver).evidence.calls]
        if any(c.unseen_ids for c in calls):
            guessed[task.task_id] = [c.unseen_ids for c in calls if c.unseen_ids]
    assert guessed == {}


def test_evidence_recorded_before_grounding_is_judged_as_before() -> None:
    """Call records without ``unseen_ids`` (older evidence, other backends) pass the check."""
    backend = SandboxBackend()
    task, place_id = _ride_task()
    task = task.model_copy(update={"criteria": [c for c in task.criteria if c.id != "transit_time"]})
    episode = run_episode(backend, task, _ride_by_guessed_id(task, place_id))
    old = episode.evidence.model_copy(
        update={"calls": [{k: v for k, v in r.items() if k != "unseen_ids"} for r in episode.evidence.calls]}
    )
    assert not verify(task, episode.evidence, "ride").outcome
    assert verify(task, old, "ride").outcome


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_remembered_dish_names_one_dish_in_every_suite(seed: int) -> None:
    """Ordering "my usual" by its name (the reference no longer adds the template's dish id blind) needs a name
    that picks out one dish: suite 1's Copper Indian Kitchen listed two Summer Wraps at different prices."""
    backend = SandboxBackend()
    tasks = [t for t in build_task_suite("grounding", seed) if t.source.template_id == "mem.usual_order"]
    failed = [t.task_id for t in tasks if not verify(t, run_episode(backend, t, reference_solver).evidence).outcome]
    assert len(tasks) == 26 and failed == []
