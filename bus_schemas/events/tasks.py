"""Task events (topic ``tasks``): what a task asks, where it runs and how completion is checked."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, StringConstraints, model_validator

from bus_schemas.envelope import Event, Name, Record, Text
from bus_schemas.json_types import JsonData

Capability = Literal["tool_use", "memory", "skills", "sub_agent"]
CapabilityTag = Literal[
    "information_acquisition",
    "tool_routing",
    "argument_grounding",
    "multi_step_dependency",
    "state_tracking",
    "recovery",
    "verified_completion",
]
Difficulty = Literal[1, 2, 3]
Split = Literal["train", "dev", "test"]
BACKEND_NAME_PATTERN = r"^[a-z][a-z0-9_.-]{0,63}$"
BackendKind = Annotated[str, StringConstraints(pattern=BACKEND_NAME_PATTERN)]
"""The name a backend is registered under (``planner_flywheel.backends`` entry points): ``sandbox``, ``llm_sim``,
``device`` or any installed plugin's. Open on the wire, so an event of a backend this process lacks still decodes."""


class StateCriterion(Record):
    """A predicate over the final world state, evaluated by the backend that registered it."""

    kind: Literal["state"] = "state"
    id: Name
    description: Text
    predicate: Name  # registered by the backend, e.g. "calendar.event_exists"
    params: dict[str, JsonData] = Field(default_factory=dict)


class AnswerCriterion(Record):
    """A check of the policy's final answer against the accepted answers."""

    kind: Literal["answer"] = "answer"
    id: Name
    description: Text
    expected: Annotated[list[str], Field(min_length=1)]  # accepted answers
    match: Literal["exact", "normalized", "contains", "numeric"] = "normalized"
    tolerance: Annotated[float, Field(ge=0.0)] | None = None  # for match="numeric"


class NoCollateralCriterion(Record):
    """Nothing outside ``allowed_paths`` changed: catches side effects the goal did not ask for."""

    kind: Literal["no_collateral"] = "no_collateral"
    id: Name
    description: Text
    allowed_paths: list[str]  # state path prefixes the task may change, e.g. "/calendar/events"


Where = dict[str, JsonData]
"""A match on a record's fields (``field`` or ``field__op`` -> wanted value, plus ``not``/``any``/``all``);
the operators are the verifier's (``producers/backends/sandbox/where.py``)."""


class CallRequiredCriterion(Record):
    """At least ``min_count`` successful calls of ``tool`` whose arguments match ``where``.

    Only calls that succeeded count: a refused call did nothing, so trying is not doing.
    """

    kind: Literal["call_required"] = "call_required"
    id: Name
    description: Text
    tool: Name
    where: Where = Field(default_factory=dict)
    min_count: Annotated[int, Field(ge=1)] = 1


class CallForbiddenCriterion(Record):
    """No call of ``tool`` whose arguments match ``where``, not even one the environment refused:
    the attempt was the policy's choice, and a refusal is the environment's luck, not the policy's compliance."""

    kind: Literal["call_forbidden"] = "call_forbidden"
    id: Name
    description: Text
    tool: Name
    where: Where = Field(default_factory=dict)


class CallStep(Record):
    """One step of a :class:`CallOrderCriterion`: a call of ``tool`` whose arguments match ``where``."""

    tool: Name
    where: Where = Field(default_factory=dict)


class CallOrderCriterion(Record):
    """The steps occur in this order among the successful calls (a subsequence: other calls may come between).

    A bare name is a step with no argument match. Failed calls are skipped, so a refused attempt followed by a
    successful retry counts at the retry.
    """

    kind: Literal["call_order"] = "call_order"
    id: Name
    description: Text
    steps: Annotated[list[Name | CallStep], Field(min_length=1)]


class CallAnyCriterion(Record):
    """At least ``min_count`` successful calls that match one of the ``options``: the same evidence reached by
    whichever of several tools serves it (a day's weather from ``weather.on_day`` or ``weather.forecast``).

    For answer tasks, so the answer must rest on the look-ups it needs: a right answer that no call could have
    shown is a guess. As with ``call_required``, only calls that succeeded count.
    """

    kind: Literal["call_any"] = "call_any"
    id: Name
    description: Text
    options: Annotated[list[CallStep], Field(min_length=1)]
    min_count: Annotated[int, Field(ge=1)] = 1


class MaxCallsCriterion(Record):
    """At most ``limit`` calls (of ``tool`` only, when given); failed calls count, since each one spent a step."""

    kind: Literal["max_calls"] = "max_calls"
    id: Name
    description: Text
    limit: Annotated[int, Field(ge=0)]
    tool: Name | None = None


CallCriterion = (
    CallRequiredCriterion | CallAnyCriterion | CallForbiddenCriterion | CallOrderCriterion | MaxCallsCriterion
)
"""Criteria over the call trace alone: judging them never reads a world state."""

