"""``flywheel smoke``: publish, consume and replay one example of every event type; store a blob; register a harness."""

from __future__ import annotations

import time
import uuid

import typer
from rich.console import Console
from rich.table import Table

from infra.bootstrap import open_ports
from infra.cli.run import BlobsOpt, BusOpt, RegistryOpt
from infra.config import load_settings, mask_credentials
from infra.smoke import run_smoke

console = Console()


def smoke(bus: BusOpt = None, blobs: BlobsOpt = None, registry: RegistryOpt = None) -> None:
    """Check every port on the chosen adapters in a few seconds (default: the embedded ones, no servers)."""
    settings = load_settings(bus=bus, blobs=blobs, registry=registry)
    run_id = f"smoke-{time.strftime('%Y%m%d-%H%M%S')}-{uuid.uuid4().hex[:6]}"
    console.print(
        f"[bold]flywheel smoke[/] {run_id}\n  bus={mask_credentials(settings.bus)}\n"
        f"  blobs={mask_credentials(settings.blobs)}\n  registry={mask_credentials(settings.registry)}"
    )
    started = time.perf_counter()
    with console.status("opening ports (first use of the embedded MLflow store migrates it, ~10 s)"):
        ports = open_ports(settings)
    try:
        with console.status("publishing, consuming and replaying one example of every event type"):
            report = run_smoke(ports, run_id)
    finally:
        ports.close()
    table = Table(title=f"smoke run {run_id}")
    table.add_column("step")
    table.add_column("result")
    table.add_row("published events", str(report.published))
    table.add_row("consumed back (group)", f"{sum(report.consumed.values())} events of {len(report.consumed)} types")
    table.add_row("replayed from the log", str(report.replayed))
    table.add_row("harness config blob", report.blob)
    table.add_row("registered harness version", f"{report.harness_version} @production")
    console.print(table)
    ok = report.published == sum(report.consumed.values()) == report.replayed
    console.print(
        f"[{'green' if ok else 'red'}]{'OK' if ok else 'MISMATCH'}[/] in {time.perf_counter() - started:.1f}s"
    )
    if not ok:
        raise typer.Exit(1)
