"""Every sandbox task template, in all four categories, through the real harness with its reference solver."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from harness_fakes import EventList, MemoryBlobs

from bus_schemas.codec import decode, encode
from bus_schemas.events.episodes import ContextBuilt, EpisodeStarted, ObservationReturned
from bus_schemas.events.tasks import TaskSpecified
from harness_service.config import HarnessConfig
from harness_service.memory.store import MemoryStore
from harness_service.policy.scripted import ScriptedPolicy, Solver, delegated
from harness_service.runner.episode import EpisodeOutcome, Harness, RunIds, run_episode
from harness_service.skills.library import SkillLibrary
from producers.backends.sandbox.backend import SandboxBackend
from producers.backends.sandbox.skill_docs import SKILLS_DIR
from producers.backends.sandbox.verify import verify
from producers.tasks.solver import reference_solver
from producers.tasks.suite import build_task_suite

pytestmark = pytest.mark.unit

SKILL_LIBRARY = SkillLibrary.from_dir(SKILLS_DIR)


def first_of_each_template() -> list[TaskSpecified]:
    seen: dict[str, TaskSpecified] = {}
    for task in build_task_suite("run-harness-test"):
        if task.split == "train" and task.source.template_id not in seen:
            seen[task.source.template_id or ""] = task
    return list(seen.values())


TASKS = first_of_each_template()


def run(task: TaskSpecified, solver: Solver) -> tuple[EpisodeOutcome, EventList, SandboxBackend, MemoryStore]:
    events, backend, memory = EventList(), SandboxBackend(), MemoryStore()
    policy = ScriptedPolicy(solver, "reference")
    harness = Harness(config=HarnessConfig(), policy=policy, blobs=MemoryBlobs(), events=events, skills=SKILL_LIBRARY)
    outcome = run_episode(harness, task, backend, RunIds(run_id="run-harness-test"), memory)
    return outcome, events, backend, memory


def errors(events: EventList) -> Iterator[str]:
    return (f"{e.step}: {e.error.message}" for e in events if isinstance(e, ObservationReturned) and e.error)


def test_the_suite_covers_all_four_categories() -> None:
    assert {t.category for t in TASKS} == {"tool_use", "memory", "skills", "sub_agent"}


@pytest.mark.parametrize("task", TASKS, ids=lambda t: t.source.template_id)
def test_reference_solver_through_the_harness_passes_the_verifier(task: TaskSpecified) -> None:
    outcome, events, backend, _ = run(task, reference_solver(task))
    assert outcome.reason == "finished", list(errors(events))
    assert all(decode(encode(e)) == e for e in events)  # every event survives the bus codec
    verdict = verify(task, backend.evidence(), outcome.answer or "")
    assert verdict.outcome, [c for c in verdict.criteria if not c.passed]
    if task.skills:
        offered = next(e for e in events if isinstance(e, ContextBuilt)).skills_offered
        assert set(task.skills) <= set(offered)


@pytest.mark.parametrize("task", [t for t in TASKS if t.category == "memory"], ids=lambda t: t.source.template_id)
def test_memory_tasks_read_their_seeded_facts(task: TaskSpecified) -> None:
    _, events, _, memory = run(task, reference_solver(task))
    reads = [
        e
        for e in events
        if isinstance(e, ObservationReturned)
        and isinstance(e.result, list)
        and e.result
        and isinstance(e.result[0], dict)
        and "content" in e.result[0]
    ]
    facts = {m.content for m in task.initial_conditions.memories}
    assert reads and all(r["content"] in facts for e in reads for r in e.result)  # type: ignore[union-attr]
    assert {m.content for m in memory.all()} == facts


@pytest.mark.parametrize("task", [t for t in TASKS if t.category == "sub_agent"], ids=lambda t: t.source.template_id)
def test_sub_agent_tasks_delegated_to_a_nested_episode_still_pass(task: TaskSpecified) -> None:
    solver = delegated(reference_solver(task), goal=task.goal, tools=task.tools)
    outcome, events, backend, _ = run(task, solver)
    parent, child = [e for e in events if isinstance(e, EpisodeStarted)]
    assert child.parent_episode_id == parent.episode_id == outcome.episode_id
    assert outcome.reason == "finished" and outcome.steps == 2, list(errors(events))
    assert verify(task, backend.evidence(), outcome.answer or "").outcome
