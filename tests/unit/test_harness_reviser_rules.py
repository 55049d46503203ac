"""The reviser's rule templates (one per category) and its choice among clusters, on crafted diagnoses."""

from __future__ import annotations

from functools import lru_cache

import pytest

from bus_schemas.envelope import Producer
from bus_schemas.events import CategoryScore, DevSetEvaluated, FailureDiagnosed, TaskSpecified, overall_score
from consumers.harness_reviser import rules
from consumers.harness_reviser.config import ReviserConfig
from consumers.harness_reviser.handler import Proposal, Skip, choose
from consumers.harness_reviser.spec import sandbox_docs, sandbox_procedure
from consumers.harness_reviser.writer import ModelWriter, clean
from harness_service.config import CompactContext, HarnessConfig, MemoryPolicy
from harness_service.policy.scripted import ScriptedPolicy
from harness_service.revisions import (
    MAX_SUCCESSORS,
    AddInstruction,
    AddSkill,
    AddToolSuccessors,
    EditSkill,
    SetBudgets,
    SetMemoryPolicy,
    SetToolNote,
    SetToolSelection,
    apply,
    skill_notes,
)
from harness_service.runner.budgets import effective_budgets
from harness_service.tools.selection import successor_table
from producers.tasks import build_task_suite

pytestmark = pytest.mark.unit
P = Producer(service="test", version="0")
BASE = HarnessConfig(name="tiny-planner", instructions="You operate phone apps through tools.")


@lru_cache(maxsize=1)
def train() -> tuple[TaskSpecified, ...]:
    return tuple(t for t in build_task_suite("run-test") if t.split == "train")


def tasks_of(apps: list[str], n: int) -> list[TaskSpecified]:
    return [t for t in train() if t.apps == apps][:n]


def diagnosed(category: str, tasks: list[TaskSpecified], round_: int = 1) -> list[FailureDiagnosed]:
    return [
        FailureDiagnosed(
            producer=P,
            run_id="run-r",
            round=round_,
            task_id=t.task_id,
            episode_id=f"ep-{category}-{i}",
            attribution=category,
            explanation=f"{category} failure {i}",
            confidence=0.8,
            diagnoser_version="v",
        )
        for i, t in enumerate(tasks)
    ]


def dev(rates: dict[str, float] | None = None) -> DevSetEvaluated:
    rates = {"tool_use": 0.5, "memory": 0.5, "skills": 0.5, "sub_agent": 0.5, **(rates or {})}
    return DevSetEvaluated(
        producer=P,
        run_id="run-r",
        round=1,
        model_name="planner",
        model_version="1",
        harness_version="tiny-planner/1",
        per_category={k: CategoryScore(success_rate=v, tasks=8) for k, v in rates.items()},
        overall=overall_score(rates),
        tokens_per_task=1.0,
        tool_calls_per_task=1.0,
    )


def cluster(category: str, tasks: list[TaskSpecified]) -> rules.Cluster:
    return rules.Cluster(category, tuple(diagnosed(category, tasks)), {t.task_id: t for t in tasks})  # type: ignore[arg-type]


def template(category: str, tasks: list[TaskSpecified], base: HarnessConfig = BASE) -> rules.Draft | None:
    return rules.TEMPLATES[category](cluster(category, tasks), base, sandbox_docs)


@pytest.mark.parametrize(
    "category, text",
    [
        ("argument_grounding", rules.GROUNDING),
        ("premature_termination", rules.FINISH),
        ("hallucinated_completion", rules.FACTS),
        ("recovery", rules.RECOVERY),
    ],
)
def test_instruction_templates_add_their_line_once(category, text):
    draft = template(category, tasks_of(["clock"], 3))
    assert draft is not None and draft.patch == AddInstruction(text=text)
    revised = apply(BASE, draft.patch)
    assert text in revised.instructions and len(text) <= 80
    again = template(category, tasks_of(["clock"], 3), revised)
    assert again is None or again.patch.kind != "add_instruction"  # never repeats what the base already says


def _steps(base: HarnessConfig, tasks: list[TaskSpecified]) -> list[int]:
    return [effective_budgets(base.budgets, t.budgets).max_steps for t in tasks]


