"""Auditor commands: ``flywheel replay``, ``flywheel episode show``, ``flywheel export trajectories``."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from infra.audit.export import export_trajectories
from infra.audit.replay import Scope, replay_verify
from infra.audit.timeline import describe, episode_events, run_namespaces
from infra.bootstrap import Ports, open_blob_store, open_bus, open_ports
from infra.cli.consume import LazyRegistry
from infra.cli.errors import CliError
from infra.cli.run import BlobsOpt, BusOpt, RegistryOpt
from infra.config import load_settings, mask_credentials
from infra.loop.run import run_namespace

console = Console()
DETERMINISTIC = ("verifier", "curator", "diagnoser")

episode_app = typer.Typer(help="Inspect one episode.", no_args_is_help=True)
export_app = typer.Typer(help="Export data for use outside the platform.", no_args_is_help=True)


def replay(
    verify: Annotated[bool, typer.Option("--verify", help="Re-run the deterministic consumers and compare")] = False,
    from_start: Annotated[
        bool, typer.Option("--from-start", help="Replay every partition from offset 0 (default)")
    ] = False,
    offset: Annotated[int | None, typer.Option("--offset", help="Start every partition at this offset")] = None,
    since: Annotated[
        datetime | None, typer.Option("--since", help="Start at this time (ISO 8601, UTC if no zone)")
    ] = None,
    task: Annotated[str | None, typer.Option("--task", help="Only this task's events")] = None,
    episode: Annotated[str | None, typer.Option("--episode", help="Only this episode's events")] = None,
    consumers: Annotated[str, typer.Option(help="Comma-separated consumers to re-run")] = ",".join(DETERMINISTIC),
    bus: BusOpt = None,
    blobs: BlobsOpt = None,
    registry: RegistryOpt = None,
) -> None:
    """Replay the event log: re-run the deterministic consumers (verifier, curator, diagnoser) into fresh
    state, report every difference from their recorded outputs, and check every BlobRef's hash.
    Exits 1 when anything differs."""
    from consumers.registry import CONSUMERS

    if since is not None and since.tzinfo is None:
        from datetime import UTC

        since = since.replace(tzinfo=UTC)
    scope = Scope(
        from_offset=0 if from_start or offset is None else offset, since=since, task_id=task, episode_id=episode
    )
    settings = load_settings(bus=bus, blobs=blobs, registry=registry)
    log_bus = open_bus(settings.bus, settings)
    if not log_bus.topics():
        log_bus.close()
        raise CliError(
            f"the log at {mask_credentials(settings.bus)} is empty: there is nothing to replay",
            "point --bus (or FLYWHEEL_BUS) at the log to audit",
        )
    # the registry only when a replayed consumer asks for it: opening MLflow costs seconds
    ports = Ports(log_bus, open_blob_store(settings.blobs, settings), LazyRegistry(settings))
    try:
        names = [n.strip() for n in consumers.split(",") if n.strip()] if verify else []
        unknown = [n for n in names if n not in CONSUMERS]
        if unknown:
            raise typer.BadParameter(f"unknown consumers {unknown}; known: {', '.join(CONSUMERS)}")
        with console.status("replaying the log"):
            report = replay_verify(ports, {n: CONSUMERS[n] for n in names}, scope)
    finally:
        ports.close()
    table = Table(title="replay")
    for col in (
        "consumer",
        "inputs replayed",
        "recorded outputs compared",
        "rejected records",
        "dead-lettered",
        "differences",
    ):
        table.add_column(col)
    for name in names:
        diffs = sum(1 for d in report.differences if d.consumer == name)
        table.add_row(
            name,
            str(report.inputs.get(name, 0)),
            str(report.outputs_compared.get(name, 0)),
            str(report.rejected.get(name, 0)),
            str(report.dead_lettered.get(name, 0)),
            str(diffs),
        )
    console.print(table)
    console.print(
        f"events scanned: {report.events_scanned}; blobs checked: {report.blobs_checked}; "
        f"bad blobs: {len(report.bad_blobs)}"
    )
    for diff in report.differences[:20]:
        console.print(f"[red]{diff.consumer} {diff.kind}[/] for input {diff.input_event_id}: {diff.detail[:300]}")
    for bad in report.bad_blobs[:20]:
        console.print(f"[red]bad blob[/] {bad}")
    console.print("[green]replay verified: no differences[/]" if report.ok else "[red]replay found differences[/]")
    if not report.ok:
        raise typer.Exit(1)


@episode_app.command("show")
def show(
    episode_id: Annotated[str, typer.Argument(help="The episode id")],
    run_id: Annotated[
        str | None,
        typer.Option("--run-id", help="The flywheel run the episode belongs to (its topics are namespaced by it)."),
    ] = None,
    bus: BusOpt = None,
    blobs: BlobsOpt = None,
    registry: RegistryOpt = None,
) -> None:
    """Print an episode's timeline: context sizes, actions, feedback, verdict, curation, diagnosis."""
    settings = load_settings(bus=bus, blobs=blobs, registry=registry)
    url = settings.bus if run_id is None else run_namespace(settings.bus, run_id)
    bus_port = open_bus(url, settings)
    try:
        events = episode_events(bus_port, episode_id)
        runs = run_namespaces(bus_port) if not events and run_id is None else []
    finally:
        bus_port.close()
    if not events:
        hint = f" (runs on this bus: {', '.join(runs[-10:])}; pass --run-id RUN)" if runs else ""
        console.print(f"[red]no events for episode {episode_id}{hint}[/]", soft_wrap=True)
        raise typer.Exit(1)
    for event in events:
        for line in describe(event):
            console.print(line, markup=False)


@export_app.command("trajectories")
def trajectories(
    out_dir: Annotated[Path, typer.Argument(help="Directory to write into")],
    admitted: Annotated[bool, typer.Option("--admitted", help="Admitted trajectories (the only kind exported)")] = True,
    fmt: Annotated[str, typer.Option("--format", help="jsonl or parquet")] = "jsonl",
    bus: BusOpt = None,
    blobs: BlobsOpt = None,
    registry: RegistryOpt = None,
) -> None:
    """Export admitted trajectories with their provenance, one row each."""
    if fmt not in ("jsonl", "parquet"):
        raise typer.BadParameter("--format must be jsonl or parquet")
    ports = open_ports(load_settings(bus=bus, blobs=blobs, registry=registry))
    try:
        path, count = export_trajectories(ports, out_dir, fmt)  # type: ignore[arg-type]
    finally:
        ports.close()
    console.print(f"wrote {count} admitted trajectories to {path}")
