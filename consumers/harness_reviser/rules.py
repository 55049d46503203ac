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
| invalid_output | compact profile only: the window edit below |

With a compact harness profile (what a small model's window keeps), tool_routing, argument_grounding and
invalid_output first try a **window edit** drawn from the failing tasks' traces (the tool calls of each task's
reference solution, ``Cluster.procedures``), one incremental change at a time:

- ``add_tool_successors``: a procedure prior. Counted over the failing tasks' solutions, the tools that followed
  each call (and the first calls) become the tools the step after that call shows first; drafted when it shows
  more of the solutions' calls at their own step than the base does (net of the ones it pushes out);
- ``set_tool_selection``: the first tool a failing task's solution calls is not among the ``tool_top_k`` tools
  its first step shows (BM25 of the goal) but would be with one or two more: show that many;
- ``set_tool_note``: the tool the failing tasks' solutions call most often, that has no note yet, gets the
  procedure it belongs to as its note (``step 1 of 2: search_contacts > send_message``); tools their first
  steps already show come first (a note on a tool that is never shown changes nothing).

policy_violation, environment_error and other have no template yet.

Budget and memory patches must bind: a patch is drafted only when it changes what at least one failing task's
episode gets (:func:`harness_service.runner.budgets.effective_budgets` for steps, the task's seeded facts for
retrieval); otherwise the template falls back to its instruction or yields to the next cluster.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from bus_schemas.events import Budgets, FailureCategory, FailureDiagnosed, TaskSpecified
from harness_service.config import CompactContext, HarnessConfig
from harness_service.revisions import (
    MAX_NOTE_CHARS,
    AddInstruction,
    AddSkill,
    AddToolSuccessors,
    EditSkill,
    Patch,
    SetBudgets,
    SetMemoryPolicy,
    SetToolNote,
    SetToolSelection,
    skill_notes,
)
from harness_service.runner.budgets import effective_budgets
from harness_service.tools.selection import episode_successors, select_tools, step_tools, successor_table
from producers.backends.base import ToolSpec

ToolDocs = Callable[[str], ToolSpec | None]
"""A tool's spec by name (None when unknown), for naming the right tools in a skill note."""
Procedure = Callable[[TaskSpecified], Sequence[str] | None]
"""The tool calls (names, in order) of a task's reference solution; None when the task has none."""

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
MAX_SHOWN_TOOLS = 6
"""A window edit shows at most this many tools a step (the compact system turn must fit the window)."""
MAX_RAISE = 2


@dataclass(frozen=True)
class Cluster:
    """The diagnoses of one category in a round, in log order, and the tasks they are about."""

    category: FailureCategory
    diagnoses: tuple[FailureDiagnosed, ...]
    tasks: Mapping[str, TaskSpecified]
    procedures: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """Task id -> the tool calls of its reference solution (the trace a window edit is drawn from)."""

    def examples(self, limit: int = 3) -> list[str]:
        return list(dict.fromkeys(d.explanation[:160] for d in self.diagnoses))[:limit]


@dataclass(frozen=True)
class Draft:
    patch: Patch
    why: str


Template = Callable[[Cluster, HarnessConfig, ToolDocs], Draft | None]
Failing = Sequence[tuple[TaskSpecified, tuple[str, ...]]]
"""Each failing task once with its solution's tool calls (``failing_traces``)."""


def _instruction(text: str, base: HarnessConfig, why: str) -> Draft | None:
    return None if text in base.instructions else Draft(AddInstruction(text=text), why)


def argument_grounding(cluster: Cluster, base: HarnessConfig, docs: ToolDocs) -> Draft | None:
    if (draft := window_edit(cluster, base, docs)) is not None:
        return draft
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


def failing_traces(cluster: Cluster) -> list[tuple[TaskSpecified, tuple[str, ...]]]:
    """Each failing task once (log order) with its solution's tool calls, when it has any."""
    seen = dict.fromkeys(d.task_id for d in cluster.diagnoses)
    return [(cluster.tasks[t], p) for t in seen if t in cluster.tasks and (p := cluster.procedures.get(t))]


def _step_tools(
    task: TaskSpecified, called: Sequence[str], compact: CompactContext, docs: ToolDocs, top_k: int
) -> list[str]:
    """The tools a compact context shows for ``task`` after ``called`` (no skill loaded) with ``top_k``."""
    specs = [s for name in task.tools if (s := docs(name)) is not None]
    goal = select_tools(task.goal, specs, top_k) if top_k else []
    return [t.name for t in step_tools(specs, (), called, goal, top_k, episode_successors(compact, task.goal))]


def _first_step_tools(task: TaskSpecified, docs: ToolDocs, compact: CompactContext, top_k: int) -> list[str]:
    """The tools a compact context's first step shows for ``task`` (nothing loaded or called yet) with ``top_k``."""
    return _step_tools(task, (), compact, docs, top_k)


