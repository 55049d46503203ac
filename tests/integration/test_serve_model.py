"""A registered version served by ``transformers serve`` through our serve code, driven by the rollout worker over
``openai+http``: episodes end, are judged, record the served version and the server's token usage; the prompt the
server counted is the harness's rendering of the recorded context, and its greedy reply is the in-process policy's.
Promoting a second version moves the same worker (not restarted) to it once the server announces it.

No stack: the embedded bus, blobs and registry; the engine is a real ``transformers serve`` process on loopback.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import psutil
import pytest
from stack_support import free_port

from bus_schemas.envelope import Event, Producer
from bus_schemas.events.episodes import ActionRejected, ActionTaken, ContextBuilt, EpisodeEnded, EpisodeStarted
from bus_schemas.events.rollouts import RolloutRequested
from bus_schemas.events.training import ModelServed
from consumers.verifier.spec import Verifier
from harness_service.context.messages import ASSISTANT_START, decode_context, render_messages
from harness_service.policy.inference import parse_inference
from infra.bootstrap import Ports, open_blob_store, open_bus, open_registry
from infra.events import ensure_topics, from_record, publish
from infra.serving.server import ModelServer, ServeOptions, ServeTarget
from learner.model import PlannerPolicy, TinyModelConfig, build_tiny_model, save_checkpoint, train_tokenizer
from learner.model.window import PromptWindow
from learner.registry import PRODUCTION, Lineage, register_checkpoint
from producers.backends.sandbox import SandboxBackend
from producers.pool import EnvironmentPool
from producers.rollout import RolloutWorker
from producers.rollout.versions import VersionResolver
from producers.tasks import build_task_suite

pytestmark = pytest.mark.e2e  # a model server process and six short episodes: ~60 s on two busy cores; no stack
P = Producer(service="test", version="0")
TASKS = build_task_suite("serve")[:2]
MAX_NEW_TOKENS = 12
WINDOW = PromptWindow(max_prompt_tokens=100_000, max_new_tokens=MAX_NEW_TOKENS)
"""Wide enough to keep every prompt whole: the in-process policy then conditions on exactly what the server does."""


def register_version(ports: Ports, path: Path, seed: int) -> str:
    tokenizer = train_tokenizer(['<tool_call>\n{"name": "finish", "arguments": {}}\n</tool_call> notes'] * 20, 300)
    checkpoint = save_checkpoint(
        build_tiny_model(tokenizer, TinyModelConfig(hidden_size=32, seed=seed)), tokenizer, path
    )
    WINDOW.save(checkpoint)
    manifest = ports.blobs.put(b"{}", "application/json")
    lineage = Lineage("planner", "sft", "sha256:" + "ab" * 32, manifest, {"episodes/0": 1}, "default", None)
    version, events = register_checkpoint(ports.registry, ports.blobs, checkpoint, lineage, run_id="serve-test")
    publish(ports.bus, *events)
    ports.registry.set_alias("planner", PRODUCTION, version.version)
    return version.version


@pytest.fixture
def ports(tmp_path: Path) -> Ports:
    bus = open_bus(f"sqlite:///{tmp_path}/bus.db?session_timeout_s=1.5")
    ensure_topics(bus)
    publish(bus, *TASKS)
    return Ports(bus, open_blob_store(f"file:///{tmp_path}/blobs"), open_registry(f"sqlite:///{tmp_path}/mlflow.db"))


@pytest.fixture
def server(ports: Ports, tmp_path: Path) -> Iterator[ModelServer]:
    register_version(ports, tmp_path / "v1", seed=0)
    options = ServeOptions("transformers", "127.0.0.1", free_port(), tmp_path / "served", start_timeout_s=180.0)
    served = ModelServer(
        ports.registry, ServeTarget.parse("planner@production"), options, lambda e: publish(ports.bus, e)
    )
    stop = threading.Event()
    follower = threading.Thread(target=served.follow, args=(stop,), kwargs={"poll_s": 0.5}, daemon=True)
    follower.start()
    try:
        wait_for(lambda: announced(ports, "1"), 200.0, "planner/1 served")
        yield served
    finally:
        stop.set()
        follower.join(30.0)
        served.close()


def announced(ports: Ports, version: str) -> bool:
    events = [from_record(r) for r in ports.bus.replay("models")]
    return any(isinstance(e, ModelServed) and e.model_version == version for e in events)


def wait_for(condition: object, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout_s:.0f} s: {what}")
        time.sleep(0.25)


def run_rollouts(ports: Ports, worker: RolloutWorker, seed: int) -> list[str]:
    requests = [
        RolloutRequested(
            producer=P,
            run_id="serve-test",
            task_id=task.task_id,
            seed=seed,
            policy_version="planner@production",
            harness_version="default",
            backend="sandbox",
            budgets=task.budgets.model_copy(update={"max_steps": 2}),
        )
        for task in TASKS
    ]
    publish(ports.bus, *requests)
    worker.run(idle_exit_s=1.0)
    return [r.episode_id for r in requests]


def episode_events(ports: Ports, episode_ids: list[str]) -> list[Event]:
    return [e for r in ports.bus.replay("episodes") if (e := from_record(r)).episode_id in episode_ids]


def test_rollouts_through_transformers_serve_record_the_served_version_and_follow_a_promotion(
    ports: Ports, server: ModelServer, tmp_path: Path
) -> None:
    inference = parse_inference(f"openai+http://127.0.0.1:{server.options.port}/v1?max_tokens={MAX_NEW_TOKENS}")
    resolver = VersionResolver(ports.registry, ports.bus, tmp_path / "cache", inference, check_every_s=0.0)
    pool = EnvironmentPool()
    pool.register("sandbox", SandboxBackend, 1)
    worker = RolloutWorker(ports, pool, state_dir=tmp_path / "state", resolver=resolver, claim_grace_s=0.0)
    try:
        first = episode_events(ports, run_rollouts(ports, worker, seed=0))
        register_version(ports, tmp_path / "v2", seed=1)
        wait_for(lambda: announced(ports, "2"), 120.0, "planner/2 served by the same server")
        second = episode_events(ports, run_rollouts(ports, worker, seed=1))
    finally:
        worker.close()

    for events, version in ((first, "planner/1"), (second, "planner/2")):
        started = [e for e in events if isinstance(e, EpisodeStarted)]
        ended = [e for e in events if isinstance(e, EpisodeEnded)]
        assert len(started) == len(ended) == len(TASKS)
        assert {e.policy_version for e in started} == {version}
        calls = [
            e for e in events if isinstance(e, ActionTaken | ActionRejected)
        ]  # an untrained model's: mostly invalid
        for end in ended:  # every step was answered by the server (a failed request ends the episode at that step)
            answered = [e for e in calls if e.episode_id == end.episode_id]
            assert end.steps == len(answered) > 0
            assert end.input_tokens == sum(e.input_tokens for e in answered)
        verifier = Verifier()
        verdicts = [
            v for e in events if isinstance(e, EpisodeStarted | EpisodeEnded) for v in verifier.handle(e, ports)
        ]
        assert sorted(v.episode_id for v in verdicts) == sorted(e.episode_id for e in ended)
        assert all(v.outcome in ("success", "failure") for v in verdicts)  # judged from evidence, not "error"
        calls = [
            e for e in events if isinstance(e, ActionTaken | ActionRejected)
        ]  # an untrained model's: mostly invalid
        assert calls and all(e.input_tokens > 0 and 0 < e.output_tokens <= MAX_NEW_TOKENS for e in calls)

    # The server conditioned on the harness's own rendering, and greedy decoding agrees with the in-process policy.
    contexts = {e.step: e for e in first if isinstance(e, ContextBuilt) and e.episode_id == first[0].episode_id}
    step = next(e for e in first if isinstance(e, ActionTaken | ActionRejected) and e.episode_id == first[0].episode_id)
    messages = decode_context(ports.blobs.get(contexts[step.step].context))
    local = PlannerPolicy.from_dir(server.options.cache_root / "planner" / "1", name="planner/1")
    prompt = local.tokenizer.encode(render_messages(messages) + ASSISTANT_START, add_special_tokens=False)
    assert step.input_tokens == len(prompt)
    assert step.raw_output is not None and local.generate(messages).text == ports.blobs.get(step.raw_output).decode()


def test_the_serve_command_announces_the_version_and_stops_its_engine_on_sigterm(ports: Ports, tmp_path: Path) -> None:
    """``flywheel serve model`` as its own process: the version answers under its label, and SIGTERM leaves no engine
    process behind (the engine runs in its own session, so only our command can stop it)."""
    register_version(ports, tmp_path / "v1", seed=0)
    port = free_port()
    argv = [sys.executable, "-c", "from infra.cli.serve import app; app()", "model", "planner@production"]
    argv += ["--port", str(port), "--poll", "0.5", "--cache-dir", str(tmp_path / "served")]
    argv += ["--registry", f"sqlite:///{tmp_path}/mlflow.db", "--bus", f"sqlite:///{tmp_path}/bus.db"]
    command = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        wait_for(lambda: announced(ports, "1") or command.poll() is not None, 200.0, "planner/1 served")
        assert command.poll() is None, command.communicate()[0].decode()[-2000:]
        engines = psutil.Process(command.pid).children(recursive=True)
        assert engines and any("serve" in " ".join(p.cmdline()) for p in engines)
        body = {"model": "planner/1", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 2}
        reply = httpx.post(f"http://127.0.0.1:{port}/v1/chat/completions", json=body, timeout=60.0).json()
        assert reply["usage"]["completion_tokens"] == 2 and reply["model"].startswith("planner/1")
        command.send_signal(signal.SIGTERM)
        output = command.communicate(timeout=60.0)[0].decode()
    finally:
        if command.poll() is None:
            command.kill()
    assert command.returncode == 0, output[-2000:]
    assert "serving planner/1 (transformers)" in output
    assert not [p for p in engines if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
