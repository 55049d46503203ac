"""The reviser's handler on embedded ports (SQLite log, file blobs, MLflow on SQLite): each outcome, determinism,
idempotent publishing, human decisions, and what it ignores."""

from __future__ import annotations

from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path

import pytest

from bus_schemas.envelope import Producer
from bus_schemas.events import (
    CategoryScore,
    DevSetEvaluated,
    FailureDiagnosed,
    HarnessRevisionDecided,
    HarnessRevisionProposed,
    HarnessRevisionSkipped,
    HarnessVersionPublished,
    TaskSpecified,
    overall_score,
)
from consumers.harness_reviser import rules
from consumers.harness_reviser.config import ReviserConfig
from consumers.harness_reviser.queue import decide_revision
from consumers.harness_reviser.spec import HarnessReviser
from harness_service.config import HarnessConfig
from harness_service.revisions import AddInstruction, apply, parse_patch
from harness_service.versions import load_harness_version, publish_harness_version
from infra.bootstrap import Ports, open_blob_store, open_bus, open_registry
from infra.events import ensure_topics, publish_all
from producers.rollout.versions import VersionResolver
from producers.tasks import build_task_suite

pytestmark = pytest.mark.unit
P = Producer(service="test", version="0")
BASE = HarnessConfig(name="tiny-planner", instructions="You operate phone apps through tools.")


@lru_cache(maxsize=1)
def clock_tasks() -> tuple[TaskSpecified, ...]:
    return tuple(t for t in build_task_suite("run-r") if t.split == "train" and t.apps == ["clock"])[:4]


@pytest.fixture(scope="module")
def registry(tmp_path_factory):
    return open_registry(f"sqlite:///{tmp_path_factory.mktemp('registry')}/mlflow.db")


@pytest.fixture
def ports(tmp_path: Path, registry, unique) -> Iterator[Ports]:
    bus = open_bus(f"sqlite:///{tmp_path}/bus.db")
    ensure_topics(bus)
    opened = Ports(bus=bus, blobs=open_blob_store(f"file:///{tmp_path}/blobs"), registry=registry)
    publish_all(bus, list(clock_tasks()))
    yield opened
    bus.close()


@pytest.fixture
def base_ref(ports, unique) -> str:
    """The initial harness of a run, registered the way the main job does it (``name/1``)."""
    config = BASE.model_copy(update={"name": f"tiny-{unique}"})
    return publish_harness_version(
        ports.registry, ports.blobs, config, producer=P, run_id="run-r", aliases=("production",)
    ).harness_version


def diagnoses(category: str, n: int, round_: int = 1, run_id: str = "run-r") -> list[FailureDiagnosed]:
    return [
        FailureDiagnosed(
            producer=P,
            run_id=run_id,
            round=round_,
            task_id=clock_tasks()[i % 4].task_id,
            episode_id=f"ep-{category}-{run_id}-{round_}-{i}",
            attribution=category,
            explanation=f"{category} {i}",
            confidence=0.8,
            diagnoser_version="v",
        )  # type: ignore[arg-type]
        for i in range(n)
    ]


def dev(harness_version: str, round_: int = 1, **fields) -> DevSetEvaluated:
    rates = {"tool_use": 0.4, "memory": 0.5, "skills": 0.3, "sub_agent": 0.2}
    return DevSetEvaluated(
        producer=P,
        run_id="run-r",
        round=round_,
        model_name="planner",
        model_version="2",
        harness_version=harness_version,
        per_category={k: CategoryScore(success_rate=v, tasks=8) for k, v in rates.items()},
        overall=overall_score(rates),
        tokens_per_task=10.0,
        tool_calls_per_task=2.0,
        **fields,
    )


def reviser(**config) -> HarnessReviser:
    return HarnessReviser(ReviserConfig(**config))


def test_a_round_without_a_cluster_is_skipped(ports, base_ref):
    publish_all(ports.bus, diagnoses("argument_grounding", 2) + diagnoses("argument_grounding", 5, round_=0))
    cause = dev(base_ref)
    [event] = reviser().handle(cause, ports)
    assert isinstance(event, HarnessRevisionSkipped) and "argument_grounding 2" in event.reason
    assert (event.run_id, event.round, event.causation_id, event.base_version) == ("run-r", 1, cause.event_id, base_ref)


def test_a_kind_outside_the_allow_list_is_proposed_and_waits(ports, base_ref):
    found = (
        diagnoses("argument_grounding", 3)
        + diagnoses("recovery", 1)
        + diagnoses("argument_grounding", 4, run_id="other-run")
    )
    publish_all(ports.bus, found)
    cause = dev(base_ref)
    [event] = reviser(auto_approve=("set_budgets",)).handle(cause, ports)
    assert isinstance(event, HarnessRevisionProposed)
    assert event.targets == ["argument_grounding"] and event.motivated_by == [d.event_id for d in found[:3]]
    assert parse_patch(ports.blobs.get(event.patch)) == AddInstruction(text=rules.GROUNDING)
    assert (event.base_version, event.harness_name, event.causation_id, event.round) == (
        base_ref,
        base_ref.split("/")[0],
        cause.event_id,
        1,
    )
    assert len(ports.registry.versions(event.harness_name)) == 1  # nothing published before a human decides


