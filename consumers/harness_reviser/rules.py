"""Rule templates: one per fixable failure category, each turning a cluster of diagnoses into one harness patch.

A cluster is every FailureDiagnosed of one category in a round (it fires at ``min_cluster`` or more).
Each template returns a :class:`Draft` (the patch and why) or None when its change is already in the base:

| category | patch |
|---|---|
| argument_grounding | add_instruction "Copy names, times and ids exactly as written in the goal." |
| tool_routing | on one app (>= 60% of the cluster's tasks use it): add_skill / edit_skill for that app, naming the |
|  | tools that best match the failed goals (BM25 over the tool docs); spread over apps: add_instruction |
| state_tracking | set_memory_policy: seed and enable memory, retrieve 2 more memories (up to the most facts a failing |
|  | task has, and 8); when that changes nothing the tasks retrieve: add_instruction |
| recovery | add_instruction "If a call fails, change tool or arguments; never repeat it unchanged."; then set_budgets |
|  | +5 steps, only up to what the failing tasks' own budgets allow (a task's budget caps the harness's) |
| premature_termination | add_instruction "Before finish, check that every part of the goal is done." |
| hallucinated_completion | add_instruction "In the answer, state only facts read in tool results." |

policy_violation, environment_error, invalid_output and other have no template yet.

Budget and memory patches must bind: a patch is drafted only when it changes what at least one failing task's
episode gets (:func:`harness_service.runner.budgets.effective_budgets` for steps, the task's seeded facts for
retrieval); otherwise the template falls back to its instruction or yields to the next cluster.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from bus_schemas.events import Budgets, FailureCategory, FailureDiagnosed, TaskSpecified
from harness_service.config import HarnessConfig
from harness_service.revisions import (
    AddInstruction,
    AddSkill,
    EditSkill,
    Patch,
    SetBudgets,
    SetMemoryPolicy,
    skill_notes,
)
from harness_service.runner.budgets import effective_budgets
from harness_service.tools.selection import select_tools
from producers.backends.base import ToolSpec

ToolDocs = Callable[[str], ToolSpec | None]
"""A tool's spec by name (None when unknown), for naming the right tools in a skill note."""

GROUNDING = "Copy names, times and ids exactly as written in the goal."
ROUTING = "Call only the tools listed for this task, by their exact names."
STATE = "Re-read an item after changing it; never reuse a deleted id."
RECOVERY = "If a call fails, change tool or arguments; never repeat it unchanged."
FINISH = "Before finish, check that every part of the goal is done."
FACTS = "In the answer, state only facts read in tool results."
CONCENTRATED = 0.6
MAX_TOP_K = 8
MAX_STEPS = 60
SKILL_TOOLS = 3


@dataclass(frozen=True)
class Cluster:
    """The diagnoses of one category in a round, in log order, and the tasks they are about."""

    category: FailureCategory
    diagnoses: tuple[FailureDiagnosed, ...]
    tasks: Mapping[str, TaskSpecified]

    def examples(self, limit: int = 3) -> list[str]:
        return list(dict.fromkeys(d.explanation[:160] for d in self.diagnoses))[:limit]


@dataclass(frozen=True)
class Draft:
    patch: Patch
    why: str


Template = Callable[[Cluster, HarnessConfig, ToolDocs], Draft | None]


def _instruction(text: str, base: HarnessConfig, why: str) -> Draft | None:
    return None if text in base.instructions else Draft(AddInstruction(text=text), why)


def argument_grounding(cluster: Cluster, base: HarnessConfig, docs: ToolDocs) -> Draft | None:
    return _instruction(GROUNDING, base, "tool calls got arguments not grounded in the goal")


def premature_termination(cluster: Cluster, base: HarnessConfig, docs: ToolDocs) -> Draft | None:
    return _instruction(FINISH, base, "episodes finished before the goal held")


def hallucinated_completion(cluster: Cluster, base: HarnessConfig, docs: ToolDocs) -> Draft | None:
    return _instruction(FACTS, base, "answers claimed facts the tools never returned")


