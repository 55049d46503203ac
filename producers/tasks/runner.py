"""Drive one episode of a policy against a backend, outside the real harness (for checks, tests, benches).

Memory reads are answered by a stand-in that ranks the task's seeded memories by keyword overlap; the
real memory belongs to the harness. Skill loads return the skill document's text.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from bus_schemas.actions import Finish, MemoryRead, SkillLoad, ToolCall, ToolError
from bus_schemas.events.tasks import TaskSpecified
from producers.backends.base import Backend, Evidence, Observation
from producers.backends.sandbox.catalog import TOOLS
from producers.backends.sandbox.skill_docs import SKILLS
from producers.tasks.template import Action, Solver

Policy = Callable[[TaskSpecified], Solver]


@dataclass
class Episode:
    evidence: Evidence
    answer: str
    actions: list[Action] = field(default_factory=list)


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9]+", text.lower())) - {
        "my",
        "i",
        "the",
        "a",
        "is",
        "at",
        "what",
        "who",
        "do",
        "to",
        "of",
    }


def recall(task: TaskSpecified, read: MemoryRead) -> Observation:
    """Stand-in memory: facts sharing the most words with the query, best first."""
    query = _words(read.query)
    ranked = sorted(task.initial_conditions.memories, key=lambda m: -len(query & _words(m.content)))
    return Observation(result=[m.content for m in ranked[: read.top_k]])


def load_skill(read: SkillLoad) -> Observation:
    skill = SKILLS.get(read.name)
    return (
        Observation(result=skill.body)
        if skill
        else Observation(error=ToolError(code="not_found", message=f"no skill named {read.name!r}"))
    )


def run_episode(backend: Backend, task: TaskSpecified, policy: Policy, max_steps: int = 60) -> Episode:
    """Reset, feed every observation back to the policy until it finishes or runs out of steps."""
    backend.reset(task)
    actions: list[Action] = []
    answer = ""
    gen = policy(task)
    obs: Observation | None = None
    try:
        for _ in range(max_steps):
            action = gen.send(obs) if actions else next(gen)
            actions.append(action)
            if isinstance(action, Finish):
                answer = action.answer
                break
            if isinstance(action, ToolCall):
                obs = backend.step(action)
            elif isinstance(action, MemoryRead):
                obs = recall(task, action)
            else:
                obs = load_skill(action)
    except StopIteration:
        pass
    return Episode(evidence=backend.evidence(), answer=answer, actions=actions)


def noop_policy(task: TaskSpecified) -> Solver:
    """Gives up at once: must fail every task (no task is information-free)."""
    yield Finish(answer="")


def _random_value(rng: random.Random, schema: dict[str, Any]) -> Any:
    kind = schema.get("type")
    if kind == "integer":
        return rng.randrange(0, 100)
    if kind == "number":
        return round(rng.uniform(0, 100), 2)
    if kind == "boolean":
        return rng.random() < 0.5
    if kind == "array":
        return []
    return rng.choice(("x", "c_1", "pl_2", "2026-03-04", "10:00", "item", "ev_1"))


def random_policy(task: TaskSpecified, calls: int = 8) -> Solver:
    """Random tools with random arguments, then a random answer; seeded by the task id for reproducibility."""
    rng = random.Random(task.task_id)
    for _ in range(calls):
        name = rng.choice(task.tools)
        props = TOOLS[name].spec.parameters.get("properties", {})
        args = {key: _random_value(rng, schema) for key, schema in props.items() if rng.random() < 0.8}
        yield ToolCall(name=name, args=args)
    yield Finish(answer=rng.choice(("maybe", "done", "blue", "unknown")))