def test_recovery_raises_the_step_budget_only_as_far_as_the_tasks_allow():
    base = apply(BASE, AddInstruction(text=rules.RECOVERY))
    capped_by_task = tasks_of(["clock"], 3)  # their own budgets allow 20 steps, the harness 30: more cannot bind
    assert {t.budgets.max_steps for t in capped_by_task} == {20} and template("recovery", capped_by_task, base) is None
    roomy = tasks_of(["travel"], 3)  # 40 steps allowed
    draft = template("recovery", roomy, base)
    assert draft is not None and draft.patch == SetBudgets(max_steps=base.budgets.max_steps + 5)
    revised = apply(base, draft.patch)
    assert all(
        after > before for before, after in zip(_steps(base, roomy), _steps(revised, roomy), strict=True)
    )  # it binds
    assert template("recovery", roomy, revised).patch == SetBudgets(max_steps=40)  # up to the tasks' cap, no further
    assert template("recovery", roomy, apply(revised, SetBudgets(max_steps=40))) is None


def test_state_tracking_retrieves_more_memories_only_where_tasks_have_them():
    remembered = tasks_of(["travel"], 3)  # three seeded facts each
    assert {len(t.initial_conditions.memories) for t in remembered} == {3}
    assert template("state_tracking", remembered).patch == AddInstruction(
        text=rules.STATE
    )  # top-5 already reaches all 3
    few = BASE.model_copy(update={"memory": MemoryPolicy(retrieve_top_k=1)})
    assert template("state_tracking", remembered, few).patch == SetMemoryPolicy(retrieve_top_k=3)
    off = BASE.model_copy(update={"memory": MemoryPolicy(enabled=False, retrieve_top_k=0)})
    assert template("state_tracking", remembered, off).patch == SetMemoryPolicy(enabled=True, retrieve_top_k=2)
    unseeded = BASE.model_copy(update={"memory": MemoryPolicy(seed_from_task=False)})
    assert template("state_tracking", remembered, unseeded).patch == SetMemoryPolicy(seed_from_task=True)
    assert template("state_tracking", tasks_of(["clock"], 3), off).patch == AddInstruction(
        text=rules.STATE
    )  # no facts to recall


def test_tool_routing_on_one_app_adds_a_skill_note_naming_tools_of_that_app():
    draft = template("tool_routing", tasks_of(["clock"], 4))
    assert draft is not None and isinstance(draft.patch, AddSkill) and draft.patch.name == "clock"
    assert draft.patch.tools and all(tool.startswith("clock.") for tool in draft.patch.tools)
    assert "clock.set_alarm" in draft.patch.tools  # the goals are "Set an alarm for ..."
    revised = apply(BASE, draft.patch)
    assert template("tool_routing", tasks_of(["clock"], 4), revised).patch == AddInstruction(text=rules.ROUTING)
    stale = apply(BASE, AddSkill(name="clock", tools=["clock.list_alarms"]))
    edit = template("tool_routing", tasks_of(["clock"], 4), stale)
    assert (
        isinstance(edit.patch, EditSkill)
        and skill_notes(apply(stale, edit.patch))["clock"] == skill_notes(revised)["clock"]
    )


def test_tool_routing_spread_over_apps_adds_a_routing_instruction():
    spread = tasks_of(["clock"], 1) + tasks_of(["weather"], 1) + tasks_of(["food"], 1) + tasks_of(["travel"], 1)
    assert template("tool_routing", spread).patch == AddInstruction(text=rules.ROUTING)


def _choose(diagnoses, base=BASE, cfg=None, dev_result=None, writer=None):
    cfg = cfg or ReviserConfig()
    tasks = {t.task_id: t for t in train()}
    return choose(
        dev_result or dev(),
        diagnoses,
        {d.task_id: tasks[d.task_id] for d in diagnoses},
        base,
        cfg,
        sandbox_docs,
        writer,
    )


def test_nothing_reaching_min_cluster_is_a_skip_naming_the_counts():
    result = _choose(
        diagnosed("recovery", tasks_of(["clock"], 2)) + diagnosed("environment_error", tasks_of(["food"], 5))
    )
    assert isinstance(result, Skip) and "min_cluster=3" in result.reason and "recovery 2" in result.reason
    assert isinstance(
        _choose(diagnosed("recovery", tasks_of(["clock"], 2)), cfg=ReviserConfig(min_cluster=2)), Proposal
    )


