"""The harness reviser in the loop on the embedded default, every step through ConsumerRunner or the CLI:

failed episodes -> verifier -> diagnoser -> DevSetEvaluated -> reviser (auto-approved) -> a new harness version in
MLflow -> a rollout worker runs with it and the new instruction is in its contexts; and the human gate:
a proposal listed by ``flywheel review``, approved there, published by the reviser.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import cast

import pytest
import typer
from scripted_requests import scripted_request
from typer.testing import CliRunner

from bus_schemas.actions import Finish, ToolCall
from bus_schemas.envelope import Producer
from bus_schemas.events import (
    CategoryScore,
    ContextBuilt,
    DevSetEvaluated,
    FailureDiagnosed,
    HarnessRevisionDecided,
    HarnessRevisionProposed,
    HarnessVersionPublished,
    TaskSpecified,
    overall_score,
)
from bus_schemas.events.tasks import Capability
from consumers.common.recording import record_episode
from consumers.harness_reviser.rules import GROUNDING
from consumers.registry import build
from harness_service.config import HarnessConfig
from harness_service.context.messages import decode_context
from harness_service.versions import publish_harness_version
from infra.bootstrap import Ports, open_blob_store, open_bus, open_registry
from infra.cli import consume, review
from infra.events import decodable, ensure_topics, publish, publish_all
from infra.loop.config import LoopConfig
from infra.loop.tracking import start_parent_run
from infra.runtime import ConsumerRunner
from producers.backends.sandbox import SandboxBackend
from producers.pool import EnvironmentPool
from producers.rollout import RolloutWorker
from producers.tasks import build_task_suite

pytestmark = pytest.mark.integration
P = Producer(service="test", version="0")
RUN = "run-reviser"


@pytest.fixture
def urls(tmp_path: Path) -> dict[str, str]:
    return {
        "bus": f"sqlite:///{tmp_path}/bus.db?session_timeout_s=1.5",
        "blobs": f"file:///{tmp_path}/blobs",
        "registry": f"sqlite:///{tmp_path}/mlflow.db",
    }


@pytest.fixture
def ports(urls) -> Iterator[Ports]:
    bus = open_bus(urls["bus"])
    ensure_topics(bus)
    yield Ports(bus, open_blob_store(urls["blobs"]), open_registry(urls["registry"]))
    bus.close()


def wrong_arguments(task: TaskSpecified):
    """Calls the task's first tool with an argument it does not take, then gives up: an argument_grounding failure."""
    yield ToolCall(name=task.tools[0], args={"no_such_argument": "x"})
    yield Finish(answer="")


def consume_all(name: str, ports: Ports, state: Path) -> None:
    runner = ConsumerRunner(build(name), ports, state_dir=state)
    try:
        runner.run(idle_exit_s=1.0)
    finally:
        runner.close()


def consume_command(name: str, urls: dict[str, str], tmp_path: Path, *flags: str) -> list[str]:
    """``flywheel consume NAME FLAGS`` until idle for a second, on ``urls``, its state under ``tmp_path``."""
    stores = [f"--{port}={url}" for port, url in urls.items()]  # --bus, --blobs, --registry
    return ["consume", name, *flags, "--idle-exit", "1", "--state-dir", str(tmp_path / "state"), *stores]


def harness_events(ports: Ports) -> list:
    return list(decodable(ports.bus.replay("harness")))


def failed_round(ports: Ports, tmp_path: Path) -> tuple[list[TaskSpecified], str]:
    """Round 0 of a run: 4 failed episodes verified and diagnosed, the initial harness registered, dev evaluated."""
    tasks = [t for t in build_task_suite(RUN) if t.split == "train" and t.apps == ["clock"]][:4]
    publish_all(ports.bus, tasks)
    for i, task in enumerate(tasks):
        publish_all(
            ports.bus, record_episode(task, wrong_arguments, ports.blobs, episode_id=f"ep-{i}", run_id=RUN, round_=0)
        )
    for name in ("verifier", "diagnoser"):
        consume_all(name, ports, tmp_path / "state")
    diagnoses = [e for e in decodable(ports.bus.replay("diagnoses")) if isinstance(e, FailureDiagnosed)]
    assert Counter(d.attribution for d in diagnoses) == {"argument_grounding": 4}
    base = publish_harness_version(
        ports.registry,
        ports.blobs,
        HarnessConfig(name="tiny-planner", instructions="Use tools."),
        producer=P,
        run_id=RUN,
        aliases=("production",),
    )
    rates = {"tool_use": 0.25, "memory": 0.5, "skills": 0.5, "sub_agent": 0.5}
    publish_all(
        ports.bus,
        [
            base,
            DevSetEvaluated(
                producer=P,
                run_id=RUN,
                round=0,
                model_name="planner",
                model_version="1",
                harness_version=base.harness_version,
                per_category={cast(Capability, k): CategoryScore(success_rate=v, tasks=4) for k, v in rates.items()},
                overall=overall_score(rates),
                tokens_per_task=100.0,
                tool_calls_per_task=2.0,
            ),
        ],
    )
    return tasks, base.harness_version


