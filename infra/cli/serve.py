"""``flywheel serve``: run a service over HTTP. ``harness``: the runtime harness (episodes streamed as NDJSON);
``model``: a registry version behind an OpenAI-compatible server, following its alias (``infra.serving``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bus_schemas.envelope import Event
    from bus_schemas.events.training import ModelServed
    from harness_service.ports import EventSink

import os
from pathlib import Path
from typing import Annotated

import typer

from infra.serving.engines import Engine

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
    from producers.backends import plugins
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
        backends={
            "sandbox": BackendEntry(
                make=plugins.backend_factory("sandbox"), kind="sandbox", tools=[t.spec for t in TOOLS.values()]
            )
        },
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


@app.command()
def model(
    version: Annotated[
        str,
        typer.Argument(
            metavar="NAME@ALIAS|NAME/VERSION",
            help="planner@production (followed: a promoted version is served as soon as the alias moves), or a fixed "
            "planner/3 (also planner@3).",
        ),
    ],
    engine: Annotated[
        Engine,
        typer.Option(
            help="transformers: `transformers serve` (CPU, any machine); vllm: `vllm serve` (GPU, 'gpu' extra)."
        ),
    ] = "transformers",
    host: Annotated[str, typer.Option(help="Interface the engine binds.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=1, max=65535, help="TCP port of the engine.")] = 8000,
    registry: Annotated[str | None, typer.Option(help="Registry URL (default: FLYWHEEL_REGISTRY).")] = None,
    bus: Annotated[str | None, typer.Option(help="Bus URL ModelServed goes to (default: FLYWHEEL_BUS).")] = None,
    cache_dir: Annotated[
        Path, typer.Option(help="Downloaded versions (<name>/<version>) and the engine's log (logs/).")
    ] = Path(".flywheel/served"),
    poll: Annotated[float, typer.Option(min=0.1, help="Seconds between checks of the alias and the engine.")] = 5.0,
    device: Annotated[str, typer.Option(help="transformers: device of the model (cpu, cuda, auto).")] = "cpu",
    threads: Annotated[
        int | None, typer.Option(min=1, help="transformers: torch CPU threads (default: every core).")
    ] = None,
    native_tools: Annotated[
        bool, typer.Option(help="vllm: parse Hermes tool calls into the reply's tool_calls (the `tools` field works).")
    ] = True,
    start_timeout: Annotated[float, typer.Option(min=1.0, help="Seconds the engine has to start.")] = 300.0,
    run_id: Annotated[str, typer.Option(help="run_id of the ModelServed events.")] = "serve",
) -> None:
    """Serve a registered model version over an OpenAI-compatible API (POST /v1/chat/completions) until Ctrl-C.

    Downloads the version's checkpoint, gives it the harness's chat template (a request renders exactly the text the
    in-process policy renders; checked before serving), starts the engine, loads the version and publishes
    ModelServed on the bus. The model is served under its registry label (planner/4): point rollout workers at it
    with --inference openai+http://HOST:PORT/v1 and every episode records the version that produced it. With an
    alias, the registry is polled every --poll seconds and a new version is served the same way (transformers: by the
    running server, loaded by name; vllm: the server is restarted on the same port), then announced.
    """
    from infra.bootstrap import open_bus, open_registry
    from infra.cli.signals import stop_on_signals
    from infra.config import load_settings
    from infra.events import ensure_topics, publish
    from infra.serving.engines import check_engine
    from infra.serving.server import ModelServer, ServeOptions, ServeTarget

    try:
        target = ServeTarget.parse(version)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="NAME@ALIAS|NAME/VERSION") from None
    check_engine(engine)
    settings = load_settings(registry=registry, bus=bus)
    event_bus = open_bus(settings.bus, settings)
    ensure_topics(event_bus)
    options = ServeOptions(
        engine=engine,
        host=host,
        port=port,
        cache_root=cache_dir.resolve(),
        device=device,
        threads=threads,
        native_tools=native_tools,
        start_timeout_s=start_timeout,
        run_id=run_id,
    )

    def announce(event: ModelServed) -> None:
        publish(event_bus, event)
        digest = event.checkpoint_sha256[:12]
        typer.echo(f"serving {event.served_model_name} ({engine}) at {event.endpoint}: checkpoint {digest}")

    server = ModelServer(open_registry(settings.registry, settings), target, options, announce)
    try:
        with stop_on_signals() as stop:
            server.follow(stop, poll_s=poll)  # a fixed version: the engine is still watched
    finally:
        server.close()
        event_bus.close()
