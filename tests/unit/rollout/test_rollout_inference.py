"""The rollout worker's policies through the inference port: a registered version is asked of an OpenAI-compatible
server by name (nothing downloaded) or loaded in process, and the episode records the same version and usage."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from canned_chat import CannedChat
from pydantic import SecretStr

from bus_schemas.actions import Finish, ToolCall
from bus_schemas.envelope import Producer
from bus_schemas.events.episodes import ActionTaken, EpisodeEnded, EpisodeStarted
from bus_schemas.events.rollouts import RolloutRequested
from bus_schemas.events.training import ModelServed
from harness_service.policy.inference import parse_inference
from harness_service.policy.openai_http import OpenAICompatiblePolicy
from infra.bootstrap import Ports, open_blob_store, open_bus, open_registry
from infra.events import ensure_topics, from_record, publish
from infra.registry.port import Registry
from producers.backends.sandbox import SandboxBackend
from producers.pool import EnvironmentPool
from producers.rollout import RolloutWorker
from producers.rollout.versions import VersionResolver
from producers.tasks import build_task_suite

pytestmark = pytest.mark.unit
P = Producer(service="test", version="0")
TASK = build_task_suite("unit")[0]
TOOL = TASK.tools[0]  # contacts.list_contacts: a read, valid with {"limit": 2}
USAGE = {"prompt_tokens": 321, "completion_tokens": 17, "completion_tokens_details": {"reasoning_tokens": 4}}


def _native_call(name: str, arguments: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """A reply of one native tool call, checked to be among the request's offered ``tools``."""

    def reply(body: dict[str, Any]) -> dict[str, Any]:
        offered = {tool["function"]["name"] for tool in body.get("tools", [])}
        assert name in offered, f"{name} was not offered: {sorted(offered)}"
        call = {"id": "c", "type": "function", "function": {"name": name, "arguments": arguments}}
        return {"role": "assistant", "content": None, "tool_calls": [call]}

    return reply


@pytest.fixture
def server() -> Iterator[CannedChat]:
    """``/v1/chat/completions`` answering a fixed native tool call, then ``finish``; records every request body."""
    replies = [_native_call(TOOL.replace(".", "__"), '{"limit": 2}'), _native_call("finish", "{}")]
    with CannedChat(replies, api_key="sk-test", usage=USAGE) as chat:
        yield chat


@pytest.fixture
def registry(tmp_path: Path) -> Registry:
    """``planner/1`` registered with a checkpoint artifact (a config.json is all the resolver looks for)."""
    registry = open_registry(f"sqlite:///{tmp_path}/mlflow.db")
    checkpoint = tmp_path / "ckpt"
    checkpoint.mkdir()
    (checkpoint / "config.json").write_text("{}")
    run = registry.start_run("planner")
    registry.log_artifacts(run, checkpoint, "checkpoint")
    registry.register_version("planner", run, "checkpoint")
    return registry


@pytest.fixture
def ports(tmp_path: Path, registry: Registry) -> Ports:
    bus = open_bus(f"sqlite:///{tmp_path}/bus.db?session_timeout_s=1.5")
    ensure_topics(bus)
    publish(bus, TASK)
    return Ports(bus, open_blob_store(f"file:///{tmp_path}/blobs"), registry)


def test_an_openai_port_asks_the_server_for_the_version_and_downloads_nothing(ports: Ports, tmp_path: Path) -> None:
    port = parse_inference("openai+http://127.0.0.1:9/v1")
    resolver = VersionResolver(ports.registry, ports.bus, tmp_path / "cache", port, check_every_s=0.0)
    policy = resolver.policy("models:/planner/1")(TASK)
    assert isinstance(policy, OpenAICompatiblePolicy)
    assert (policy.name, policy.model, policy.config.base_url) == ("planner/1", "planner/1", "http://127.0.0.1:9/v1")
    assert not (tmp_path / "cache").exists()
    assert resolver.policy("planner/1")(TASK) is policy  # cached per version
    folder = tmp_path / "ckpt"
    local_dir = resolver.policy(f"local:{folder}")(TASK)
    assert isinstance(local_dir, OpenAICompatiblePolicy)
    assert (local_dir.name, local_dir.model) == ("local:ckpt", str(folder))  # `vllm serve PATH` names it by path


