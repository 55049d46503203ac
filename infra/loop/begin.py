"""The first events of a run: its tasks (train pool + dev slice), its initial harness version, RoundStarted(0)."""

from __future__ import annotations

from dataclasses import dataclass

from bus_schemas.envelope import Producer
from bus_schemas.events import RoundStarted, TaskSpecified
from harness_service.versions import publish_harness_version
from infra.bootstrap import Ports
from infra.events import publish_all
from infra.loop.config import LoopConfig

PRODUCER = Producer(service="flywheel-run", version="0.1.0")


@dataclass(frozen=True)
class RunStart:
    run_id: str
    harness_version: str
    train: list[TaskSpecified]
    dev: list[TaskSpecified]
    started: RoundStarted


def external_dev_tasks(suites: tuple[str, ...], run_id: str, per_suite: int | None) -> list[TaskSpecified]:
    """The first ``per_suite`` tasks (by task id; all with None) of each named external suite, as dev tasks."""
    from producers.backends import plugins

    tasks: list[TaskSpecified] = []
    for name in suites:
        chosen = sorted(plugins.make_suite(name).tasks(), key=lambda t: t.task_id)[:per_suite]
        tasks += [t.model_copy(update={"split": "dev", "run_id": run_id}) for t in chosen]
    return tasks


def begin_run(ports: Ports, config: LoopConfig, run_id: str) -> RunStart:
    """Publish what the consumers start from. Dev tasks come from a different split than train: they never leak."""
    from learner.jobs import dev_tasks, train_tasks

    train, dev = train_tasks(config.learner, run_id), dev_tasks(config.learner, run_id)
    dev += external_dev_tasks(config.external_suites, run_id, config.learner.dev_per_category)
    leaked = {t.task_id for t in train} & {t.task_id for t in dev}
    if leaked:
        raise ValueError(f"dev tasks in the train pool: {sorted(leaked)[:5]}")
    harness = publish_harness_version(
        ports.registry,
        ports.blobs,
        config.learner.harness,
        producer=PRODUCER,
        run_id=run_id,
        aliases=("production",),
        round=0,
    )
    started = RoundStarted(
        producer=PRODUCER,
        run_id=run_id,
        round=0,
        policy_version=config.first_policy,
        harness_version=harness.harness_version,
        planned_rollouts=config.first_round_rollouts or len(train),
    )
    publish_all(ports.bus, [*train, *dev, harness, started])
    return RunStart(run_id, harness.harness_version, train, dev, started)