def test_auto_approved_revision_reaches_the_next_rollouts(ports, tmp_path, monkeypatch):
    tasks, base_version = failed_round(ports, tmp_path)
    parent = start_parent_run(ports.registry, LoopConfig(), RUN, {})  # the `flywheel run` the revision belongs to
    monkeypatch.setenv("FLYWHEEL_REVISER_AUTO_APPROVE", "add_instruction,set_budgets")
    consume_all("harness_reviser", ports, tmp_path / "state")
    consume_all("harness_reviser", ports, tmp_path / "state")  # a restart: nothing is handled twice
    events = [e for e in harness_events(ports) if e.producer.service == "harness_reviser"]
    assert [e.event_type for e in events] == [
        "HarnessRevisionProposed",
        "HarnessRevisionDecided",
        "HarnessVersionPublished",
    ]
    proposed, decided, published = events
    assert proposed.targets == ["argument_grounding"] and len(proposed.motivated_by) == 4
    assert decided.decided_by == "auto:add_instruction" and published.harness_version == "tiny-planner/2"
    version = ports.registry.resolve("tiny-planner/2")
    assert version.tags["parent_version"] == base_version and "production" not in version.aliases
    revision_run = ports.registry.get_run(version.run_id or "")  # nested under the flywheel run, for trackers
    assert revision_run.parent_run_id == parent and revision_run.tags["flywheel_role"] == "harness-revision"
    assert revision_run.tags["patch_kinds"] == ",".join(proposed.patch_kinds) and revision_run.tags["round"] == "0"

    pool = EnvironmentPool()
    pool.register("sandbox", SandboxBackend, 1)
    publish(
        ports.bus,
        scripted_request(tasks[0], run_id=RUN, producer=P, round=1, harness_version=published.harness_version),
    )
    worker = RolloutWorker(ports, pool, state_dir=tmp_path / "rollout-state", claim_grace_s=0.0)
    assert worker.run(idle_exit_s=1.0).episodes == 1
    contexts = [e for e in decodable(ports.bus.replay("episodes")) if isinstance(e, ContextBuilt) and e.round == 1]
    assert contexts
    system = decode_context(ports.blobs.get(contexts[0].context))[0]
    assert system.role == "system" and GROUNDING in system.content


def test_a_human_approves_a_proposal_with_flywheel_review(ports, urls, tmp_path):
    failed_round(ports, tmp_path)
    consume_all("harness_reviser", ports, tmp_path / "state")  # default: no auto-approval
    [proposal] = [e for e in harness_events(ports) if isinstance(e, HarnessRevisionProposed)]
    assert not any(isinstance(e, HarnessVersionPublished) and e.revision_id for e in harness_events(ports))

    cli = typer.Typer()
    cli.command("consume")(consume.consume)
    cli.add_typer(review.app, name="review")
    runner = CliRunner()
    listed = runner.invoke(
        cli, ["review", "list", "--bus", urls["bus"], "--blobs", urls["blobs"]], env={"COLUMNS": "250"}
    )
    assert listed.exit_code == 0 and proposal.revision_id in listed.output, listed.output
    shown = runner.invoke(cli, ["review", "show", proposal.revision_id, "--bus", urls["bus"], "--blobs", urls["blobs"]])
    assert shown.exit_code == 0 and '"add_instruction"' in shown.output and "argument_grounding" in shown.output
    approved = runner.invoke(
        cli,
        [
            "review",
            "approve",
            proposal.revision_id,
            "--by",
            "alice",
            "--note",
            "clear win",
            "--bus",
            urls["bus"],
            "--blobs",
            urls["blobs"],
        ],
    )
    assert approved.exit_code == 0, approved.output
    again = runner.invoke(
        cli,
        ["review", "approve", proposal.revision_id, "--by", "alice", "--bus", urls["bus"], "--blobs", urls["blobs"]],
    )
    assert again.exit_code != 0  # no longer pending
    [decided] = [e for e in harness_events(ports) if isinstance(e, HarnessRevisionDecided)]
    assert (decided.decided_by, decided.decision, decided.reason, decided.causation_id) == (
        "alice",
        "accepted",
        "clear win",
        proposal.event_id,
    )

    out = runner.invoke(cli, consume_command("harness-reviser", urls, tmp_path))
    assert out.exit_code == 0, out.output
    [published] = [e for e in harness_events(ports) if isinstance(e, HarnessVersionPublished) and e.revision_id]
    assert published.revision_id == proposal.revision_id and published.causation_id == decided.event_id
    assert (
        GROUNDING
        in ports.registry.load_dict(ports.registry.resolve(published.harness_version).run_id, "harness/config.json")[
            "instructions"
        ]
    )


def test_consume_flags_set_the_cluster_threshold(ports, urls, tmp_path, monkeypatch):
    failed_round(ports, tmp_path)
    monkeypatch.setenv("FLYWHEEL_REVISER_MIN_CLUSTER", "3")  # restored after the test; the flag overrides it
    cli = typer.Typer()
    cli.command("consume")(consume.consume)
    cli.command("noop")(lambda: None)
    out = CliRunner().invoke(cli, consume_command("harness_reviser", urls, tmp_path, "--min-cluster", "5"))
    assert out.exit_code == 0, out.output
    [skipped] = [e for e in harness_events(ports) if e.producer.service == "harness_reviser"]
    assert (
        skipped.event_type == "HarnessRevisionSkipped"
        and "min_cluster=5" in skipped.reason
        and "argument_grounding 4" in skipped.reason
    )
