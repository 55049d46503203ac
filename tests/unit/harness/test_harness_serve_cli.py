"""``flywheel serve harness`` as a real process on loopback: auth, a sandbox episode streamed, blobs and bus written."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import orjson
import pytest
from stack_support import free_port

from bus_schemas.actions import Finish, ToolCall
from infra.bootstrap import open_bus
from infra.events import from_record

pytestmark = pytest.mark.unit

TOKEN = "cli-token"


@pytest.fixture
def server(tmp_path: Path) -> Iterator[str]:
    port = free_port()
    env = {
        **os.environ,
        "FLYWHEEL_HARNESS_TOKEN": TOKEN,
        "FLYWHEEL_BLOBS": f"file:///{tmp_path}/blobs",
        "FLYWHEEL_BUS": f"sqlite:///{tmp_path}/bus.db",
    }
    command = [
        sys.executable,
        "-c",
        "from infra.cli.serve import app; app()",
        "harness",
        "--port",
        str(port),
        "--memory-dir",
        str(tmp_path / "memory"),
    ]
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                assert process.poll() is None, process.stdout.read().decode()  # type: ignore[union-attr]
                time.sleep(0.2)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=10)


def test_served_harness_runs_a_sandbox_episode_with_auth(server: str, tmp_path: Path) -> None:
    script = [ToolCall(name="contacts.search_contacts", args={"query": "a"}), Finish(answer="found")]
    body = {
        "goal": "Find a contact with an 'a' in the name.",
        "user_id": "alex",
        "policy": {"kind": "scripted", "actions": [a.model_dump(mode="json") for a in script]},
    }
    assert httpx.post(f"{server}/v1/episodes", json=body).status_code == 401
    headers = {"Authorization": f"Bearer {TOKEN}"}
    with httpx.stream("POST", f"{server}/v1/episodes", json=body, headers=headers, timeout=30) as response:
        assert response.status_code == 200
        events = [orjson.loads(line) for line in response.iter_lines() if line]
    assert events[0]["event_type"] == "EpisodeStarted" and events[0]["backend"] == "sandbox"
    assert events[-1]["event_type"] == "EpisodeEnded" and events[-1]["reason"] == "finished"
    observation = next(e for e in events if e["event_type"] == "ObservationReturned")
    assert observation["error"] is None and observation["result"]
    context = next(e for e in events if e["event_type"] == "ContextBuilt")["context"]["sha256"]
    assert any(path.name.startswith(context) or context in str(path) for path in (tmp_path / "blobs").rglob("*"))
    assert (tmp_path / "memory" / "alex.db").exists()
    bus = open_bus(f"sqlite:///{tmp_path}/bus.db")
    try:
        published = [from_record(r).event_id for r in bus.replay("episodes")]
    finally:
        bus.close()
    assert sorted(published) == sorted(e["event_id"] for e in events)