def _binding_steps(cluster: Cluster, base: HarnessConfig) -> int | None:
    """A larger harness step budget that lets at least one failing task run longer, or None when none can."""
    steps = min(base.budgets.max_steps + 5, MAX_STEPS)
    caps = [
        (t.budgets or Budgets()).max_steps for t in cluster.tasks.values()
    ]  # a task without budgets has the defaults
    room = [c for c in caps if c > base.budgets.max_steps]
    if not room or steps <= base.budgets.max_steps:
        return None
    steps = min(steps, max(room))
    raised = base.budgets.model_copy(update={"max_steps": steps})
    binds = any(
        effective_budgets(raised, t.budgets).max_steps > effective_budgets(base.budgets, t.budgets).max_steps
        for t in cluster.tasks.values()
    )
    return steps if binds else None


def recovery(cluster: Cluster, base: HarnessConfig, docs: ToolDocs) -> Draft | None:
    draft = _instruction(RECOVERY, base, "failing calls were repeated unchanged")
    if draft is None and (steps := _binding_steps(cluster, base)) is not None:
        draft = Draft(
            SetBudgets(max_steps=steps), f"failing calls still repeated with the instruction: {steps} steps to recover"
        )
    return draft


def _facts(cluster: Cluster) -> int:
    """The most memory facts any failing task seeds: retrieving more than that can surface nothing new."""
    return max((len(t.initial_conditions.memories) for t in cluster.tasks.values()), default=0)


def state_tracking(cluster: Cluster, base: HarnessConfig, docs: ToolDocs) -> Draft | None:
    memory, facts = base.memory, _facts(cluster)
    reachable = min(facts, MAX_TOP_K)
    top_k = min(max(memory.retrieve_top_k, 2) if not memory.enabled else memory.retrieve_top_k + 2, reachable)
    change = {
        "enabled": True if not memory.enabled else None,
        "seed_from_task": True if not memory.seed_from_task else None,
        "retrieve_top_k": top_k if top_k > memory.retrieve_top_k else None,
    }
    if facts and any(v is not None for v in change.values()) and (memory.enabled or top_k > 0):
        why = f"acted on stale or removed state: recall {max(top_k, memory.retrieve_top_k)} of up to {facts} memories"
        return Draft(SetMemoryPolicy(**change), why)
    return _instruction(STATE, base, "acted on stale or removed state; more memory would change nothing")


def _app_share(cluster: Cluster) -> tuple[str, float] | None:
    apps = Counter(app for d in cluster.diagnoses if (t := cluster.tasks.get(d.task_id)) for app in set(t.apps))
    if not apps:
        return None
    app, count = min(apps.items(), key=lambda kv: (-kv[1], kv[0]))
    return app, count / len(cluster.diagnoses)


def _right_tools(cluster: Cluster, app: str, docs: ToolDocs) -> list[str]:
    votes: Counter[str] = Counter()
    for task in {d.task_id: cluster.tasks[d.task_id] for d in cluster.diagnoses if d.task_id in cluster.tasks}.values():
        specs = [s for name in task.tools if name.startswith(f"{app}.") and (s := docs(name)) is not None]
        votes.update(select_tools(task.goal, specs, 2) if specs else [])
    return sorted(sorted(votes), key=lambda name: -votes[name])[:SKILL_TOOLS]


def tool_routing(cluster: Cluster, base: HarnessConfig, docs: ToolDocs) -> Draft | None:
    share = _app_share(cluster)
    if share is not None and share[1] >= CONCENTRATED and (tools := _right_tools(cluster, share[0], docs)):
        app = share[0]
        why = f"{share[1]:.0%} of the misrouted tasks use {app}"
        existing = skill_notes(base).get(app)
        if existing is None:
            return Draft(AddSkill(name=app, tools=tools), why)
        edit = EditSkill(name=app, tools=tools)
        if edit.line() != existing:
            return Draft(edit, why)
    return _instruction(ROUTING, base, "tools were called outside the task's tool list")


TEMPLATES: dict[str, Template] = {
    "tool_routing": tool_routing,
    "argument_grounding": argument_grounding,
    "state_tracking": state_tracking,
    "recovery": recovery,
    "premature_termination": premature_termination,
    "hallucinated_completion": hallucinated_completion,
}
"""Category -> template, in tie-break order."""