def test_the_largest_cluster_wins_and_ties_go_to_the_weaker_dev_capability():
    memory = [t for t in train() if t.category == "memory"][:3]
    tool_use = [t for t in train() if t.category == "tool_use"][:3]
    big = _choose(diagnosed("recovery", tool_use) + diagnosed("argument_grounding", tool_use[:2] + memory))
    assert isinstance(big, Proposal) and big.cluster.category == "argument_grounding"  # 5 vs 3
    tie = diagnosed("premature_termination", tool_use) + diagnosed("recovery", memory)
    weak_memory = _choose(tie, dev_result=dev({"memory": 0.1, "tool_use": 0.9}))
    weak_tools = _choose(tie, dev_result=dev({"memory": 0.9, "tool_use": 0.1}))
    assert weak_memory.cluster.category == "recovery" and weak_tools.cluster.category == "premature_termination"
    assert "dev overall" in weak_memory.summary and list(weak_memory.cluster.diagnoses) == tie[3:]


def test_a_cluster_whose_fix_is_already_in_the_base_yields_to_the_next():
    base = apply(BASE, AddInstruction(text=rules.GROUNDING))
    ds = diagnosed("argument_grounding", tasks_of(["clock"], 5)) + diagnosed(
        "premature_termination", tasks_of(["clock"], 3)
    )
    result = _choose(ds, base=base)
    assert isinstance(result, Proposal) and result.patch == AddInstruction(text=rules.FINISH)
    only = _choose(ds[:5], base=base)
    assert isinstance(only, Skip) and "already in the base" in only.reason


def test_a_configured_model_writes_the_instruction_and_bad_output_falls_back_to_the_template():
    ds = diagnosed("argument_grounding", tasks_of(["clock"], 3))
    written = _choose(
        ds, writer=ModelWriter(ScriptedPolicy(["Use the exact alarm time and label from the goal."], "writer"))
    )
    assert written.patch == AddInstruction(text="Use the exact alarm time and label from the goal.")
    assert "scripted:writer" in written.summary
    for bad in ['<action>{"tool": "x"}</action>', "ok", "x" * 300, BASE.instructions]:
        fallback = _choose(ds, writer=ModelWriter(ScriptedPolicy([bad], "writer")))
        assert fallback.patch == AddInstruction(text=rules.GROUNDING) and "template" in fallback.summary
    assert clean('Instruction: "Check ids twice before acting."\nmore') == "Check ids twice before acting."


COMPACT = BASE.model_copy(update={"compact": CompactContext(tool_top_k=1)})


def traced(category: str, tasks: list[TaskSpecified]) -> rules.Cluster:
    """A cluster with each task's reference-solution trace, as the reviser's spec gives it."""
    traces = {t.task_id: calls for t in tasks if (calls := sandbox_procedure(t))}
    return rules.Cluster(category, tuple(diagnosed(category, tasks)), {t.task_id: t for t in tasks}, traces)  # type: ignore[arg-type]


def test_the_solution_trace_of_a_template_task_is_its_reference_tool_calls():
    [task] = tasks_of(["clock"], 1)
    calls = sandbox_procedure(task)
    assert calls and all(name in task.tools for name in calls)
    assert sandbox_procedure(task.model_copy(update={"backend": "device"})) is None


def test_a_window_edit_shows_more_tools_when_the_first_needed_tool_ranks_just_below_the_shown_ones():
    pool = [t for t in train() if t.category == "tool_use"]
    first = {t.task_id: calls[0] for t in pool if (calls := sandbox_procedure(t))}

    compact = COMPACT.compact
    assert compact is not None

    def shows(task: TaskSpecified, top_k: int) -> bool:
        return first[task.task_id] in rules._first_step_tools(task, sandbox_docs, compact, top_k)

    def edit(tasks: list[TaskSpecified]) -> rules.Draft | None:
        return rules.selection_edit(rules.failing_traces(traced("invalid_output", tasks)), compact, sandbox_docs)

    near = [t for t in pool if t.task_id in first and not shows(t, 1) and shows(t, 1 + rules.MAX_RAISE)]
    far = [t for t in pool if t.task_id in first and not shows(t, 1 + rules.MAX_RAISE)]
    assert near and far, "some goals rank their solution's first tool just below the top, some far below"
    draft = edit(far[:2] + near[:2])
    assert draft is not None and isinstance(draft.patch, SetToolSelection)
    top_k = draft.patch.tool_top_k
    assert top_k is not None and 1 < top_k <= 1 + rules.MAX_RAISE
    assert any(shows(t, top_k) for t in near[:2])  # it binds: a failing task's first step now shows that tool
    assert edit(far[:4]) is None  # more tools would not reach them (the note edit comes next)