def test_same_input_same_revision_in_a_fresh_process(ports, base_ref):
    publish_all(ports.bus, diagnoses("premature_termination", 3))
    cause = dev(base_ref)
    first = reviser().handle(cause, ports)[0]
    second = reviser().handle(cause, ports)[0]
    assert isinstance(first, HarnessRevisionProposed)
    fresh = {"event_id", "occurred_at"}
    assert first.model_dump(exclude=fresh) == second.model_dump(exclude=fresh)
    next_round = reviser().handle(dev(base_ref, round_=2), ports)
    assert isinstance(next_round[0], HarnessRevisionSkipped)  # round 2 has no diagnoses of its own


def test_an_allow_listed_kind_is_proposed_accepted_and_published_once(ports, base_ref):
    publish_all(ports.bus, diagnoses("argument_grounding", 3))
    cause = dev(base_ref)
    out = reviser(auto_approve=("add_instruction",)).handle(cause, ports)
    proposed, decided, published = out
    assert isinstance(proposed, HarnessRevisionProposed) and isinstance(decided, HarnessRevisionDecided)
    assert isinstance(published, HarnessVersionPublished)
    assert decided.decision == "accepted" and decided.decided_by == "auto:add_instruction"
    assert decided.revision_id == published.revision_id == proposed.revision_id
    assert all(e.causation_id == cause.event_id and e.run_id == "run-r" and e.round == 1 for e in out)
    name = proposed.harness_name
    assert published.harness_version == f"{name}/2"
    version = ports.registry.resolve(published.harness_version)
    assert version.tags["revision_id"] == proposed.revision_id and version.tags["parent_version"] == base_ref
    assert "production" not in version.aliases and ports.registry.resolve(f"{name}@production").version == "1"
    again = reviser(auto_approve=("add_instruction",)).handle(cause, ports)  # a redelivery
    assert again[2].harness_version == published.harness_version and len(ports.registry.versions(name)) == 2
    config, label = VersionResolver(ports.registry, ports.bus, Path("unused")).harness(published.harness_version)
    assert label == published.harness_version and config == apply(
        load_harness_version(ports.registry, base_ref)[0], AddInstruction(text=rules.GROUNDING)
    )
    assert rules.GROUNDING in config.instructions and config.name == name


def test_a_human_acceptance_publishes_and_a_rejection_or_auto_decision_does_not(ports, base_ref):
    publish_all(ports.bus, diagnoses("state_tracking", 3))
    [proposal] = reviser().handle(dev(base_ref), ports)
    assert isinstance(proposal, HarnessRevisionProposed)
    publish_all(ports.bus, [proposal])
    accepted = decide_revision(proposal, True, "alice", "looks right")
    assert reviser().handle(decide_revision(proposal, False, "bob"), ports) == []
    assert reviser().handle(accepted.model_copy(update={"decided_by": "auto:set_budgets"}), ports) == []
    [published] = reviser().handle(accepted, ports)
    assert isinstance(published, HarnessVersionPublished) and published.causation_id == accepted.event_id
    assert published.revision_id == proposal.revision_id and published.round == 1
    config, _ = load_harness_version(ports.registry, published.harness_version)
    assert rules.STATE in config.instructions  # clock tasks seed no memories: recalling more would change nothing


def test_a_patch_rejected_earlier_in_the_run_is_not_proposed_again_on_that_base(ports, base_ref):
    """Round 1's revision lost its paired A/B: round 2, with the same failures, does not repeat that experiment but
    takes the next cluster's revision, and skips (saying why) when no other cluster calls for one. A rejection in
    another run, or of the round's own proposal (a redelivered result), does not count."""
    both = ("premature_termination", 4), ("argument_grounding", 3)
    publish_all(ports.bus, [d for c, n in both for d in diagnoses(c, n)])
    cause = dev(base_ref)
    [first] = reviser().handle(cause, ports)
    assert parse_patch(ports.blobs.get(first.patch)) == AddInstruction(text=rules.FINISH)
    elsewhere = first.model_copy(update={"run_id": "other-run", "revision_id": "other-revision"})
    publish_all(ports.bus, [first, elsewhere, decide_revision(elsewhere, False, "auto:paired_ab")])
    publish_all(ports.bus, [d for c, n in both for d in diagnoses(c, n, round_=2)])
    [unchanged] = reviser().handle(dev(base_ref, round_=2), ports)  # only another run's rejection so far
    assert parse_patch(ports.blobs.get(unchanged.patch)) == AddInstruction(text=rules.FINISH)

    publish_all(ports.bus, [decide_revision(first, False, "auto:paired_ab", "regresses")])
    [second] = reviser().handle(dev(base_ref, round_=2), ports)
    assert isinstance(second, HarnessRevisionProposed) and second.targets == ["argument_grounding"]
    assert parse_patch(ports.blobs.get(second.patch)) == AddInstruction(text=rules.GROUNDING)
    [redelivered] = reviser().handle(cause, ports)
    assert redelivered.revision_id == first.revision_id

    publish_all(ports.bus, diagnoses("premature_termination", 4, round_=3))
    [skip] = reviser().handle(dev(base_ref, round_=3), ports)
    assert isinstance(skip, HarnessRevisionSkipped)
    assert "rejected on this base earlier in the run (premature_termination: add_instruction)" in skip.reason


