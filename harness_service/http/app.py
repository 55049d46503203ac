"""FastAPI wiring: ``POST /v1/episodes`` streams an episode's events as NDJSON; ``GET /healthz``; bearer auth.

Limits (``harness_service.http.limits``): body size and token checked before the body is read, a bounded
pool of running episodes (503 + Retry-After beyond it), and episodes cancelled when their client goes away.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from fastapi import Depends, FastAPI, HTTPException
from fastapi.responses import StreamingResponse

from bus_schemas.envelope import Event
from bus_schemas.events.tasks import BackendKind
from harness_service.config import HarnessConfig
from harness_service.http.auth import bearer_guard
from harness_service.http.limits import EpisodeSlots, RequestLimits, install
from harness_service.http.requests import EpisodeRequest, PolicyChoice, adhoc_task
from harness_service.http.streaming import CancellablePolicy, stream_events
from harness_service.live_config import LiveConfig
from harness_service.memory.store import MemoryStore
from harness_service.policy.base import Policy
from harness_service.policy.scripted import ScriptedPolicy
from harness_service.ports import BlobSink, EventSink
from harness_service.runner.episode import PRODUCER, Harness, RunIds, run_episode
from harness_service.skills.library import SkillLibrary
from harness_service.tools.selection import select_tools
from producers.backends.base import Backend, ToolSpec

NDJSON = "application/x-ndjson"


@dataclass(frozen=True)
class BackendEntry:
    """How to make a fresh backend per request, its kind, and the tools a free goal is chosen from."""

    make: Callable[[], Backend]
    kind: BackendKind
    tools: list[ToolSpec]


@dataclass
class ServiceDeps:
    """Ports and choices the bootstrap injects; ``config`` is read per request: a new version applies at once."""

    token: str
    backends: Mapping[str, BackendEntry]
    blobs: BlobSink
    config: LiveConfig = field(default_factory=lambda: LiveConfig(HarnessConfig()))
    default_policy: Callable[[], Policy] | None = None
    publish: EventSink | None = None
    skills: SkillLibrary = field(default_factory=SkillLibrary.empty)
    memory_dir: Path | None = None
    allow_scripted: bool = True
    adhoc_max_tools: int = 24
    """A free goal is offered this many tools, the best BM25 matches of the goal."""
    limits: RequestLimits = field(default_factory=RequestLimits)


def _no_events(event: Event) -> None:
    """Placeholder sink until the stream supplies the real one."""


def _policy(deps: ServiceDeps, choice: PolicyChoice) -> Policy:
    if choice.kind == "scripted" and deps.allow_scripted:
        return ScriptedPolicy(choice.actions, choice.name)
    if choice.kind == "default" and deps.default_policy is not None:
        return deps.default_policy()
    raise HTTPException(status_code=422, detail=f"policy {choice.kind!r} is not available on this server")


def _memory(deps: ServiceDeps, user_id: str) -> MemoryStore:
    if deps.memory_dir is None:
        return MemoryStore(user_id=user_id)
    deps.memory_dir.mkdir(parents=True, exist_ok=True)
    return MemoryStore(deps.memory_dir / f"{user_id}.db", user_id=user_id)


def create_app(deps: ServiceDeps) -> FastAPI:
    """The service; OpenAPI at ``/openapi.json``."""
    app = FastAPI(title="planner-flywheel harness", version=PRODUCER.version)
    install(app, token=deps.token, limits=deps.limits)
    authorised = [Depends(bearer_guard(deps.token))]  # checked first by the guard middleware; kept for OpenAPI
    slots = EpisodeSlots(deps.limits)

    @app.get("/healthz")
    async def healthz() -> dict[str, str]:  # async: answers even when every worker thread is busy
        return {"status": "ok", "harness": deps.config.version}

    @app.post("/v1/episodes", dependencies=authorised, response_class=StreamingResponse)
    async def run(request: EpisodeRequest) -> StreamingResponse:
        """Run one episode and stream its events, one JSON object per line, as they happen."""
        entry = deps.backends.get(request.backend)
        if entry is None:
            raise HTTPException(
                status_code=404, detail=f"unknown backend {request.backend!r}; have {sorted(deps.backends)}"
            )
        policy = _policy(deps, request.policy)
        task = request.task
        if task is None:
            goal = request.goal or ""
            tools = select_tools(goal, entry.tools, deps.adhoc_max_tools)
            task = adhoc_task(goal, tools, entry.kind, PRODUCER, request.run_id)
        config, version = deps.config.current()
        cancelled = threading.Event()
        try:
            harness = Harness(
                config, CancellablePolicy(policy, cancelled), deps.blobs, _no_events, deps.skills, version_label=version
            )
        except ValueError as exc:  # e.g. a config pinned to another skill library
            raise HTTPException(status_code=409, detail=str(exc)) from exc
        slots.take()  # 503 when the pool is full; given back when the episode thread ends

        def episode(sink: EventSink) -> None:
            backend, memory = entry.make(), _memory(deps, request.user_id)
            try:
                run_episode(
                    replace(harness, events=sink), task, backend, RunIds(run_id=request.run_id), memory, request.seed
                )
            finally:
                backend.close()
                memory.close()

        stream = stream_events(episode, deps.publish, cancelled=cancelled, finished=slots.give_back)
        return StreamingResponse(stream, media_type=NDJSON)

    return app
