"""New tasks are executable, non-trivial, reproducible, of the requested kind, and never copies of held-out tasks."""

from __future__ import annotations

import pytest
from consumer_factory import IDS, P, suite

from bus_schemas.events import TaskGenerationRequested
from consumers.task_constructor.handler import construct, fingerprint, valid
from consumers.task_constructor.spec import TaskConstructor
from infra.blobs.filesystem import FileBlobStore
from infra.bootstrap import Ports, open_bus
from infra.events import ensure_topics, publish_all
from producers.backends.sandbox.backend import SandboxBackend
from producers.backends.sandbox.catalog import base_world

pytestmark = pytest.mark.unit


def _request(**kw):
    return TaskGenerationRequested(
        **{**IDS, "request_id": "run-test/round-1/memory", "capability": "memory", "count": 4, **kw}
    )


def test_generated_tasks_pass_the_reference_solver_and_fail_the_no_op():
    made = construct(_request(), [], set(), P)
    assert len(made) == 4 and len({t.task_id for t in made}) == 4
    backend = SandboxBackend()
    assert all(valid(t, backend) for t in made)
    assert all(t.category == "memory" and t.split == "train" and t.source.kind == "generated" for t in made)
    assert all(t.causation_id is not None and t.run_id == "run-test" for t in made)
    # judged by the judge of the backend the task names: one no plugin judges is never valid
    assert not any(valid(t.model_copy(update={"backend": "unjudged"}), backend) for t in made)


def test_construction_is_reproducible_from_the_request():
    a, b = construct(_request(), [], set(), P), construct(_request(), [], set(), P)
    assert [t.task_id for t in a] == [t.task_id for t in b] and [fingerprint(t) for t in a] == [
        fingerprint(t) for t in b
    ]
    assert [t.task_id for t in construct(_request(request_id="other"), [], set(), P)] != [t.task_id for t in a]


def test_a_rerun_of_the_loop_generates_the_same_worlds_and_another_round_other_ones():
    """The run id that starts a reweighter's request id does not seed the worlds: a second run with the same seed
    is reproducible past its first generated tasks. The round and category still do."""
    a = construct(_request(), [], set(), P)
    rerun = construct(_request(run_id="run-again", request_id="run-again/round-1/memory"), [], set(), P)
    assert [fingerprint(t) for t in rerun] == [fingerprint(t) for t in a]
    assert all(t.run_id == "run-again" for t in rerun)
    later = construct(_request(request_id="run-test/round-2/memory"), [], set(), P)
    assert not {fingerprint(t) for t in later} & {fingerprint(t) for t in a}


def test_generated_tasks_name_people_the_built_in_suites_never_show():
    """The issue's "new entity pools": a generated task's world draws the train split's new entities as well."""
    made = construct(_request(count=8), [], set(), P)
    built_in = {p for seed in range(6) for p in _people(base_world(seed, "train"))}
    generated = {p for t in made for p in _people(base_world(t.initial_conditions.seed, "train"))}
    assert generated - built_in
    assert any(
        name in t.goal or any(name in m.content for m in t.initial_conditions.memories)
        for t in made
        for name in generated - built_in
    )


def _people(world):
    return {c["name"] for c in world["contacts"]["contacts"].values()}


def test_held_out_tasks_are_never_reproduced():
    first = construct(_request(count=1), [], set(), P)[0]
    again = construct(_request(count=1), [], {fingerprint(first)}, P)[0]
    assert fingerprint(again) != fingerprint(first)


def test_the_consumer_holds_out_the_logs_other_splits_including_tasks_that_arrive_between_requests(tmp_path):
    """The consumer fingerprints each task of the log once and keeps the sets across requests: a dev task appended
    after the first request is held out from the next one."""
    ports = Ports(open_bus(f"sqlite:///{tmp_path}/bus.db"), FileBlobStore(tmp_path / "blobs"), None)
    ensure_topics(ports.bus)
    constructor = TaskConstructor()
    try:
        [first] = constructor.handle(_request(count=1), ports)
        [same] = constructor.handle(_request(count=1), ports)  # train tasks hold nothing out of a train request
        assert fingerprint(same) == fingerprint(first)
        publish_all(ports.bus, [first.model_copy(update={"split": "dev", "task_id": "dev/copy"})])
        [again] = constructor.handle(_request(count=1), ports)
        assert fingerprint(again) != fingerprint(first)
        assert constructor.handle(_request(count=1, split="dev"), ports)[0].split == "dev"
    finally:
        ports.close()


def test_seed_tasks_yield_harder_variants():
    seed = next(t for t in suite() if t.category == "tool_use" and t.difficulty == 1 and t.split == "train")
    made = construct(_request(capability="tool_use", seed_task_ids=[seed.task_id]), [seed], set(), P)
    assert made and all(t.difficulty > 1 for t in made) and all(t.source.parent_task_id == seed.task_id for t in made)