CompletionCriterion = Annotated[
    StateCriterion | AnswerCriterion | NoCollateralCriterion | CallCriterion,
    Field(discriminator="kind"),
]


class MemoryFact(Record):
    """A fact from a past session, seeded into the harness memory (never into the world state)."""

    content: Annotated[str, Field(min_length=1, max_length=4096)]
    tags: list[str] = Field(default_factory=list)


class InitialConditions(Record):
    """Everything needed to rebuild the task's starting world deterministically."""

    seed: Annotated[int, Field(ge=0, le=2**63 - 1)] = 0
    fixtures: dict[str, JsonData] = Field(default_factory=dict)  # app-specific state overrides
    memories: list[MemoryFact] = Field(default_factory=list)  # seeded into the harness memory only


class TaskSource(Record):
    """Where a task came from, kept as provenance all the way to curated trajectories."""

    kind: Literal["template", "generated", "human", "external"]
    template_id: Name | None = None
    instance_key: Name | None = None
    generator: Name | None = None
    parent_task_id: Name | None = None


class Budgets(Record):
    """Limits of one episode; the harness ends it with ``budget_exhausted`` when one is hit."""

    max_steps: Annotated[int, Field(ge=1, le=10_000)] = 30
    max_tokens: Annotated[int, Field(ge=1)] | None = None
    max_tool_calls: Annotated[int, Field(ge=1)] | None = None
    max_wall_s: Annotated[float, Field(gt=0.0)] | None = None


class SimulatedUser(Record):
    """Who answers the policy's clarifying questions, so a ``clarify`` continues the episode instead of ending it.

    ``replies`` are answered in order (a rule-based user from the task's script); with ``persona`` and a user
    model configured on the harness, a language model plays the user instead (the persona says who they are
    and what they know that the goal does not). After ``max_turns`` answers, or when the script runs out, a
    question ends the episode as before.
    """

    replies: list[Annotated[str, Field(min_length=1, max_length=4096)]] = Field(default_factory=list)
    persona: Annotated[str, Field(min_length=1, max_length=16384)] | None = None
    max_turns: Annotated[int, Field(ge=1, le=50)] = 3


class TaskSpecified(Event):
    """A new task. It carries no reference trajectory: only the goal, the world and the checks.

    Only the goal, the loop's labels (category, split) and where it runs (backend) are required. The sandbox's
    notions are optional, so a task of another environment states only what it has: ``apps``/``tools`` (the
    sandbox's allow-list; empty: the backend offers its own tools), ``initial_conditions`` (seed 0 and no fixtures
    by default), ``difficulty`` (unrated tasks count as 1 for the curriculum) and ``criteria`` (empty: the
    backend's own judge decides; the built-in judge refuses to judge a task without any). ``backend_params``
    carries what only the backend understands (a domain, a benchmark's own task record); ``user`` simulates the
    person who asked, so clarifying questions get answers.
    """

    event_type: Literal["TaskSpecified"] = "TaskSpecified"
    schema_version: Literal[3] = 3
    task_id: Name
    goal: Annotated[str, Field(min_length=1, max_length=16384)]
    apps: list[Name] = Field(default_factory=list)
    tools: list[Name] = Field(default_factory=list)
    initial_conditions: InitialConditions = Field(default_factory=InitialConditions)
    category: Capability
    tags: list[CapabilityTag] = Field(default_factory=list)
    difficulty: Difficulty = 1
    split: Split
    backend: BackendKind
    criteria: list[CompletionCriterion] = Field(default_factory=list)
    source: TaskSource
    skills: list[Name] = Field(default_factory=list)  # skill names relevant to the task
    budgets: Budgets | None = None
    backend_params: dict[str, JsonData] = Field(default_factory=dict)
    user: SimulatedUser | None = None
    """The user behind the goal, for user-in-the-loop tasks; None: a clarifying question ends the episode."""
    observation_chars: Annotated[int, Field(ge=64, le=1_000_000)] | None = None
    """How much of the first observation and of each tool result the context keeps (characters); None: the
    harness config's ``turn_chars``. A task whose first observation is a long domain policy raises it."""

    @model_validator(mode="after")
    def _criterion_ids_unique(self) -> TaskSpecified:
        ids = [criterion.id for criterion in self.criteria]
        if len(ids) != len(set(ids)):
            raise ValueError(f"criteria ids must be unique, got {ids}")
        return self


class TaskRetired(Event):
    """A task leaves the pool (broken, leaked, superseded); its past episodes stay valid history."""

    event_type: Literal["TaskRetired"] = "TaskRetired"
    schema_version: Literal[1] = 1
    task_id: Name
    reason: Annotated[str, Field(min_length=1, max_length=4096)]
    superseded_by: Name | None = None
