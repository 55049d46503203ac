"""``flywheel consume rollout-worker --workers 2`` on the embedded bus, and the pool rows of ``flywheel status``."""

from __future__ import annotations

from pathlib import Path

import pytest
import typer
from rich.console import Console
from scripted_requests import scripted_request
from typer.testing import CliRunner

from infra.bootstrap import open_bus
from infra.cli.consume_rollout import rollout_worker
from infra.cli.status_pool import pool_table
from infra.events import ensure_topics, from_record, publish
from producers.tasks import build_task_suite

pytestmark = pytest.mark.integration


def test_two_worker_processes_from_the_cli_run_every_request_and_report_pool_usage(tmp_path: Path) -> None:
    bus_url, blobs_url = f"sqlite:///{tmp_path}/bus.db?session_timeout_s=1.5", f"file:///{tmp_path}/blobs"
    tasks = build_task_suite("cli")[:6]
    bus = open_bus(bus_url)
    ensure_topics(bus)
    publish(bus, *tasks)
    publish(bus, *[scripted_request(t, run_id="cli") for t in tasks])
    app = typer.Typer()
    app.command("rollout-worker")(rollout_worker)
    app.command("noop")(lambda: None)
    state = tmp_path / "state"
    result = CliRunner().invoke(
        app,
        [
            "rollout-worker",
            "--workers",
            "2",
            "--idle-exit",
            "4",
            "--state-dir",
            str(state),
            "--bus",
            bus_url,
            "--blobs",
            blobs_url,
        ],
    )
    assert result.exit_code == 0, result.output
    ended = [e for e in (from_record(r) for r in bus.replay("episodes")) if e.event_type == "EpisodeEnded"]
    assert sorted(e.task_id for e in ended) == sorted(t.task_id for t in tasks), [
        (e.episode_id, e.reason, e.producer.service) for e in ended
    ]
    console = Console(width=200, record=True)
    console.print(pool_table(state))
    text = console.export_text()
    assert "rollout-worker-0" in text and "rollout-worker-1" in text and "sandbox" in text
    bus.close()