def test_non_sandbox_backends_are_refused_clearly():
    with pytest.raises(ValueError, match="sandbox tasks only"):
        construct(_request(backend="device"), [], set(), P)


def test_cross_app_recombinations_need_both_goals_and_pass_the_checks():
    from producers.backends.sandbox.verify import verify
    from producers.tasks.runner import run_episode
    from producers.tasks.solver import reference_solver
    from producers.tasks.templates import TEMPLATES

    made = construct(_request(count=8), [], set(), P)
    mixed = [t for t in made if "+" in (t.source.template_id or "")]
    assert mixed, [t.source.template_id for t in made]
    backend = SandboxBackend()
    for task in mixed:
        first, second = (TEMPLATES[p] for p in task.source.template_id.split("+"))
        assert not set(first.apps) & set(second.apps) and set(task.apps) == set(first.apps) | set(second.apps)
        assert {c.id.split(".")[0] for c in task.criteria if c.kind != "no_collateral"} == {"a", "b"}
        assert valid(task, backend) and task.split == "train" and task.source.kind == "generated"
        half = task.model_copy(update={"source": task.source.model_copy(update={"template_id": first.id})})
        plan = reference_solver(half)
        only_first = run_episode(backend, task, lambda _t, plan=plan: plan)
        assert not verify(task, only_first.evidence, only_first.answer).outcome  # the second goal is checked too


def test_a_template_that_cannot_build_an_instance_in_a_world_is_skipped_not_fatal(monkeypatch):
    import random

    from consumers.task_constructor import generate
    from producers.tasks.template import NoInstance
    from producers.tasks.templates.sub_agent import _distinct

    class _Ctx:
        rng = random.Random(0)

    rows = [{"v": 1}] * 40 + [{"v": 2}, {"v": 3}]  # 50 random draws of 3 rarely hold three values
    assert sorted(r["v"] for r in _distinct(_Ctx(), rows, "v", 3)) == [1, 2, 3]  # type: ignore[arg-type]
    with pytest.raises(NoInstance, match="no 3 rows with distinct v"):
        _distinct(_Ctx(), [{"v": 1}, {"v": 2}, {"v": 2}], "v", 3)  # type: ignore[arg-type]

    real = generate.make_task

    def every_other_fails(template, run_id, seed, split, k):  # noqa: ANN001
        if k % 2 == 0:
            raise NoInstance("no 3 rows with distinct high_c")
        return real(template, run_id, seed, split, k)

    monkeypatch.setattr(generate, "make_task", every_other_fails)
    made = construct(_request(request_id="run-test/round-1/sub_agent", capability="sub_agent", count=2), [], set(), P)
    assert len(made) == 2 and all(t.category == "sub_agent" for t in made)


def _halves():
    """Two train instances over disjoint apps in one world that ``combine`` accepts."""
    from consumers.task_constructor.recombine import combine

    tasks = [t for t in suite() if t.split == "train"]
    for a in tasks:
        for b in tasks:
            if combine(a, b) is not None:
                return a, b
    raise AssertionError("no combinable pair in the suite")


def test_recombined_call_criteria_judge_the_combined_trace_as_each_half_meant():
    from bus_schemas.events import CallForbiddenCriterion, CallRequiredCriterion, MaxCallsCriterion
    from consumers.task_constructor.recombine import combine

    a, b = _halves()

    def with_calls(task, *extra):
        return task.model_copy(update={"criteria": [*task.criteria, *extra]})

    required = CallRequiredCriterion(id="req", description="r", tool=a.tools[0])
    own_forbidden = CallForbiddenCriterion(id="no_own", description="f", tool=a.tools[-1], where={"x": 1})
    other_forbidden = CallForbiddenCriterion(id="no_other", description="f", tool=b.tools[0])
    bound = MaxCallsCriterion(id="bound", description="m", limit=5)
    tool_bound = MaxCallsCriterion(id="tool_bound", description="m", limit=2, tool=a.tools[0])
    one_sided = combine(with_calls(a, required, own_forbidden, other_forbidden, bound, tool_bound), b)
    assert one_sided is not None
    ids = {c.id for c in one_sided.criteria}
    assert {"a.req", "a.no_own", "a.tool_bound"} <= ids  # still true of a's calls within the combined trace
    assert "a.no_other" not in ids  # b may need that tool
    assert not any(isinstance(c, MaxCallsCriterion) and c.tool is None for c in one_sided.criteria)  # b's calls count

    both = combine(with_calls(a, bound), with_calls(b, bound.model_copy(update={"limit": 7})))
    assert both is not None
    totals = [c for c in both.criteria if isinstance(c, MaxCallsCriterion) and c.tool is None]
    assert [(c.id, c.limit) for c in totals] == [("max_calls", 12)]
