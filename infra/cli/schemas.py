"""``flywheel schemas``: export the event contract for tools outside Python."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from bus_schemas.export import export

app = typer.Typer(
    help="The event contract: write one JSON Schema per event type and an AsyncAPI 3 document of topics.",
    no_args_is_help=True,
)


@app.callback()
def schemas() -> None:
    """The event contract of the bus (kept a command group even with a single command)."""


@app.command("export")
def export_command(
    directory: Annotated[Path, typer.Argument(help="Folder to write into (created if missing).")],
) -> None:
    """Write <EventType>.v<N>.schema.json for every event and asyncapi.json into DIRECTORY."""
    paths = export(directory)
    typer.echo(f"wrote {len(paths)} files to {directory}")
