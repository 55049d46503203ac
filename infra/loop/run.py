"""``run_loop``: one run of the closed loop from its first task to its report under ``<out_dir>/<run_id>/``."""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

from rich.console import Console

from bus_schemas.envelope import Event
from bus_schemas.topics import TOPICS
from infra.bootstrap import Ports, open_ports
from infra.config import Settings, mask_credentials
from infra.events import decodable, ensure_topics
from infra.loop.begin import begin_run
from infra.loop.config import LoopConfig
from infra.loop.driver import drive
from infra.loop.final_test import evaluate_test
from infra.loop.inprocess import InProcessConsumers
from infra.loop.monitor import RoundProgress, RunMonitor, stage_seconds
from infra.loop.spawned import SpawnedConsumers
from infra.loop.tracking import ParentRun, start_parent_run
from infra.loop.view import LoopView
from infra.loop.workers import PeerRolloutWorkers
from infra.report.model import RunReport, build_report
from infra.report.write import write_report

log = logging.getLogger("flywheel.run")


@dataclass(frozen=True)
class LoopResult:
    run_id: str
    bus_url: str
    report: RunReport
    report_html: Path
    rounds: list[RoundProgress]
    wall_time_s: float
    dead_letters: int
    mlflow_run_id: str | None = None
    """The run's parent run in MLflow (experiment: the model's name)."""


def run_namespace(bus_url: str, run_id: str) -> str:
    """The run's own topics (``?namespace=<run_id>``) unless the URL names a namespace already."""
    if "namespace" in dict(parse_qsl(urlsplit(bus_url).query)):
        return bus_url
    return f"{bus_url}{'&' if '?' in bus_url else '?'}namespace={run_id}"


