"""``flywheel episode show``: a ``flywheel run`` keeps its episodes in its own topics (``<run_id>.episodes``), so the
command takes ``--run-id`` and, without it, names the runs on the bus instead of only saying nothing was found."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from consumers.common.recording import record_episode
from infra.blobs.filesystem import FileBlobStore
from infra.bootstrap import open_bus
from infra.cli.main import app
from infra.events import ensure_topics, publish_all
from infra.loop.run import run_namespace
from producers.tasks import build_task_suite, reference_solver

pytestmark = pytest.mark.unit

RUN = "run-20261203-120000-abc123"


def test_an_episode_of_a_run_is_shown_with_its_run_id_and_the_runs_are_named_without_it(tmp_path: Path) -> None:
    url, blobs = f"sqlite:///{tmp_path}/bus.db", FileBlobStore(tmp_path / "blobs")
    bus = open_bus(run_namespace(url, RUN))
    ensure_topics(bus)
    task = next(t for t in build_task_suite("show") if t.split == "train")
    publish_all(bus, record_episode(task, reference_solver, blobs, episode_id="ep-1", run_id=RUN))
    bus.close()
    common = ["--bus", url, "--blobs", f"file://{tmp_path}/blobs"]

    shown = CliRunner().invoke(app, ["episode", "show", "ep-1", "--run-id", RUN, *common], env={"COLUMNS": "200"})
    assert shown.exit_code == 0, shown.output
    assert f"started  task={task.task_id}" in shown.output and "ended    finished" in shown.output

    missing = CliRunner().invoke(app, ["episode", "show", "ep-1", *common], env={"COLUMNS": "200"})
    assert missing.exit_code == 1
    assert "no events for episode ep-1" in missing.output and RUN in missing.output and "--run-id" in missing.output

    other = CliRunner().invoke(app, ["episode", "show", "ep-1", "--run-id", "run-other", *common])
    assert other.exit_code == 1 and RUN not in other.output  # the hint is for a missing --run-id only
