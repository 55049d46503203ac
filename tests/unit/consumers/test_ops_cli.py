"""The ops commands on an embedded log: consume --list, status (lag, dead letters,
pending reviews), review decisions."""

from __future__ import annotations

import pytest
import typer
from consumer_factory import IDS
from typer.testing import CliRunner

from bus_schemas.blob_ref import BlobRef
from bus_schemas.events import DeadLettered, ReviewDecided, ReviewRequested
from infra.bootstrap import open_bus
from infra.cli import consume, review, status
from infra.events import ensure_topics, from_record, publish_all

pytestmark = pytest.mark.unit


@pytest.fixture
def cli() -> typer.Typer:
    app = typer.Typer()
    app.command("consume")(consume.consume)
    app.command("status")(status.status)
    app.add_typer(review.app, name="review")
    return app


@pytest.fixture
def bus_url(tmp_path) -> str:
    url = f"sqlite:///{tmp_path}/bus.db"
    bus = open_bus(url)
    ensure_topics(bus)
    letter = DeadLettered(
        **IDS,
        original_topic="episodes",
        original_partition=0,
        original_offset=3,
        consumer_group="flywheel.verifier",
        error_type="MissingInput",
        error="no task",
        attempts=3,
        payload=BlobRef(sha256="d" * 64, size=1),
    )
    publish_all(bus, [letter, ReviewRequested(**IDS, task_id="t", episode_id="ep-7", reasons=["safety-sensitive"])])
    bus.close()
    return url


def test_consume_lists_every_consumer(cli):
    out = CliRunner().invoke(cli, ["consume", "--list"])
    assert out.exit_code == 0 and all(
        name in out.output for name in ("verifier", "curator", "diagnoser", "reweighter", "round_controller")
    )
    assert CliRunner().invoke(cli, ["consume", "nope"]).exit_code != 0


def test_status_shows_dead_letters_and_pending_reviews(cli, bus_url):
    out = CliRunner().invoke(cli, ["status", "--bus", bus_url], env={"COLUMNS": "200"})
    assert out.exit_code == 0, out.output
    assert "MissingInput" in out.output and "pending reviews: 1" in out.output and "flywheel.verifier" in out.output


def test_a_review_decision_is_published_once_and_then_no_longer_pending(cli, bus_url, tmp_path):
    blobs = f"file:///{tmp_path}/blobs"
    out = CliRunner().invoke(
        cli, ["review", "approve", "ep-7", "--reviewer", "ana", "--note", "fine", "--bus", bus_url, "--blobs", blobs]
    )
    assert out.exit_code == 0, out.output
    bus = open_bus(bus_url)
    [decided] = [e for e in map(from_record, bus.replay("curation")) if isinstance(e, ReviewDecided)]
    assert (decided.decision, decided.reviewer, decided.note) == ("approve", "ana", "fine")
    bus.close()
    again = CliRunner().invoke(
        cli, ["review", "reject", "ep-7", "--reviewer", "bo", "--bus", bus_url, "--blobs", blobs]
    )
    assert again.exit_code != 0 and "no pending review" in again.output
