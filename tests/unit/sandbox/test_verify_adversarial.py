"""The answer check cannot be gamed: for every answer task of the suite the reference answer passes and every
adversarial answer (a list of numbers, all options, the expected value plus a contradiction, empty, very long)
fails, under the task's own match and under ``contains``."""

from __future__ import annotations

import re
from collections import defaultdict
from functools import cache, lru_cache

import pytest

from bus_schemas.events.tasks import AnswerCriterion, TaskSpecified
from producers.backends.sandbox.backend import SandboxBackend
from producers.backends.sandbox.verify import MAX_ANSWER_CHARS, check_answer, verify
from producers.tasks.runner import run_episode
from producers.tasks.solver import reference_solver
from producers.tasks.suite import build_task_suite

pytestmark = pytest.mark.unit

SUITE = build_task_suite("test-run")
ANSWER_TASKS = [t for t in SUITE if any(isinstance(c, AnswerCriterion) for c in t.criteria)]


def _criterion(task: TaskSpecified) -> AnswerCriterion:
    return next(c for c in task.criteria if isinstance(c, AnswerCriterion))


def _template(task: TaskSpecified) -> str:
    return task.task_id.split("/", 1)[0]


@lru_cache(maxsize=1)
def _options() -> dict[str, set[str]]:
    """Every answer a task of the template expects somewhere in the suite: the options one could list."""
    found: dict[str, set[str]] = defaultdict(set)
    for task in ANSWER_TASKS:
        found[_template(task)].update(_criterion(task).expected)
    return found


@cache
def _reference(task_id: str) -> tuple[str, dict]:
    task = next(t for t in ANSWER_TASKS if t.task_id == task_id)
    episode = run_episode(SandboxBackend(), task, reference_solver)
    assert verify(task, episode.evidence, episode.answer).outcome, task_id
    return episode.answer, episode.evidence.initial_state


def adversarial_answers(task: TaskSpecified, world: dict) -> dict[str, str]:
    """Answers that name the expected value but do not commit to it (or commit to nothing).

    The options of a text answer: what the goal lists and what tasks of the same template expect, where the
    task's goal or world names it.
    """
    c = _criterion(task)
    want = c.expected[0]
    answers = {"empty": "", "blank": "   ", "very long": f"{want} " + "and so on " * (MAX_ANSWER_CHARS // 10)}
    if c.match == "numeric":
        n = float(want)
        near = [f"{n + d:g}" for d in (-2, -1, 0, 1, 2)]
        answers |= {
            "list of numbers": ", ".join(near),
            "numbers without separators": " ".join(near),
            "every number up to 100": " ".join(str(i) for i in range(-50, 101)),
            "range": f"between {n - 5:g} and {n + 5:g}",
            "value plus contradiction": f"{want}, or maybe {n + 7:g}",
            "value then correction": f"{want}. Actually it is {n + 3:g}.",
            "answer slot of two": f"Answer: {want} or {n + 1:g}",
            "negated value": f"not {want}",
        }
        return answers
    seen = f"{task.goal} {world}".lower()
    listed = re.search(r"(?:\bof|:)\s+([^?:]+?)(?:\s+will\b|\?)", task.goal)  # "Which of A, B, C will ...?"
    offered = set(listed.group(1).split(", ")) if listed else set()
    rivals = sorted(o for o in (_options()[_template(task)] | offered) - set(c.expected) if o.lower() in seen)
    assert rivals, f"{task.task_id}: the task offers no other option to list"
    every = [want, *rivals]
    answers |= {
        "all options, commas": ", ".join(every),
        "all options, or": " or ".join(every),
        "all options, bullets": "\n- ".join(every),
        "all options, spaces": " ".join(every),
        "expected plus contradiction": f"{want}, but it could also be {rivals[0]}",
        "negated expected": f"not {want}",
        "either": f"either {want} or {rivals[0]}",
        "maybe": f"{want}, maybe",
    }
    return answers


@pytest.mark.parametrize("task", ANSWER_TASKS, ids=lambda t: t.task_id)
def test_reference_answers_pass_and_adversarial_answers_fail(task: TaskSpecified) -> None:
    answer, world = _reference(task.task_id)
    c = _criterion(task)
    contains = c.model_copy(update={"match": "contains"})
    criteria = [c] if c.match == "numeric" else [c, contains]
    for criterion in criteria:
        assert check_answer(criterion, answer, task.goal, world)[0], (criterion.match, answer)
        passed = {
            name
            for name, bad in adversarial_answers(task, world).items()
            if check_answer(criterion, bad, task.goal, world)[0]
        }
        assert not passed, f"{criterion.match}: adversarial answers {sorted(passed)} passed"


def test_the_suite_has_answer_tasks_of_both_kinds() -> None:
    matches = {_criterion(t).match for t in ANSWER_TASKS}
    assert {"numeric", "normalized"} <= matches and len(ANSWER_TASKS) >= 100


@pytest.mark.parametrize(
    ("answer", "ok"),
    [
        ("21 °C", True),
        ("On 2026-03-04 the high will be 21 °C.", True),  # the date echoes the goal, 21 is the answer
        ("I read 3 forecasts. Final answer: 21", True),  # the answer slot wins over earlier numbers
        ("21 °C (that is 21 degrees)", True),  # one value, said twice
        ("20 21 22", False),
        ("2026-03-04", False),  # only echoes of the goal: no answer
        ("room B21", False),  # a digit glued to a word is not a number
    ],
)
def test_a_numeric_answer_is_one_extracted_value(answer: str, ok: bool) -> None:
    c = AnswerCriterion(id="a", description="-", expected=["21"], match="numeric", tolerance=0.0)
    goal = "What will the high temperature be in Lisbon on 2026-03-04? Answer in °C."
    assert check_answer(c, answer, goal)[0] is ok


@pytest.mark.parametrize(
    ("answer", "ok"),
    [
        ("It is Lisbon, clearly", True),
        ("Lisbon", True),
        ("Lisbon, Porto, Faro", False),
        ("Lisbon Porto Faro", False),  # no separators: the world says Porto and Faro are rival cities
        ("Lisbon, not Porto", False),  # names a rival; a verifier cannot tell which one is meant
        ("not Lisbon", False),
    ],
)
def test_contains_needs_one_committed_option(answer: str, ok: bool) -> None:
    c = AnswerCriterion(id="a", description="-", expected=["Lisbon"], match="contains")
    world = {"weather": {"forecasts": {"f1": {"city": "Lisbon"}, "f2": {"city": "Porto"}, "f3": {"city": "Faro"}}}}
    assert check_answer(c, answer, "Which city is warmest tomorrow?", world)[0] is ok


def test_options_the_goal_offers_are_rivals() -> None:
    c = AnswerCriterion(id="a", description="-", expected=["transit"], match="contains")
    goal = "If transit takes 40 minutes or less answer 'transit'; otherwise book a ride and answer 'ride'."
    assert check_answer(c, "take transit", goal)[0]
    assert not check_answer(c, "transit ride", goal)[0]