def run_loop(
    settings: Settings,
    config: LoopConfig,
    *,
    run_id: str,
    spawn: bool = False,
    console: Console | None = None,
    show_progress: bool = True,
    stop: threading.Event | None = None,
) -> LoopResult:
    console = console or Console()
    if settings.bus.startswith("kafka://") and not spawn:
        # Stepping ten Kafka group members in one thread stalls: while one handler trains for minutes the
        # others miss their polls and rebalances. On Kafka every consumer runs as its own process.
        console.print("[yellow]kafka:// bus: running every consumer as its own process (--spawn-consumers)[/]")
        spawn = True
    settings = settings.model_copy(update={"bus": run_namespace(settings.bus, run_id)})
    out_dir = config.out_dir / run_id
    state_dir = out_dir / "state"
    started = time.perf_counter()
    ports = open_ports(settings)
    urls = {"bus": settings.bus, "blobs": settings.blobs, "registry": settings.registry}
    parent: str | None = None
    stop_watching: Callable[[], None] = _nothing
    try:
        ensure_topics(ports.bus)
        parent = start_parent_run(ports.registry, config, run_id, urls)
        stop_watching = ports.registry.watch_system(parent)  # CPU, memory, disk, network: the System metrics tab
        start = begin_run(ports, config, run_id)
        log.info(
            "run %s: %d train tasks, %d dev tasks, harness %s, bus %s",
            run_id,
            len(start.train),
            len(start.dev),
            start.harness_version,
            mask_credentials(settings.bus),
        )
        monitor = RunMonitor(ports.bus, run_id, settings.outage_retry_s)
        with LoopView(console, enabled=show_progress) as view:
            if spawn:
                consumers: InProcessConsumers | SpawnedConsumers = SpawnedConsumers(
                    config, urls, state_dir, out_dir / "logs", settings.inference
                )
            else:
                peers = None
                if config.rollout_workers > 1:
                    peers = PeerRolloutWorkers(
                        config.rollout_workers - 1,
                        {**urls, "inference": settings.inference},
                        state_dir,
                        out_dir / "logs",
                    )
                consumers = InProcessConsumers(
                    ports, config, state_dir, view.training, settings.inference_port(), peers=peers
                )
            try:
                tracked = ParentRun(ports.registry, parent)

                def on_update(progress: RunMonitor) -> None:
                    view.refresh(progress)
                    _log_completed_rounds(ports, run_id, progress, tracked)

                drive(
                    consumers,
                    monitor,
                    config.rounds,
                    stall_timeout_s=config.stall_timeout_s,
                    on_update=on_update,
                    stop=stop,
                )
            finally:
                consumers.close()
        if config.final_test:  # in-process, after every consumer stopped
            console.print("evaluating the best model by dev on the test split ...")
            out_dir.mkdir(parents=True, exist_ok=True)
            test = evaluate_test(
                ports,
                config,
                run_id,
                [monitor.rounds[k] for k in sorted(monitor.rounds)],
                out_dir / "test_episodes.json",
            )
            monitor.update()
            if test is not None:
                cats = " ".join(f"{c} {s.success_rate:.2f}" for c, s in test.per_category.items())
                console.print(f"test Overall {test.overall:.3f} ({cats}) of {test.model_name}/{test.model_version}")
        report = build_report(
            run_id, run_events(ports, run_id), stage_seconds(monitor.rounds.values()), read_patch=ports.blobs.get
        )
        shown = {name: mask_credentials(getattr(settings, name)) for name in ("bus", "blobs", "registry", "inference")}
        report.settings.update(
            {
                **shown,
                "consumers": "separate processes" if spawn else "in-process",
                **{k: str(v) for k, v in config.round_settings().items()},
                "mlflow_run_id": parent,
            }
        )
        html = write_report(report, out_dir)
        (out_dir / "run.json").write_text(json.dumps({"run_id": run_id, "mlflow_run_id": parent, **shown}, indent=2))
        stop_watching()
        tracked.finish(report, out_dir)
    except BaseException as exc:
        stop_watching()
        if parent is not None:
            _fail(ports, parent, "KILLED" if isinstance(exc, (KeyboardInterrupt, SystemExit)) else "FAILED")
        raise
    finally:
        ports.close()
    return LoopResult(
        run_id,
        settings.bus,
        report,
        html,
        [monitor.rounds[k] for k in sorted(monitor.rounds)],
        time.perf_counter() - started,
        monitor.dead_letters,
        parent,
    )


def _nothing() -> None:
    """What stopping a watch that never started does."""


def run_events(ports: Ports, run_id: str) -> list[Event]:
    """Every event of the run on the bus, oldest first."""
    events = [e for topic in TOPICS for e in decodable(ports.bus.replay(topic)) if e.run_id == run_id]
    events.sort(key=lambda e: e.occurred_at)
    return events


def _log_completed_rounds(ports: Ports, run_id: str, monitor: RunMonitor, tracked: ParentRun) -> None:
    """Per-round metrics on the parent run as soon as a round completes; MLflow trouble here is logged, not fatal
    (the end of the run logs every round again)."""
    done = {n for n, r in monitor.rounds.items() if r.completed is not None}
    if done <= tracked.rounds_seen:
        return
    tracked.rounds_seen |= done  # tried once each: an MLflow outage must not cost a bus replay on every update
    try:
        rows = build_report(run_id, run_events(ports, run_id), stage_seconds(monitor.rounds.values())).rounds
        tracked.log_rounds([row for row in rows if row.round in done])
    except Exception as exc:  # noqa: BLE001 - a tracker's view must not stop the loop
        log.warning("could not log the completed rounds to MLflow: %s", exc)


def _fail(ports: Ports, parent: str, status: str) -> None:
    """Mark the parent run failed (or killed); a registry that is down too must not hide the run's own error."""
    try:
        ports.registry.end_run(parent, status=status)
    except Exception as exc:  # noqa: BLE001 - logged, the original failure propagates
        log.warning("could not mark MLflow run %s failed: %s", parent, exc)
