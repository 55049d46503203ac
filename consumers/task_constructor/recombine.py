"""Cross-app recombinations: two template instances over disjoint apps, in one world, as one task.

Both halves are instances of the same (seed, split, index), so they share the world seed; the goal
asks for the first, then the second; criteria are both halves' (ids prefixed), with one no-collateral
check over the union of allowed paths. ``template_id`` is ``A+B``: the reference solver chains A's
and B's solvers. Only the second half may check a final answer (an episode has one).

Call criteria judge one trace that now holds both halves' calls (``_call_criteria``): what a half requires, and
the order of its calls, still hold (other calls may come between); a half's forbidden call stays forbidden unless
the other half offers that tool; a bound on all calls becomes the sum of both halves' bounds, or is dropped when
only one half bounds them (the other half's calls would count against it).
"""

from __future__ import annotations

from bus_schemas.events import (
    AnswerCriterion,
    Budgets,
    CallForbiddenCriterion,
    CompletionCriterion,
    MaxCallsCriterion,
    NoCollateralCriterion,
    TaskSpecified,
)
from producers.tasks.template import Template
from producers.tasks.templates import TEMPLATES

SEPARATOR = "+"


def partners(first: Template) -> list[Template]:
    """Templates over apps disjoint from ``first``'s, in a stable order."""
    return sorted((t for t in TEMPLATES.values() if not set(t.apps) & set(first.apps)), key=lambda t: t.id)


def combine(a: TaskSpecified, b: TaskSpecified) -> TaskSpecified | None:
    """One task doing ``a`` then ``b`` in ``a``'s world; None when they cannot share one episode."""
    if a.initial_conditions.seed != b.initial_conditions.seed or set(a.apps) & set(b.apps):
        return None
    if (
        any(isinstance(c, AnswerCriterion) for c in a.criteria)
        or a.initial_conditions.fixtures.keys() & b.initial_conditions.fixtures.keys()
    ):
        return None
    guarded = [any(isinstance(c, NoCollateralCriterion) for c in t.criteria) for t in (a, b)]
    if guarded[0] != guarded[1]:
        return None  # one half's side-effect check would forbid the other half's changes
    allowed: list[str] = []
    criteria: list[CompletionCriterion] = []
    for prefix, task in (("a", a), ("b", b)):
        for c in task.criteria:
            if isinstance(c, NoCollateralCriterion):
                allowed += [p for p in c.allowed_paths if p not in allowed]
            else:
                criteria.append(c.model_copy(update={"id": f"{prefix}.{c.id}"}))
    criteria = _call_criteria(criteria, a, b)
    if all(guarded):
        criteria.append(
            NoCollateralCriterion(
                id="no_collateral", description="nothing outside either goal's scope changed", allowed_paths=allowed
            )
        )
    conditions = a.initial_conditions.model_copy(
        update={
            "fixtures": {**a.initial_conditions.fixtures, **b.initial_conditions.fixtures},
            "memories": [*a.initial_conditions.memories, *b.initial_conditions.memories],
        }
    )
    source = a.source.model_copy(
        update={
            "template_id": f"{a.source.template_id}{SEPARATOR}{b.source.template_id}",
        }
    )
    return a.model_copy(
        update={
            "task_id": f"{a.task_id}{SEPARATOR}{b.source.template_id}",
            "goal": f"{a.goal} After that: {b.goal}",
            "apps": [*a.apps, *(x for x in b.apps if x not in a.apps)],
            "tools": [*a.tools, *(x for x in b.tools if x not in a.tools)],
            "initial_conditions": conditions,
            "tags": [*a.tags, *(x for x in b.tags if x not in a.tags)],
            "skills": [*a.skills, *(x for x in b.skills if x not in a.skills)],
            "difficulty": min(3, max(a.difficulty, b.difficulty) + 1),
            "criteria": criteria,
            "source": source,
            "budgets": _summed(a.budgets, b.budgets),
        }
    )


def _call_criteria(
    criteria: list[CompletionCriterion], a: TaskSpecified, b: TaskSpecified
) -> list[CompletionCriterion]:
    """The prefixed criteria of both halves with the call criteria that would misjudge the combined trace fixed."""
    tools = {"a": set(b.tools), "b": set(a.tools)}  # the other half's tools, by prefix
    totals = [c for c in criteria if isinstance(c, MaxCallsCriterion) and c.tool is None]
    kept: list[CompletionCriterion] = []
    for c in criteria:
        other = tools[c.id.split(".", 1)[0]]
        if isinstance(c, CallForbiddenCriterion) and c.tool in other:
            continue
        if isinstance(c, MaxCallsCriterion) and (c.tool in other or c.tool is None):
            continue
        kept.append(c)
    if len(totals) == 2 and {t.id.split(".", 1)[0] for t in totals} == {"a", "b"}:
        kept.append(
            MaxCallsCriterion(
                id="max_calls", description="at most both halves' calls", limit=sum(t.limit for t in totals)
            )
        )
    return kept


def _summed(a: Budgets | None, b: Budgets | None) -> Budgets | None:
    """Room for both halves: the first's budgets with the steps of both; None (the harness's own) if either has none."""
    if a is None or b is None:
        return None
    return a.model_copy(update={"max_steps": min(10_000, a.max_steps + b.max_steps)})
