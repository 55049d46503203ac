"""Hostile clients of the harness HTTP service: bounded bodies, auth before parsing, no echoed input, a bounded
pool of episodes, cancellation when the client goes away, and uvicorn connection limits."""

from __future__ import annotations

import socket
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import orjson
import pytest
import uvicorn
from fastapi.testclient import TestClient
from stack_support import free_port

from bus_schemas.actions import Finish, ToolCall
from harness_service.actions.format import render_action
from harness_service.context.messages import ChatMessage
from harness_service.http.app import BackendEntry, ServiceDeps, create_app
from harness_service.http.limits import RequestLimits
from harness_service.http.server import ServerLimits, server_config
from harness_service.policy.base import PolicyOutput

sys.path.insert(0, str(Path(__file__).parents[1] / "unit" / "harness"))
from harness_fakes import NOTE_TOOLS, MemoryBlobs, NotesBackend, make_task  # noqa: E402

pytestmark = [pytest.mark.unit, pytest.mark.timeout(120)]

TOKEN = "hostile-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
SCRIPTED = {
    "kind": "scripted",
    "actions": [
        ToolCall(name="notes.add", args={"text": "x"}).model_dump(mode="json"),
        Finish(answer="done").model_dump(mode="json"),
    ],
}


class SlowPolicy:
    """Answers only after ``gate`` opens; finishes at call ``steps``; counts its calls."""

    name = model = "slow"

    def __init__(self, gate: threading.Event, steps: int = 1) -> None:
        self.gate = gate
        self.steps = steps
        self.calls = 0

    def generate(self, messages: Sequence[ChatMessage]) -> PolicyOutput:
        self.calls += 1
        self.gate.wait(timeout=30)
        action = (
            ToolCall(name="notes.add", args={"text": "again"}) if self.calls < self.steps else Finish(answer="late")
        )
        return PolicyOutput(text=render_action(action), input_tokens=1, output_tokens=1)


def _deps(limits: RequestLimits | None = None, policy: SlowPolicy | None = None) -> ServiceDeps:
    entry = BackendEntry(make=NotesBackend, kind="sandbox", tools=NOTE_TOOLS)
    return ServiceDeps(
        token=TOKEN,
        backends={"toy": entry},
        blobs=MemoryBlobs(),
        limits=limits or RequestLimits(),
        default_policy=(lambda: policy) if policy is not None else None,
    )


@pytest.fixture
def client() -> TestClient:
    return TestClient(create_app(_deps()), raise_server_exceptions=False)


class Served:
    def __init__(self, server: uvicorn.Server) -> None:
        self.server = server
        self.port = server.servers[0].sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"


@pytest.fixture
def serve() -> Iterator:
    """Factory: run ``create_app(deps)`` under uvicorn with ``server_config`` on a free loopback port."""
    running: list[tuple[uvicorn.Server, threading.Thread]] = []

    def start(deps: ServiceDeps, limits: ServerLimits | None = None) -> Served:
        server = uvicorn.Server(server_config(create_app(deps), "127.0.0.1", free_port(), limits, log_level="warning"))
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        running.append((server, thread))
        deadline = time.monotonic() + 20
        while not server.started:
            assert time.monotonic() < deadline, "the server did not start"
            time.sleep(0.02)
        return Served(server)

    yield start
    for server, thread in running:
        server.should_exit = True
        server.force_exit = True
        thread.join(timeout=10)


