"""``flywheel serve``: run a service over HTTP. ``harness``: the runtime harness (episodes streamed as NDJSON)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bus_schemas.envelope import Event
    from harness_service.ports import EventSink

import os
from pathlib import Path
from typing import Annotated

import typer

app = typer.Typer(help="Serve a platform service over HTTP on this machine.", no_args_is_help=True)


@app.callback()
def serve() -> None:
    """Serve a platform service over HTTP on this machine."""


@app.command()
def harness(
    host: Annotated[str, typer.Option(help="Interface to bind.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=1, max=65535, help="TCP port.")] = 8321,
    token_env: Annotated[
        str, typer.Option(help="Environment variable holding the bearer token.")
    ] = "FLYWHEEL_HARNESS_TOKEN",
    config: Annotated[Path | None, typer.Option(help="Harness config JSON (HarnessConfig.model_dump_json()).")] = None,
    skills: Annotated[Path | None, typer.Option(help="Skill library folder; default: the sandbox skills.")] = None,
    memory_dir: Annotated[Path, typer.Option(help="Per-user memory SQLite files.")] = Path(".flywheel/memory"),
    policy_url: Annotated[str | None, typer.Option(help="OpenAI-compatible base URL of the default policy.")] = None,
    model: Annotated[str, typer.Option(help="Model name sent to the policy endpoint.")] = "planner",
    api_key_env: Annotated[
        str, typer.Option(help="Environment variable holding the policy API key.")
    ] = "FLYWHEEL_POLICY_KEY",
    native_tools: Annotated[
        bool,
        typer.Option(help="Send the step's tools in the request's `tools` field (off: the context text only)."),
    ] = True,
    publish: Annotated[bool, typer.Option(help="Also publish every event to the bus (FLYWHEEL_BUS).")] = True,
    max_episodes: Annotated[
        int, typer.Option(min=1, help="Episodes run at once; beyond it a request gets 503 + Retry-After.")
    ] = 8,
    max_body_bytes: Annotated[
        int, typer.Option(min=1024, help="Largest request body accepted (413 above, checked before reading).")
    ] = 1024 * 1024,
    limit_concurrency: Annotated[
        int, typer.Option(min=1, help="Connections plus requests the server holds; 503 beyond.")
    ] = 64,
    header_timeout: Annotated[
        float, typer.Option(min=0.1, help="Seconds a client has to send its request headers.")
    ] = 10.0,
) -> None:
    """Serve ``POST /v1/episodes`` (bearer auth) and ``GET /healthz``; OpenAPI at ``/docs``."""
    import uvicorn

    from harness_service.config import HarnessConfig
    from harness_service.http.app import BackendEntry, ServiceDeps, create_app
    from harness_service.http.limits import RequestLimits
    from harness_service.http.server import ServerLimits, server_config
    from harness_service.live_config import LiveConfig
    from harness_service.policy.openai_http import OpenAICompatiblePolicy, OpenAIPolicyConfig
    from harness_service.skills.library import SkillLibrary
    from infra.bootstrap import open_blob_store, open_bus
    from infra.config import load_settings
    from infra.events import ensure_topics
    from infra.events import publish as publish_events
    from producers.backends.sandbox.backend import SandboxBackend
    from producers.backends.sandbox.catalog import TOOLS
    from producers.backends.sandbox.skill_docs import SKILLS_DIR

    token = os.environ.get(token_env)
    if not token:
        raise typer.BadParameter(f"set the bearer token in ${token_env}", param_hint="--token-env")
    settings = load_settings()
    publisher: EventSink | None = None
    if publish:
        bus = open_bus(settings.bus, settings)
        ensure_topics(bus)

        def publisher(event: Event) -> None:
            publish_events(bus, event)

    default_policy = None
    if policy_url is not None:
        key = os.environ.get(api_key_env)
        policy_config = OpenAIPolicyConfig(base_url=policy_url, model=model, api_key=key, native_tools=native_tools)
        default_policy = lambda: OpenAICompatiblePolicy(policy_config)  # noqa: E731
    deps = ServiceDeps(
        token=token,
        backends={"sandbox": BackendEntry(make=SandboxBackend, kind="sandbox", tools=[t.spec for t in TOOLS.values()])},
        blobs=open_blob_store(settings.blobs, settings),
        config=LiveConfig(HarnessConfig.load(config) if config is not None else HarnessConfig()),
        default_policy=default_policy,
        publish=publisher,
        skills=SkillLibrary.from_dir(skills or SKILLS_DIR),
        memory_dir=memory_dir,
        limits=RequestLimits(max_body_bytes=max_body_bytes, max_episodes=max_episodes),
    )
    limits = ServerLimits(limit_concurrency=limit_concurrency, header_timeout_s=header_timeout)
    uvicorn.Server(server_config(create_app(deps), host, port, limits)).run()
