"""The HTTP service: bearer auth, a full episode streamed as NDJSON, free goals, OpenAPI."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence

import httpx
import orjson
import pytest
import uvicorn
from fastapi.testclient import TestClient
from harness_fakes import NOTE_TOOLS, EventList, MemoryBlobs, NotesBackend, make_task

from bus_schemas.actions import Finish, ToolCall
from bus_schemas.envelope import Producer
from bus_schemas.events.harness import HarnessVersionPublished
from harness_service.actions.format import render_action
from harness_service.config import HarnessConfig
from harness_service.context.messages import ChatMessage
from harness_service.http.app import BackendEntry, ServiceDeps, create_app
from harness_service.live_config import LiveConfig
from harness_service.policy.base import PolicyOutput

pytestmark = pytest.mark.unit

TOKEN = "s3cret-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
SCRIPT = [ToolCall(name="notes.add", args={"text": "hello"}), Finish(answer="hello")]


@pytest.fixture
def published() -> EventList:
    return EventList()


@pytest.fixture
def client(published: EventList) -> TestClient:
    entry = BackendEntry(make=NotesBackend, kind="sandbox", tools=NOTE_TOOLS)
    deps = ServiceDeps(token=TOKEN, backends={"toy": entry}, blobs=MemoryBlobs(), publish=published)
    return TestClient(create_app(deps))


def body(**extra: object) -> dict[str, object]:
    policy = {"kind": "scripted", "name": "ref", "actions": [a.model_dump(mode="json") for a in SCRIPT]}
    return {"backend": "toy", "policy": policy, **extra}


def test_healthz_needs_no_token(client: TestClient) -> None:
    response = client.get("/healthz")
    assert response.status_code == 200 and response.json()["harness"].startswith("default@sha256:")


@pytest.mark.parametrize("headers", [{}, {"Authorization": "Bearer wrong"}, {"Authorization": TOKEN}])
def test_missing_or_wrong_token_is_401(client: TestClient, headers: dict[str, str]) -> None:
    response = client.post("/v1/episodes", json=body(goal="Add hello"), headers=headers)
    assert response.status_code == 401 and response.headers["www-authenticate"] == "Bearer"


def test_a_task_episode_streams_its_events_as_ndjson(client: TestClient, published: EventList) -> None:
    task = orjson.loads(make_task().model_dump_json())
    with client.stream("POST", "/v1/episodes", json=body(task=task), headers=AUTH) as response:
        assert response.status_code == 200 and response.headers["content-type"].startswith("application/x-ndjson")
        lines = [orjson.loads(line) for line in response.iter_lines() if line]
    types = [line["event_type"] for line in lines]
    assert types == [
        "EpisodeStarted",
        "ContextBuilt",
        "ActionTaken",
        "ObservationReturned",
        "ContextBuilt",
        "ActionTaken",
        "EpisodeEnded",
    ]
    assert lines[-1]["reason"] == "finished" and lines[-1]["answer"] == "hello" and lines[0]["task_id"] == "task-1"
    assert [e.event_id for e in published] == [line["event_id"] for line in lines]


def test_a_free_goal_runs_as_an_adhoc_task(client: TestClient) -> None:
    response = client.post("/v1/episodes", json=body(goal="Please add hello"), headers=AUTH)
    lines = [orjson.loads(line) for line in response.text.splitlines()]
    assert lines[0]["task_id"].startswith("adhoc-") and lines[-1]["reason"] == "finished"


@pytest.mark.parametrize(
    ("extra", "status"),
    [
        ({}, 422),
        ({"goal": "x", "task": None, "backend": "nope"}, 404),
        ({"goal": "x", "policy": {"kind": "default"}}, 422),
    ],
)
def test_bad_requests_are_rejected_before_running(client: TestClient, extra: dict[str, object], status: int) -> None:
    payload = {**body(), **extra}
    assert client.post("/v1/episodes", json=payload, headers=AUTH).status_code == status


def test_openapi_documents_the_episode_endpoint(client: TestClient) -> None:
    spec = client.get("/openapi.json").json()
    assert "/v1/episodes" in spec["paths"] and "EpisodeRequest" in spec["components"]["schemas"]


def test_a_published_harness_version_applies_to_the_next_episode(published: EventList) -> None:
    blobs = MemoryBlobs()
    live = LiveConfig(HarnessConfig())
    entry = BackendEntry(make=NotesBackend, kind="sandbox", tools=NOTE_TOOLS)
    client = TestClient(create_app(ServiceDeps(token=TOKEN, backends={"toy": entry}, blobs=blobs, config=live)))
    newer = HarnessConfig(instructions="Only ever use notes.add.")
    ref = blobs.put(newer.model_dump_json().encode(), "application/json")
    event = HarnessVersionPublished(
        producer=Producer(service="reviser", version="1"),
        run_id="r",
        harness_name="default",
        harness_version="default/2",
        config=ref,
    )
    assert live.apply(event, blobs)
    assert client.get("/healthz").json()["harness"] == "default/2"
    lines = [
        orjson.loads(line) for line in client.post("/v1/episodes", json=body(goal="x"), headers=AUTH).text.splitlines()
    ]
    assert lines[0]["harness_version"] == "default/2"
    context = next(line for line in lines if line["event_type"] == "ContextBuilt")["context"]["sha256"]
    assert b"Only ever use notes.add." in blobs.blobs[context]


def test_a_config_pinned_to_another_skill_library_is_a_409() -> None:
    live = LiveConfig(HarnessConfig(skill_library_version="sha256:elsewhere"))
    entry = BackendEntry(make=NotesBackend, kind="sandbox", tools=NOTE_TOOLS)
    client = TestClient(create_app(ServiceDeps(token=TOKEN, backends={"toy": entry}, blobs=MemoryBlobs(), config=live)))
    response = client.post("/v1/episodes", json=body(goal="x"), headers=AUTH)
    assert response.status_code == 409 and "sha256:elsewhere" in response.json()["detail"]


class GatedPolicy:
    """Finishes only once the test has seen the first streamed events."""

    name = model = "gated"

    def __init__(self, gate: threading.Event) -> None:
        self.gate = gate

    def generate(self, messages: Sequence[ChatMessage]) -> PolicyOutput:
        assert self.gate.wait(timeout=20), "the stream never delivered the first events"
        return PolicyOutput(text=render_action(Finish(answer="late")), input_tokens=1, output_tokens=1)


def test_events_stream_while_the_episode_is_still_running() -> None:
    gate = threading.Event()
    entry = BackendEntry(make=NotesBackend, kind="sandbox", tools=NOTE_TOOLS)
    deps = ServiceDeps(
        token=TOKEN, backends={"toy": entry}, blobs=MemoryBlobs(), default_policy=lambda: GatedPolicy(gate)
    )
    server = uvicorn.Server(uvicorn.Config(create_app(deps), host="127.0.0.1", port=0, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        while not server.started:
            time.sleep(0.05)
        port = server.servers[0].sockets[0].getsockname()[1]
        request = {"backend": "toy", "goal": "x"}
        url = f"http://127.0.0.1:{port}/v1/episodes"
        with httpx.stream("POST", url, json=request, headers=AUTH, timeout=30) as response:
            lines = response.iter_lines()
            first = [orjson.loads(next(lines))["event_type"] for _ in range(2)]
            gate.set()  # only now may the policy answer
            rest = [orjson.loads(line)["event_type"] for line in lines if line]
        assert first == ["EpisodeStarted", "ContextBuilt"] and rest == ["ActionTaken", "EpisodeEnded"]
    finally:
        gate.set()
        server.should_exit = True
        thread.join(timeout=10)
