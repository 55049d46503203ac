"""The dev evaluator: a finished dev-evaluation group becomes one DevSetEvaluated; the better version goes to
production."""

from __future__ import annotations

import pytest
from consumer_factory import IDS, P, suite, verdict

from bus_schemas.events import EpisodeEnded, overall_score
from consumers.dev_evaluator.handler import baseline, group_id, is_better, kind_of, model_ref
from consumers.dev_evaluator.spec import DevEvaluator
from consumers.round_controller.handler import evaluate, start_round
from infra.bootstrap import Ports, open_blob_store, open_bus, open_registry
from infra.events import ensure_topics, publish_all

pytestmark = pytest.mark.unit


@pytest.fixture
def ports(tmp_path):
    bus = open_bus(f"sqlite:///{tmp_path}/bus.db")
    ensure_topics(bus)
    registry = open_registry(f"sqlite:///{tmp_path}/mlflow.db")
    for _ in range(2):
        registry.register_version("planner", registry.start_run("t"), "checkpoint")
    yield Ports(bus, open_blob_store(f"file:///{tmp_path}/blobs"), registry)
    bus.close()


def test_group_ids_name_the_kind_and_versions():
    group = group_id("harness", "planner/3", "tiny/2")
    assert kind_of(group) == "harness" and kind_of(group_id("model", "scripted:reference", "default")) == "model"
    assert kind_of("plan-7") is None and kind_of(None) is None and kind_of("dev-eval:other:x:y") is None
    assert model_ref("planner/3") == ("planner", "3") and model_ref("models:/planner@production") == (
        "planner",
        "production",
    )
    assert model_ref("scripted:reference") == ("scripted", "reference")


def _dev_round(ports, policy="planner/2", harness="h0", kind="model", winners=("tool_use",)):
    tasks = [t for t in suite() if t.split == "dev"]
    started = start_round("run-test", 0, "p0", harness, 4, P)
    publish_all(ports.bus, [*suite(), started])
    requests = evaluate(started, started, tasks, policy, harness, P, kind)
    publish_all(ports.bus, requests)
    by_id = {t.task_id: t for t in tasks}
    verdicts, ends = [], []
    for r in requests:
        task = by_id[r.task_id]
        ok = task.category in winners
        ids = {**IDS, "task_id": r.task_id, "episode_id": r.episode_id}
        ends.append(
            EpisodeEnded(
                **ids, reason="finished", steps=2, input_tokens=10, output_tokens=5, tool_calls=2, wall_time_s=1.0
            )
        )
        verdicts.append(verdict(task, None if ok else {task.criteria[0].id}, episode_id=r.episode_id))
    return requests, ends, verdicts


def test_the_last_verdict_of_a_group_publishes_its_scores_once(ports):
    requests, ends, verdicts = _dev_round(ports)
    publish_all(ports.bus, ends)
    evaluator = DevEvaluator()
    outputs = []
    for v in verdicts:
        publish_all(ports.bus, [v])
        outputs += evaluator.handle(v, ports)
    [evaluated] = outputs
    tool_use = [r for r in requests if next(t for t in suite() if t.task_id == r.task_id).category == "tool_use"]
    assert evaluated.per_category["tool_use"].success_rate == 1.0 and evaluated.per_category["tool_use"].tasks == len(
        tool_use
    )
    assert evaluated.per_category["memory"].success_rate == 0.0
    assert evaluated.overall == pytest.approx(
        overall_score({"tool_use": 1.0, "memory": 0.0, "skills": 0.0, "sub_agent": 0.0})
    )
    assert (evaluated.model_name, evaluated.model_version, evaluated.harness_version, evaluated.evaluates) == (
        "planner",
        "2",
        "h0",
        "model",
    )
    assert (evaluated.tokens_per_task, evaluated.tool_calls_per_task, evaluated.causation_id) == (
        15.0,
        2.0,
        min(requests, key=lambda r: r.task_id).event_id,
    )
    publish_all(ports.bus, [evaluated])
    assert DevEvaluator().handle(verdicts[-1], ports) == []  # a redelivery in a fresh process finds it on the log
    assert evaluator.handle(verdicts[-1], ports) == []


def test_episodes_outside_dev_groups_are_ignored(ports):
    task = next(t for t in suite() if t.split == "train")
    publish_all(ports.bus, [*suite()])
    assert DevEvaluator().handle(verdict(task, episode_id="ep-other"), ports) == []


def test_the_winner_is_promoted_in_the_registry(ports):
    registry = ports.registry
    requests, ends, verdicts = _dev_round(ports)
    publish_all(ports.bus, [*ends, *verdicts])
    [evaluated] = DevEvaluator().handle(verdicts[-1], ports)
    assert registry.resolve("planner@production").version == "2"
    assert registry.resolve("planner/2").tags["dev_overall"] == f"{evaluated.overall:.6f}"


def test_baselines_models_against_the_best_model_and_revisions_against_the_same_model():
    from test_round_controller import _evaluated

    first, worse, better = _evaluated("1", 0.5), _evaluated("2", 0.25), _evaluated("3", 0.75)
    assert is_better(first, []) and not is_better(worse, [first]) and is_better(better, [first, worse])
    assert not is_better(_evaluated("4", 0.5), [first])  # a tie keeps the incumbent
    revision = _evaluated("2", 0.5, harness="tiny/2", evaluates="harness")
    assert baseline(revision, [first, worse]) is worse and is_better(revision, [first, worse])
    assert not is_better(_evaluated("9", 0.9, evaluates="harness"), [first])  # no evaluation of that model: no baseline


def test_an_external_suites_tasks_score_apart_and_never_move_overall():
    from consumers.dev_evaluator.handler import summarise
    from consumers.round_controller.handler import dev_slice

    sandbox = [t for t in suite() if t.split == "dev"]
    external = [
        t.model_copy(
            update={
                "task_id": f"ext.{i}",
                "backend": "bfcl",
                "source": t.source.model_copy(update={"kind": "external"}),
            }
        )
        for i, t in enumerate(sandbox[:3])
    ]
    sliced = dev_slice([*sandbox, *external], per_category=1)
    assert [t.task_id for t in sliced if t.backend == "bfcl"] == ["ext.0"]  # an external suite slices as its own
    assert len(sliced) == len({t.category for t in sandbox}) + 1

    tasks = [*sandbox, *external]
    started = start_round("run-test", 0, "p0", "h0", 4, P)
    requests = evaluate(started, started, tasks, "planner/2", "h0", P, "model")
    by_id = {t.task_id: t for t in tasks}
    verdicts = {
        r.episode_id: verdict(
            by_id[r.task_id],
            None
            if r.task_id.startswith("ext.0") or r.task_id == sandbox[0].task_id
            else {by_id[r.task_id].criteria[0].id},
            episode_id=r.episode_id,
        )
        for r in requests
    }
    evaluated = summarise(requests, verdicts, {}, by_id, started, P)
    assert evaluated.external["bfcl"].tasks == 3 and evaluated.external["bfcl"].success_rate == pytest.approx(1 / 3)
    assert sum(s.tasks for s in evaluated.per_category.values()) == len(sandbox)
    sandbox_only = summarise([r for r in requests if not r.task_id.startswith("ext.")], verdicts, {}, by_id, started, P)
    assert sandbox_only.external == {} and sandbox_only.overall == evaluated.overall
    assert sandbox_only.per_category == evaluated.per_category
