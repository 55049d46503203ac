"""``flywheel consume NAME [--workers N]``: run one flywheel consumer as N OS processes of its consumer group."""

from __future__ import annotations

import logging
import multiprocessing
import os
import signal
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Protocol

import typer
from rich.console import Console
from rich.table import Table

from infra.cli.run import BlobsOpt, BusOpt, RegistryOpt
from infra.cli.signals import stop_on_signals
from infra.config import Settings
from infra.registry.port import Registry

if TYPE_CHECKING:
    from infra.bootstrap import Ports

console = Console(stderr=True)


class LazyRegistry:
    """Opens the registry on first use: most consumers never touch it, and opening MLflow costs seconds."""

    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._registry: Registry | None = None

    def __getattr__(self, name: str) -> Any:
        if self._registry is None:
            from infra.bootstrap import open_registry

            self._registry = open_registry(self._settings.registry, self._settings)
        return getattr(self._registry, name)


def open_worker_ports(overrides: dict[str, str | None]) -> tuple[Settings, Ports]:
    """The ports of one group member: bus and blobs now, the registry on first use; topics ensured."""
    from infra.bootstrap import Ports, open_blob_store, open_bus
    from infra.config import load_settings
    from infra.events import ensure_topics

    settings = load_settings(**overrides)
    ports = Ports(open_bus(settings.bus, settings), open_blob_store(settings.blobs, settings), LazyRegistry(settings))
    ensure_topics(ports.bus)
    return settings, ports


def build_worker(name: str, settings: Settings, ports: Ports, state_dir: Path, idle_exit_s: float | None) -> Worker:
    """On Kafka the FastStream app; on any other bus the port runner. Both share the batch handling."""
    from consumers.registry import build
    from infra.runtime import ConsumerRunner
    from infra.runtime.kafka_app import FastStreamConsumer, KafkaTarget

    spec = build(name)
    if settings.bus.startswith("kafka://"):
        return FastStreamConsumer(
            spec,
            ports,
            KafkaTarget.from_url(settings.bus),
            state_dir=state_dir,
            idle_exit_s=idle_exit_s,
            outage_retry_s=settings.outage_retry_s,
        )
    return _RunnerWorker(
        ConsumerRunner(spec, ports, state_dir=state_dir, outage_retry_s=settings.outage_retry_s), idle_exit_s
    )


class Worker(Protocol):
    @property
    def stats(self) -> Any: ...

    def run(self) -> Any: ...


class _RunnerWorker:
    """The port runner with SIGINT/SIGTERM stopping it after the batch in hand."""

    def __init__(self, runner: Any, idle_exit_s: float | None) -> None:
        self.runner = runner
        self.idle_exit_s = idle_exit_s

    @property
    def stats(self) -> Any:
        return self.runner.stats

    def run(self) -> Any:
        with stop_on_signals() as stop:
            try:
                return self.runner.run(stop, idle_exit_s=self.idle_exit_s)
            finally:
                self.runner.close()


def run_worker(name: str, overrides: dict[str, str | None], state_dir: Path, idle_exit_s: float | None) -> None:
    """One group member: open the ports, run the consumer until stopped (or idle), close cleanly."""
    from infra.cli.quiet import quiet_consumer

    quiet_consumer(name, state_dir)
    settings, ports = open_worker_ports(overrides)
    try:
        worker = build_worker(name, settings, ports, state_dir, idle_exit_s)
        stats = worker.run()
        logging.getLogger("flywheel.consume").info("stopped: %s", stats)
    finally:
        ports.close()