def test_model_results_on_other_splits_and_harness_evaluations_are_ignored(ports, base_ref):
    publish_all(ports.bus, diagnoses("argument_grounding", 3))
    assert reviser().handle(dev(base_ref, evaluates="harness"), ports) == []
    assert reviser().handle(dev(base_ref, split="test"), ports) == []


def test_a_digest_label_resolves_to_its_registry_version_and_an_unknown_one_is_skipped(ports, base_ref):
    publish_all(ports.bus, diagnoses("hallucinated_completion", 3))
    config, _ = load_harness_version(ports.registry, base_ref)
    [event] = reviser().handle(dev(f"{config.name}@{config.digest()}"), ports)
    assert isinstance(event, HarnessRevisionProposed) and event.base_version == base_ref
    [event] = reviser().handle(dev(f"{config.name}@sha256:" + "0" * 64), ports)
    assert isinstance(event, HarnessRevisionSkipped) and "not a registry version" in event.reason


def test_review_cli_lists_and_rejects_revisions_beside_trajectory_reviews(tmp_path):
    import typer
    from typer.testing import CliRunner

    from bus_schemas.events import ReviewDecided, ReviewRequested
    from infra.cli import review
    from infra.events import decodable

    url = f"sqlite:///{tmp_path}/bus.db"
    blobs = f"file:///{tmp_path}/blobs"
    bus = open_bus(url)
    ensure_topics(bus)
    patch = open_blob_store(blobs).put(b'{"kind":"set_budgets","max_steps":35}', "application/json")
    proposal = HarnessRevisionProposed(
        producer=P,
        run_id="run-r",
        round=2,
        harness_name="tiny-planner",
        revision_id="tiny-planner-r2-abc",
        base_version="tiny-planner/3",
        patch=patch,
        summary="recovery: 4 of 6 diagnoses",
        targets=["recovery"],
    )
    publish_all(
        bus,
        [
            proposal,
            ReviewRequested(producer=P, run_id="run-r", task_id="t", episode_id="ep-7", reasons=["safety-sensitive"]),
        ],
    )
    cli = typer.Typer()
    cli.command("noop")(lambda: None)
    cli.add_typer(review.app, name="review")
    run = CliRunner().invoke
    listed = run(cli, ["review", "list", "--bus", url, "--blobs", blobs], env={"COLUMNS": "250"})
    assert listed.exit_code == 0 and "tiny-planner-r2-abc" in listed.output and "ep-7" in listed.output
    assert (
        run(
            cli,
            [
                "review",
                "reject",
                "tiny-planner-r2-abc",
                "-r",
                "bob",
                "--note",
                "too slow",
                "--bus",
                url,
                "--blobs",
                blobs,
            ],
        ).exit_code
        == 0
    )
    assert run(cli, ["review", "approve", "ep-7", "--reviewer", "carol", "--bus", url, "--blobs", blobs]).exit_code == 0
    events = list(decodable(bus.replay("harness"))) + list(decodable(bus.replay("curation")))
    [decided] = [e for e in events if isinstance(e, HarnessRevisionDecided)]
    assert (decided.decision, decided.decided_by, decided.reason, decided.round) == ("rejected", "bob", "too slow", 2)
    assert [e.reviewer for e in events if isinstance(e, ReviewDecided)] == ["carol"]
    after = run(cli, ["review", "list", "--bus", url, "--blobs", blobs], env={"COLUMNS": "250"})
    assert "tiny-planner-r2-abc" not in after.output and "no pending harness revisions" in after.output
    bus.close()


def test_the_writer_needs_a_model_ref_not_a_per_task_script(ports):
    from consumers.harness_reviser.writer import load_writer

    with pytest.raises(ValueError, match="model ref"):
        load_writer("scripted:reference", ports.registry, ports.bus, Path("unused"))


def test_failures_on_dev_tasks_never_motivate_a_revision(ports, base_ref):
    dev_tasks = [t for t in build_task_suite("run-r") if t.split == "dev" and t.apps == ["clock"]][:1]
    publish_all(ports.bus, dev_tasks)
    on_dev = [d.model_copy(update={"task_id": dev_tasks[0].task_id}) for d in diagnoses("argument_grounding", 5)]
    publish_all(ports.bus, on_dev + diagnoses("argument_grounding", 2))
    [event] = reviser().handle(dev(base_ref), ports)
    assert isinstance(event, HarnessRevisionSkipped) and "argument_grounding 2" in event.reason