def _steps_shown(task: TaskSpecified, calls: Sequence[str], compact: CompactContext, docs: ToolDocs) -> int:
    """How many of a solution's calls the compact context shows at the step that makes them (no skill loaded)."""
    k = compact.tool_top_k
    return sum(call in _step_tools(task, calls[:i], compact, docs, k) for i, call in enumerate(calls))


def successor_edit(failing: Failing, compact: CompactContext, docs: ToolDocs) -> Draft | None:
    """``add_tool_successors`` from the failing solutions' call sequences, when it shows more of their calls."""
    table = successor_table([p for _, p in failing])
    changed = {before: after for before, after in table.items() if compact.tool_successors.get(before) != after}
    if not changed:
        return None
    revised = compact.model_copy(update={"tool_successors": {**compact.tool_successors, **changed}})
    calls = sum(len(p) for _, p in failing)
    before = sum(_steps_shown(t, p, compact, docs) for t, p in failing)
    after = sum(_steps_shown(t, p, revised, docs) for t, p in failing)
    if after <= before:
        return None
    why = (
        f"the failing tasks' solutions make {calls} calls; their steps show the tool they call for {before} of them, "
        f"{after} when the tools that followed each call in those solutions are shown first"
    )
    return Draft(AddToolSuccessors(successors=changed), why)


def _short(tool: str) -> str:
    return tool.split(".", 1)[-1]


def _procedure_note(tool: str, procedures: Sequence[tuple[str, ...]]) -> str:
    """``step i of n: a > b > c``: the most common solution (deduplicated calls) that calls ``tool``."""
    plans = Counter(tuple(dict.fromkeys(p)) for p in procedures if tool in p)
    plan = min(plans, key=lambda p: (-plans[p], p))
    note = f"step {plan.index(tool) + 1} of {len(plan)}: " + " > ".join(_short(t) for t in plan)
    return note if len(note) <= MAX_NOTE_CHARS else note[: MAX_NOTE_CHARS - 3].rstrip() + "..."


def selection_edit(failing: Failing, compact: CompactContext, docs: ToolDocs) -> Draft | None:
    """``set_tool_selection``: one or two more tools a step, when that shows a failing solution's first tool."""
    k = compact.tool_top_k
    missed = [(t, p) for t, p in failing if p[0] not in _first_step_tools(t, docs, compact, k)]
    for more in range(k + 1, min(k + MAX_RAISE, MAX_SHOWN_TOOLS) + 1):
        found = sum(p[0] in _first_step_tools(t, docs, compact, more) for t, p in missed)
        if found:
            why = (
                f"the first tool of {found} of {len(failing)} failing tasks' solutions is not among the {k} tools "
                f"their first step shows; {more} shows it"
            )
            return Draft(SetToolSelection(tool_top_k=more), why)
    return None


def note_edit(failing: Failing, compact: CompactContext, docs: ToolDocs) -> Draft | None:
    """``set_tool_note``: the tool the failing solutions call most, without a note yet, gets its procedure."""
    votes = Counter(tool for _, p in failing for tool in set(p) if tool not in compact.tool_notes)
    shown = {tool for t, _ in failing for tool in _first_step_tools(t, docs, compact, compact.tool_top_k)}
    if not votes:
        return None
    # a note binds only where the tool is shown: tools the failing tasks' first steps list come first
    tool = min(votes, key=lambda name: (name not in shown, -votes[name], name))
    why = f"{votes[tool]} of {len(failing)} failing tasks' solutions call {tool}: its note now says where it fits"
    return Draft(SetToolNote(tool=tool, note=_procedure_note(tool, [p for _, p in failing])), why)


WINDOW_EDITS = (successor_edit, selection_edit, note_edit)
"""Tried in this order; the first that drafts a change wins (one incremental edit per revision)."""
WINDOW_KINDS = ("add_tool_successors", "set_tool_selection", "set_tool_note")
"""The patch kinds of ``WINDOW_EDITS``, in the same order."""


def window_edit(cluster: Cluster, base: HarnessConfig, docs: ToolDocs) -> Draft | None:
    """An incremental edit of what a compact context shows, from the failing tasks' traces; None without a compact
    profile or traces, or when every edit it would make is already in the base."""
    compact = base.compact
    failing = failing_traces(cluster)
    if compact is None or not failing:
        return None
    for edit in WINDOW_EDITS:
        if (draft := edit(failing, compact, docs)) is not None:
            return draft
    return None


def invalid_output(cluster: Cluster, base: HarnessConfig, docs: ToolDocs) -> Draft | None:
    return window_edit(cluster, base, docs)


def tool_routing(cluster: Cluster, base: HarnessConfig, docs: ToolDocs) -> Draft | None:
    if (draft := window_edit(cluster, base, docs)) is not None:
        return draft
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
    "invalid_output": invalid_output,
}
"""Category -> template, in tie-break order."""