def consume(
    name: Annotated[str | None, typer.Argument(help="The consumer to run (see --list).")] = None,
    workers: Annotated[
        int, typer.Option(min=1, max=64, help="OS processes in the consumer group; partitions are shared.")
    ] = 1,
    list_: Annotated[bool, typer.Option("--list", help="List the consumers and exit.")] = False,
    state_dir: Annotated[Path, typer.Option(help="Durable dedupe state of the consumer group.")] = Path(
        ".flywheel/state"
    ),
    idle_exit: Annotated[
        float | None, typer.Option(help="Exit after this many seconds without records (default: run until stopped).")
    ] = None,
    bus: BusOpt = None,
    blobs: BlobsOpt = None,
    registry: RegistryOpt = None,
    auto_approve: Annotated[
        str | None,
        typer.Option(
            help="harness_reviser: change kinds published without review (comma-separated; "
            "FLYWHEEL_REVISER_AUTO_APPROVE)."
        ),
    ] = None,
    min_cluster: Annotated[
        int | None,
        typer.Option(
            min=1,
            help="harness_reviser: diagnoses of one category that trigger a revision (FLYWHEEL_REVISER_MIN_CLUSTER).",
        ),
    ] = None,
    sim_model: Annotated[
        str | None,
        typer.Option(help="rollout-worker: policy ref of the LLM-sim simulator; enables backend llm_sim."),
    ] = None,
    user_model: Annotated[
        str | None,
        typer.Option(
            help="rollout-worker: policy ref of the model that plays the user of tasks with a persona "
            "(local:/ckpt or models:/name@alias); without it, tasks' scripted replies answer clarifying questions."
        ),
    ] = None,
    device: Annotated[
        str | None, typer.Option(help="rollout-worker: ADB serial of a device; enables backend device.")
    ] = None,
) -> None:
    """Run a consumer (its own group ``flywheel.NAME``; a FastStream app on ``kafka://``): at-least-once delivery,
    event-id dedupe, atomic outputs+commit, poison to ``dead-letters``. Stop with Ctrl-C or SIGTERM; uncommitted work
    is redelivered to the next run."""
    from consumers.registry import CONSUMERS, build

    if list_:
        table = Table("consumer", "group", "topics", "reacts to")
        for key in CONSUMERS:
            spec = build(key)
            table.add_row(key, spec.group, ", ".join(spec.topics), ", ".join(sorted(spec.event_types)) or "every event")
        table.add_row("rollout-worker", "flywheel.rollout-worker", "rollouts", "RolloutRequested")
        Console().print(table)
        return
    if name == "rollout-worker":  # episodes are long-running producers, not pure handlers: their own loop
        from infra.cli.consume_rollout import rollout_worker

        rollout_worker(
            workers=workers,
            state_dir=state_dir,
            idle_exit=idle_exit,
            bus=bus,
            blobs=blobs,
            registry=registry,
            sim_model=sim_model,
            user_model=user_model,
            device=device,
        )
        return
    name = "harness_reviser" if name == "harness-reviser" else name
    for var, value in (("FLYWHEEL_REVISER_AUTO_APPROVE", auto_approve), ("FLYWHEEL_REVISER_MIN_CLUSTER", min_cluster)):
        if value is not None:
            os.environ[var] = str(value)  # read by the reviser's config in each worker process
    if name not in CONSUMERS:
        raise typer.BadParameter(
            f"unknown consumer {name!r}; choose one of: rollout-worker, {', '.join(CONSUMERS)}", param_hint="NAME"
        )
    overrides = {"bus": bus, "blobs": blobs, "registry": registry}
    if workers == 1:
        run_worker(name, overrides, state_dir, idle_exit)
        return
    ctx = multiprocessing.get_context("spawn")
    procs = [
        ctx.Process(target=run_worker, args=(name, overrides, state_dir, idle_exit), name=f"{name}-{i}")
        for i in range(workers)
    ]
    for proc in procs:
        proc.start()
    console.print(f"[bold]{name}[/]: {workers} workers, pids {', '.join(str(p.pid) for p in procs)}")
    with stop_on_signals() as stop:
        while any(p.is_alive() for p in procs):
            if stop.wait(0.5):
                for proc in procs:
                    if proc.is_alive() and proc.pid is not None:
                        proc.terminate()  # SIGTERM: each worker finishes its batch and closes
                for proc in procs:
                    proc.join()
    failed = [p.name for p in procs if p.exitcode not in (0, -signal.SIGTERM)]
    if failed:
        raise typer.Exit(code=1)
