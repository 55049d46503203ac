"""``flywheel review``: the human review gate over quarantined trajectories (ReviewDecided) and proposed harness
revisions (HarnessRevisionDecided; the harness reviser publishes an accepted one as a new version)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bus_schemas.events import ReviewDecision

from collections.abc import Iterable
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Column, Table

from infra.cli.run import BlobsOpt, BusOpt

app = typer.Typer(
    help="Review trajectories the curator quarantined and harness revisions the reviser proposed: "
    "list, show, then approve/correct/reject/quarantine.",
    no_args_is_help=True,
)
console = Console()
Episode = Annotated[str, typer.Argument(help="Episode id of a pending review (see `flywheel review list`).")]
Item = Annotated[
    str,
    typer.Argument(
        help="Episode id of a pending review, or id of a pending harness revision (see `flywheel review list`)."
    ),
]
Reviewer = Annotated[str, typer.Option("--reviewer", "--by", "-r", help="Who decides (recorded on the event).")]
Note = Annotated[str, typer.Option(help="Why, for the audit trail.")]


def _open(bus: str | None, blobs: str | None):
    from infra.bootstrap import open_blob_store, open_bus
    from infra.config import load_settings

    settings = load_settings(bus=bus, blobs=blobs)
    return open_bus(settings.bus, settings), open_blob_store(settings.blobs, settings)


def _pending_revision(bus_port, item: str):
    from consumers.harness_reviser.queue import pending_revisions

    return next((p for p in pending_revisions(bus_port) if p.revision_id == item), None)


def _pending_request(bus_port, episode_id: str):
    from consumers.review.queue import curation_log, pending

    log = curation_log(bus_port)
    found = [r for r in pending(log) if r.episode_id == episode_id]
    if not found:
        raise typer.BadParameter(
            f"no pending review for episode {episode_id!r}; see `flywheel review list`", param_hint="EPISODE"
        )
    return found[0], log.get(episode_id, [])


@app.command("list")
def list_(bus: BusOpt = None, blobs: BlobsOpt = None) -> None:
    """Pending reviews, oldest first."""
    from consumers.harness_reviser.queue import pending_revisions
    from consumers.review.queue import curation_log, pending

    bus_port, _ = _open(bus, blobs)
    requests = pending(curation_log(bus_port))
    table = Table(_id_column("episode", (r.episode_id for r in requests)), "task", "requested", "reasons")
    for request in requests:
        table.add_row(
            request.episode_id,
            request.task_id,
            request.occurred_at.strftime("%Y-%m-%d %H:%M:%S"),
            "; ".join(request.reasons),
        )
    console.print(table if table.row_count else "no pending reviews")
    proposals = pending_revisions(bus_port)
    revisions = Table(
        _id_column("revision", (p.revision_id for p in proposals)), "base", "proposed", "targets", "summary"
    )
    for p in proposals:
        revisions.add_row(
            p.revision_id,
            p.base_version,
            p.occurred_at.strftime("%Y-%m-%d %H:%M:%S"),
            ", ".join(p.targets),
            p.summary[:120],
        )
    console.print(revisions if revisions.row_count else "no pending harness revisions")


def _id_column(header: str, ids: Iterable[str]) -> Column:
    """The ids a reviewer copies into ``approve``/``reject`` are never cut, however narrow the terminal."""
    return Column(header, no_wrap=True, min_width=max((len(i) for i in ids), default=len(header)))


@app.command()
def show(episode: Item, bus: BusOpt = None, blobs: BlobsOpt = None) -> None:
    """The request, its curation history and the trajectory bundle it points at; or a revision and its patch."""
    bus_port, blob_store = _open(bus, blobs)
    revision = _pending_revision(bus_port, episode)
    if revision is not None:
        console.print(
            f"[bold]{revision.revision_id}[/] of {revision.base_version} (round {revision.round}, run "
            f"{revision.run_id})"
        )
        console.print(f"targets: {', '.join(revision.targets)}; motivated by {len(revision.motivated_by)} diagnoses")
        console.print(revision.summary, markup=False)
        console.print_json(blob_store.get(revision.patch).decode())
        return
    request, history = _pending_request(bus_port, episode)
    for event in history:
        console.print(f"[bold]{event.event_type}[/] {event.occurred_at:%H:%M:%S} {getattr(event, 'reasons', '')}")
    if request.evidence:
        console.print_json(blob_store.get(request.evidence[0]).decode())


def _decide(
    episode: str,
    decision: ReviewDecision,
    reviewer: str,
    note: str,
    bus: str | None,
    blobs: str | None,
    corrected: Path | None = None,
) -> None:
    from consumers.curator.bundle import MEDIA_TYPE
    from consumers.review.queue import decide
    from infra.events import ensure_topics, publish

    bus_port, blob_store = _open(bus, blobs)
    request, _ = _pending_request(bus_port, episode)
    ref = blob_store.put(corrected.read_bytes(), MEDIA_TYPE) if corrected is not None else None  # blob first
    ensure_topics(bus_port)
    publish(bus_port, decide(request, decision, reviewer, note, ref))
    console.print(f"{decision}: {episode} (the curator publishes the outcome)")


def _decide_revision(item: str, accept: bool, reviewer: str, note: str, bus: str | None, blobs: str | None) -> bool:
    """Publish the decision if ``item`` is a pending harness revision; False when it is not one."""
    from consumers.harness_reviser.queue import decide_revision
    from infra.events import ensure_topics, publish

    bus_port, _ = _open(bus, blobs)
    revision = _pending_revision(bus_port, item)
    if revision is None:
        return False
    ensure_topics(bus_port)
    publish(bus_port, decide_revision(revision, accept, reviewer, note))
    console.print(
        f"{'accepted' if accept else 'rejected'}: {item}" + (" (the harness reviser publishes it)" if accept else "")
    )
    return True


@app.command()
def approve(episode: Item, reviewer: Reviewer, note: Note = "", bus: BusOpt = None, blobs: BlobsOpt = None) -> None:
    """Admit the trajectory as it is; or accept the harness revision (the reviser publishes it)."""
    if not _decide_revision(episode, True, reviewer, note, bus, blobs):
        _decide(episode, "approve", reviewer, note, bus, blobs)


@app.command()
def correct(
    episode: Episode,
    reviewer: Reviewer,
    trajectory: Annotated[Path, typer.Option(exists=True, dir_okay=False, help="Corrected trajectory bundle (JSON).")],
    note: Note = "",
    bus: BusOpt = None,
    blobs: BlobsOpt = None,
) -> None:
    """Admit a corrected trajectory in place of the original."""
    _decide(episode, "correct", reviewer, note, bus, blobs, trajectory)


@app.command()
def reject(episode: Item, reviewer: Reviewer, note: Note = "", bus: BusOpt = None, blobs: BlobsOpt = None) -> None:
    """Never train on it; or reject the harness revision."""
    if not _decide_revision(episode, False, reviewer, note, bus, blobs):
        _decide(episode, "reject", reviewer, note, bus, blobs)


@app.command()
def quarantine(
    episode: Episode, reviewer: Reviewer, note: Note = "", bus: BusOpt = None, blobs: BlobsOpt = None
) -> None:
    """Keep holding it (e.g. needs a second opinion)."""
    _decide(episode, "quarantine", reviewer, note, bus, blobs)