def test_the_local_port_downloads_the_version_and_loads_it_in_process(
    ports: Ports, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from harness_service.policy.transformers_local import TransformersPolicy

    loaded: list[tuple[Path, str, str]] = []

    def from_dir(path: Path, *, name: str, device: str) -> Any:
        loaded.append((path, name, device))
        return TransformersPolicy.__new__(TransformersPolicy)

    monkeypatch.setattr(TransformersPolicy, "from_dir", from_dir)
    resolver = VersionResolver(ports.registry, ports.bus, tmp_path / "cache", parse_inference("local:?device=cpu"))
    policy = resolver.policy("planner/1")(TASK)
    assert isinstance(policy, TransformersPolicy)
    [(path, name, device)] = loaded
    assert (name, device) == ("planner/1", "cpu") and (path / "config.json").is_file()
    assert path.is_relative_to(tmp_path / "cache" / "planner" / "1")
    assert resolver.policy("scripted:reference")(TASK).name == "scripted:reference"  # scripted stays in process


def test_a_rollout_through_an_openai_server_records_its_tool_call_and_usage(
    ports: Ports, tmp_path: Path, server: CannedChat
) -> None:
    url = f"{server.url.replace('http://', 'openai+http://')}?safe_names=1"
    port = parse_inference(url, api_key=SecretStr("sk-test"))
    resolver = VersionResolver(ports.registry, ports.bus, tmp_path / "cache", port, check_every_s=0.0)
    pool = EnvironmentPool()
    pool.register("sandbox", SandboxBackend, 1)
    worker = RolloutWorker(ports, pool, state_dir=tmp_path / "state", resolver=resolver, claim_grace_s=0.0)
    fields: dict[str, Any] = {"producer": P, "run_id": "unit", "task_id": TASK.task_id, "seed": 0}
    request = RolloutRequested(
        **fields, policy_version="planner/1", harness_version="default", backend="sandbox", budgets=TASK.budgets
    )
    publish(ports.bus, request)
    try:
        worker.run(idle_exit_s=0.5)
    finally:
        worker.close()
    events = [from_record(r) for r in ports.bus.replay("episodes")]
    [started] = [e for e in events if isinstance(e, EpisodeStarted)]
    taken = [e for e in events if isinstance(e, ActionTaken)]
    [ended] = [e for e in events if isinstance(e, EpisodeEnded)]
    assert started.policy_version == "planner/1" and ended.reason == "finished"
    assert [e.action for e in taken] == [ToolCall(name=TOOL, args={"limit": 2}), Finish(answer="")]
    recorded = ports.blobs.get(taken[0].raw_output).decode()
    assert recorded == f'<tool_call>\n{{"name": "{TOOL}", "arguments": {{"limit": 2}}}}\n</tool_call>'
    assert [(e.input_tokens, e.output_tokens, e.thinking_tokens) for e in taken] == [(321, 17, 4)] * 2
    assert [body["model"] for body in server.requests] == ["planner/1", "planner/1"]
    assert TOOL.replace(".", "__") in {t["function"]["name"] for t in server.requests[0]["tools"]}


def _served(version: str, endpoint: str) -> ModelServed:
    return ModelServed(
        producer=P,
        run_id="unit",
        model_name="planner",
        model_version=version,
        alias="production",
        engine="transformers",
        endpoint=endpoint,
        served_model_name=f"planner/{version}",
        checkpoint_sha256="c" * 64,
    )


def test_an_openai_worker_asks_for_the_version_its_server_announced_for_the_alias(ports: Ports, tmp_path: Path) -> None:
    """The registry's @production moves before the server has loaded the new version; the worker keeps asking for
    the announced one (ModelServed at its endpoint) until the server announces the next."""
    ports.registry.set_alias("planner", "production", "1")
    port = parse_inference("openai+http://127.0.0.1:9/v1")
    resolver = VersionResolver(ports.registry, ports.bus, tmp_path / "cache", port, check_every_s=0.0)
    resolver.refresh()
    assert resolver.policy("planner@production")(TASK).name == "planner/1"  # nothing announced: the registry's
    publish(ports.bus, _served("7", "http://127.0.0.1:9/v1/"), _served("8", "http://elsewhere:9/v1"))
    assert resolver.refresh()
    policy = resolver.policy("models:/planner@production")(TASK)
    assert (policy.name, getattr(policy, "model", None)) == ("planner/7", "planner/7")  # its endpoint's, not :8
    local = VersionResolver(ports.registry, ports.bus, tmp_path / "local", parse_inference("local:"))
    assert local._resolve("planner@production").version == "1"  # in process: the registry decides


def test_workers_sharing_a_cache_download_the_same_version_at_once(
    ports: Ports, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two workers of one state dir (``--workers N``, or the run's extra rollout workers) both miss the cache and
    download; the one that renames second takes the first one's copy instead of failing the episode."""
    from harness_service.policy.transformers_local import TransformersPolicy

    monkeypatch.setattr(TransformersPolicy, "from_dir", lambda path, **_: path)
    cache = tmp_path / "cache"
    first = VersionResolver(ports.registry, ports.bus, cache, parse_inference("local:"))
    peer = VersionResolver(ports.registry, ports.bus, cache, parse_inference("local:"))
    download = ports.registry.download_artifacts
    peer_paths: list[Path] = []
    calls: list[Path] = []

    def racing(run_id: str, path: str, dst: Path) -> Path:
        calls.append(dst)
        if len(calls) == 1:  # while the first worker downloads, its peer downloads and renames the same version
            peer_paths.append(peer.policy("planner/1")(TASK))
        return download(run_id, path, dst)

    monkeypatch.setattr(ports.registry, "download_artifacts", racing)
    path = first.policy("planner/1")(TASK)
    assert len(calls) == 2 and path == peer_paths[0] and (path / "config.json").is_file()
    assert sorted(p.name for p in (cache / "planner").iterdir()) == ["1"]  # the loser's partial copy is gone