def test_a_window_edit_first_shows_the_tools_that_followed_each_call_in_the_failing_solutions():
    tasks = [t for t in train() if t.category == "memory"][:12]
    failing = rules.failing_traces(traced("tool_routing", tasks))
    assert COMPACT.compact is not None and len(failing) == len(tasks)
    draft = rules.window_edit(traced("tool_routing", tasks), COMPACT, sandbox_docs)
    assert draft is not None and isinstance(draft.patch, AddToolSuccessors)
    table = successor_table([p for _, p in failing])
    assert draft.patch.successors == table and "" in table
    for _, calls in failing:  # every call of a solution is among the successors of the call before it
        for before, call in zip(("", *calls), calls, strict=False):
            assert call == before or call in table[before] or len(table[before]) == MAX_SUCCESSORS
    revised = apply(COMPACT, draft.patch)
    assert revised.compact is not None
    shown_before = sum(rules._steps_shown(t, p, COMPACT.compact, sandbox_docs) for t, p in failing)
    shown_after = sum(rules._steps_shown(t, p, revised.compact, sandbox_docs) for t, p in failing)
    assert shown_after > shown_before  # it binds: more solution steps show the tool they call
    assert f"show the tool they call for {shown_before} " in draft.why and f"{shown_after} when" in draft.why
    again = rules.window_edit(traced("tool_routing", tasks), revised, sandbox_docs)
    assert again is None or not isinstance(again.patch, AddToolSuccessors)  # incremental: learned once


def test_a_window_edit_notes_the_most_called_tool_with_its_procedure_once():
    tasks = tasks_of(["clock"], 4)
    base = COMPACT.model_copy(update={"compact": CompactContext(tool_top_k=6)})  # every call is shown already
    assert base.compact is not None
    assert rules.successor_edit(rules.failing_traces(traced("tool_routing", tasks)), base.compact, sandbox_docs) is None
    draft = rules.window_edit(traced("tool_routing", tasks), base, sandbox_docs)
    assert draft is not None and isinstance(draft.patch, SetToolNote)
    tool, note = draft.patch.tool, draft.patch.note
    assert tool.startswith("clock.") and note.startswith("step ") and tool.split(".")[1] in note
    revised = apply(base, draft.patch)
    again = rules.window_edit(traced("tool_routing", tasks), revised, sandbox_docs)
    assert again is None or (isinstance(again.patch, SetToolNote) and again.patch.tool != tool)  # incremental
    assert rules.window_edit(traced("tool_routing", tasks), BASE, sandbox_docs) is None  # no compact profile
    assert rules.window_edit(cluster("tool_routing", tasks), base, sandbox_docs) is None  # no traces


def test_with_a_compact_profile_the_reviser_proposes_a_window_edit_for_invalid_outputs():
    tasks = {t.task_id: t for t in train()}
    ds = diagnosed("invalid_output", tasks_of(["clock"], 4))
    result = choose(
        dev(),
        ds,
        {d.task_id: tasks[d.task_id] for d in ds},
        COMPACT,
        ReviserConfig(),
        sandbox_docs,
        None,
        sandbox_procedure,
    )
    assert isinstance(result, Proposal) and result.patch.kind in rules.WINDOW_KINDS
    assert result.revised.instructions == COMPACT.instructions  # the window changes, not the instructions
    assert isinstance(_choose(ds), Skip)  # without a compact profile invalid_output has no template


def test_a_configured_model_writes_the_note_of_a_window_edit_and_bad_output_falls_back_to_the_procedure():
    tasks = {t.task_id: t for t in train()}
    ds = diagnosed("invalid_output", tasks_of(["clock"], 4))
    base = COMPACT.model_copy(update={"compact": CompactContext(tool_top_k=6)})

    def proposal(reply: str) -> Proposal:
        writer = ModelWriter(ScriptedPolicy([reply], "writer"))
        found = {d.task_id: tasks[d.task_id] for d in ds}
        result = choose(dev(), ds, found, base, ReviserConfig(), sandbox_docs, writer, sandbox_procedure)
        assert isinstance(result, Proposal) and isinstance(result.patch, SetToolNote)
        return result

    written = proposal("Note: set the alarm with the goal's exact time")
    assert written.patch.note == "set the alarm with the goal's exact time" and "scripted:writer" in written.summary
    assert written.revised.compact is not None and written.patch.note in written.revised.compact.tool_notes.values()
    template = rules.window_edit(traced("invalid_output", tasks_of(["clock"], 4)), base, sandbox_docs)
    assert template is not None
    for bad in ['<action>{"tool": "x"}</action>', "ok", "x " * 80]:
        fallback = proposal(bad)
        assert fallback.patch == template.patch and "template" in fallback.summary