def _raw(port: int, data: bytes, timeout_s: float = 3.0) -> bytes:
    """Send ``data`` on a fresh connection and return what comes back before the server closes or goes quiet."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout_s) as sock:
        sock.sendall(data)
        return sock.recv(65536)


# -- what the service accepts -------------------------------------------------------------------------


def test_a_task_nested_300_deep_is_a_422_not_a_500(client: TestClient) -> None:
    task = orjson.loads(make_task().model_dump_json())
    deep: object = "x"
    for _ in range(300):
        deep = [deep]
    task["initial_conditions"]["fixtures"] = {"/notes/notes/n1": deep}
    response = client.post("/v1/episodes", json={"backend": "toy", "task": task, "policy": SCRIPTED}, headers=AUTH)
    assert response.status_code == 422 and "deeper than" in response.text


@pytest.mark.parametrize(
    ("body", "why"),
    [
        (b'{"backend": "toy", "goal": "x", "seed": NaN}', "finite"),
        (b'{"backend": "toy", "goal": "x", "seed": Infinity}', "finite"),
        (b'{"backend": "toy", "goal": "\\ud800 lone"}', "surrogates"),
        (b'{"backend": "\\ud800", "goal": "x"}', "surrogates"),
    ],
)
def test_unserialisable_input_is_a_422_that_does_not_echo_it(client: TestClient, body: bytes, why: str) -> None:
    response = client.post("/v1/episodes", content=body, headers={**AUTH, "Content-Type": "application/json"})
    assert response.status_code == 422 and why in response.text
    assert "input" not in response.json()["detail"][0]


def test_a_validation_error_never_echoes_a_long_input(client: TestClient) -> None:
    goal = "G" * 500_000
    response = client.post("/v1/episodes", json={"backend": "toy", "goal": goal}, headers=AUTH)
    assert response.status_code == 422 and len(response.content) < 2000 and "GGGG" not in response.text


def test_an_oversized_body_is_refused_before_it_is_read(serve) -> None:
    served = serve(_deps(RequestLimits(max_body_bytes=64 * 1024)))
    head = b"POST /v1/episodes HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 104857600\r\n"
    started = time.monotonic()
    assert _raw(served.port, head + b"\r\n").startswith(b"HTTP/1.1 401")  # no token: 401, body never read
    assert _raw(served.port, head + f"Authorization: Bearer {TOKEN}\r\n\r\n".encode()).startswith(b"HTTP/1.1 413")
    assert time.monotonic() - started < 2.0  # neither waited for the 100 MB that never came


def test_a_chunked_body_is_cut_off_at_the_limit(serve) -> None:
    served = serve(_deps(RequestLimits(max_body_bytes=64 * 1024)))

    def chunks() -> Iterator[bytes]:
        for _ in range(100):
            yield b" " * 4096

    response = httpx.post(f"{served.url}/v1/episodes", content=chunks(), headers=AUTH, timeout=10)
    assert response.status_code == 413


def test_episodes_beyond_the_pool_get_503_with_retry_after(serve) -> None:
    gate = threading.Event()
    served = serve(_deps(RequestLimits(max_episodes=2), SlowPolicy(gate)))
    try:
        with httpx.Client(timeout=10) as first, httpx.Client(timeout=10) as second:
            streams = [
                c.stream("POST", f"{served.url}/v1/episodes", json={"backend": "toy", "goal": "x"}, headers=AUTH)
                for c in (first, second)
            ]
            responses = [s.__enter__() for s in streams]
            assert [r.status_code for r in responses] == [200, 200]
            third = httpx.post(f"{served.url}/v1/episodes", json={"backend": "toy", "goal": "x"}, headers=AUTH)
            assert third.status_code == 503 and third.headers["retry-after"] == "5"
            for stream in streams:
                stream.__exit__(None, None, None)
    finally:
        gate.set()


def test_healthz_answers_while_45_slow_episodes_run(serve) -> None:
    gate = threading.Event()
    served = serve(_deps(RequestLimits(max_episodes=64), SlowPolicy(gate)), ServerLimits(limit_concurrency=200))

    def one_episode(_: int) -> int:
        with httpx.stream(
            "POST", f"{served.url}/v1/episodes", json={"backend": "toy", "goal": "x"}, headers=AUTH, timeout=30
        ) as response:
            lines = response.iter_lines()  # held: a dropped iterator closes the connection
            next(lines)
            gate.wait(timeout=30)
            return response.status_code

    with ThreadPoolExecutor(45) as pool:
        running = [pool.submit(one_episode, i) for i in range(45)]
        time.sleep(1.0)
        try:  # before: every worker thread blocked on a stream, and /healthz hung until they finished
            assert httpx.get(f"{served.url}/healthz", timeout=10).status_code == 200
        finally:
            gate.set()
        assert all(f.result() == 200 for f in running)


def test_an_episode_stops_calling_the_policy_when_its_client_goes_away(serve) -> None:
    gate = threading.Event()
    policy = SlowPolicy(gate, steps=50)
    served = serve(_deps(RequestLimits(max_episodes=1), policy))
    with httpx.stream(
        "POST", f"{served.url}/v1/episodes", json={"backend": "toy", "goal": "x"}, headers=AUTH, timeout=10
    ) as response:
        lines = response.iter_lines()  # held until the with block ends: then the client goes away
        assert orjson.loads(next(lines))["event_type"] == "EpisodeStarted"
        deadline = time.monotonic() + 10
        while policy.calls == 0 and time.monotonic() < deadline:
            time.sleep(0.02)
    time.sleep(0.5)  # the client is gone while the policy is blocked in its first call
    gate.set()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:  # the pool slot comes back once the episode has ended
        if (
            httpx.post(
                f"{served.url}/v1/episodes", json={"backend": "toy", "goal": "x", "policy": SCRIPTED}, headers=AUTH
            ).status_code
            == 200
        ):
            break
        time.sleep(0.1)
    else:
        pytest.fail("the abandoned episode never gave its slot back")
    assert policy.calls == 1  # not the 50 steps it would have run for nobody


# -- uvicorn limits -----------------------------------------------------------------------------------


def test_a_client_dripping_its_headers_is_disconnected(serve) -> None:
    served = serve(_deps(), ServerLimits(header_timeout_s=0.5))
    with socket.create_connection(("127.0.0.1", served.port), timeout=5) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\n")
        started = time.monotonic()
        closed = False
        while time.monotonic() - started < 4:
            try:
                sock.sendall(b"X")
                time.sleep(0.1)
                sock.setblocking(False)
                try:
                    closed = sock.recv(1024) == b""
                except BlockingIOError:
                    pass
                finally:
                    sock.setblocking(True)
            except OSError:
                closed = True
            if closed:
                break
        assert closed and time.monotonic() - started < 2.5


def test_the_server_caps_concurrency_and_header_size() -> None:
    config = server_config(
        create_app(_deps()), "127.0.0.1", 0, ServerLimits(limit_concurrency=7, max_header_bytes=4096)
    )
    assert config.limit_concurrency == 7 and config.h11_max_incomplete_event_size == 4096
    assert config.timeout_keep_alive == 5
