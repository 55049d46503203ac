"""The bfcl plugin: BFCL multi-turn tasks through our real runner, judged by BFCL's own notion of success."""

from __future__ import annotations

import pytest

pytest.importorskip("bfcl_eval", reason="bfcl-eval is not installed (make install installs it without dependencies)")

from bus_schemas.actions import Action, Clarify, Finish, ToolCall  # noqa: E402
from bus_schemas.events.tasks import TaskSpecified  # noqa: E402
from harness_service.config import HarnessBudgets, HarnessConfig  # noqa: E402
from harness_service.policy.scripted import ScriptedPolicy  # noqa: E402
from harness_service.runner.episode import Harness, RunIds, run_episode  # noqa: E402
from infra.cli.suites import MemoryBlobs  # noqa: E402
from producers.backends import plugins  # noqa: E402
from producers.backends.base import Backend  # noqa: E402
from producers.backends.bfcl.backend import BfclBackend  # noqa: E402
from producers.backends.bfcl.tasks import (  # noqa: E402
    NEXT_TURN,
    bfcl_tasks,
    expected_calls,
    gold_script,
    ground_truth,
)
from producers.backends.bfcl.verify import verify  # noqa: E402

pytestmark = pytest.mark.unit
SAMPLE = 20


@pytest.fixture(scope="module")
def tasks() -> list[TaskSpecified]:
    return bfcl_tasks("multi_turn_base", limit=SAMPLE)


def run(task: TaskSpecified, script: list[Action], backend: Backend | None = None):
    backend = backend or BfclBackend()
    steps = task.budgets.max_steps if task.budgets is not None else 30
    harness = Harness(
        config=HarnessConfig(budgets=HarnessBudgets(max_steps=steps)),
        policy=ScriptedPolicy(script, "test"),
        blobs=MemoryBlobs(),
        events=lambda _: None,
    )
    outcome = run_episode(harness, task, backend, RunIds(run_id="bfcl-test"))
    return outcome, verify(task, backend.evidence(), outcome.answer or "")


def test_the_backend_is_found_through_its_entry_point_and_keeps_the_protocol() -> None:
    backend = plugins.make_backend("bfcl")
    assert isinstance(backend, BfclBackend) and isinstance(backend, Backend)
    assert (backend.name, backend.trust) == ("bfcl", "exact")
    assert plugins.judge("bfcl") is verify


def test_tasks_carry_the_world_and_the_later_turns_as_the_user(tasks: list[TaskSpecified]) -> None:
    task = tasks[0]
    assert task.backend == "bfcl" and task.task_id == "bfcl.multi_turn_base_0" and task.source.kind == "external"
    assert task.backend_params["involved_classes"] == ["TwitterAPI", "GorillaFileSystem"]
    assert task.user is not None and len(task.user.replies) == task.backend_params["turns"] - 1 == 3
    assert "ground_truth" not in task.backend_params  # the reference stays in the wheel


def test_tools_are_app_action_names_without_excluded_functions(tasks: list[TaskSpecified]) -> None:
    backend = BfclBackend()
    backend.reset(tasks[0])
    names = {t.name for t in backend.tools()}
    assert {"gorilla_file_system.cd", "posting_api.post_tweet"} <= names
    assert "gorilla_file_system.cp" not in names  # the entry's excluded_function
    cd = next(t for t in backend.tools() if t.name == "gorilla_file_system.cd")
    assert cd.parameters["type"] == "object" and cd.parameters["required"] == ["folder"]


def test_gold_replay_passes_through_the_real_runner_and_the_empty_policy_fails(tasks: list[TaskSpecified]) -> None:
    backend = BfclBackend()
    for task in tasks:
        outcome, result = run(task, gold_script(task), backend)
        assert result.outcome, (task.task_id, outcome.reason, result.criteria)
        assert outcome.reason == "finished"
        _, empty = run(task, [], backend)
        assert not empty.outcome, task.task_id


def test_a_different_argument_fails_the_state_check(tasks: list[TaskSpecified]) -> None:
    task = tasks[0]  # turn 1: cd document, mkdir temp, mv final_report.pdf temp
    script = [
        ToolCall(name="gorilla_file_system.mkdir", args={"dir_name": "tmp"})
        if a == ToolCall(name="gorilla_file_system.mkdir", args={"dir_name": "temp"})
        else a
        for a in gold_script(task)
    ]
    _, result = run(task, script)
    state = next(c for c in result.criteria if c.id == "bfcl.state")
    assert not result.outcome and not state.passed and "GorillaFileSystem.root" in state.detail


def test_invalid_arguments_are_tool_errors_not_exceptions(tasks: list[TaskSpecified]) -> None:
    backend = BfclBackend()
    backend.reset(tasks[0])
    bad_type = backend.step(ToolCall(name="gorilla_file_system.cd", args={"folder": 3}))
    missing = backend.step(ToolCall(name="gorilla_file_system.cd", args={}))
    unknown = backend.step(ToolCall(name="gorilla_file_system.cp", args={"source": "a", "destination": "b"}))
    assert bad_type.error is not None and bad_type.error.code == "invalid_argument"
    assert missing.error is not None and missing.error.code == "invalid_argument"
    assert unknown.error is not None and unknown.error.code == "unknown_tool"
    assert [c["ok"] for c in backend.evidence().calls] == [False, False, False]


def test_call_criteria_are_judged_when_the_task_asks_for_them() -> None:
    task = bfcl_tasks(limit=1, call_criteria=True)[0]
    assert [c.kind for c in task.criteria] == ["call_order"]
    _, gold = run(task, gold_script(task))
    assert gold.outcome and [c.id for c in gold.criteria] == ["bfcl.state", "bfcl.response", "bfcl.call_order"]
    _, lazy = run(task, [Finish(answer="done")])
    assert not next(c for c in lazy.criteria if c.id == "bfcl.call_order").passed


def test_the_initial_state_is_one_object_per_task_for_lean_evidence(tasks: list[TaskSpecified]) -> None:
    backend = BfclBackend()
    backend.reset(tasks[1])
    first = backend.evidence().initial_state
    backend.reset(tasks[1])
    assert backend.evidence().initial_state is first


def test_the_judge_agrees_with_bfcls_own_checker_on_gold_and_on_a_call_left_out(tasks: list[TaskSpecified]) -> None:
    """BFCL's ``multi_turn_checker`` (state and responses after each turn) against ours (once, at the end)."""
    from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker import multi_turn_checker

    backend = BfclBackend()
    for n, task in enumerate(tasks[:10]):
        params = task.backend_params
        truth, calls = ground_truth("multi_turn_base")[params["bfcl_id"]], expected_calls(params)
        for dropped in [None, *range(len(truth))]:  # the gold, then each turn without its last call
            texts = [t[:-1] if i == dropped else t for i, t in enumerate(truth)]
            entry = {k: params[k] for k in ("initial_config", "involved_classes")} | {"id": params["bfcl_id"]}
            model = f"flywheel_test_{n}_{dropped}"
            theirs = multi_turn_checker([[t] for t in texts], truth, entry, "multi_turn_base", model)["valid"]
            script: list[Action] = []
            for i, turn in enumerate(calls):
                script += turn[:-1] if i == dropped else turn
                script += [Clarify(question=NEXT_TURN)] if i < len(calls) - 1 else [Finish(answer="done")]
            _, ours = run(task, script, backend)
            assert ours.outcome == theirs, (task.task_id, dropped, ours.criteria)
