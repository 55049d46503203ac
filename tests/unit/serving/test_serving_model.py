"""``flywheel serve model`` without an engine: what each engine is started with, the chat template a served checkpoint
gets, and following an alias in the embedded registry (each new version prepared, served once, announced)."""

from __future__ import annotations

import importlib.util
import json
import threading
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bus_schemas.events.training import ModelServed
from infra.bootstrap import open_bus, open_registry
from infra.cli.main import app
from infra.events import ensure_topics, from_record, publish
from infra.registry.port import Registry
from infra.serving.checkpoint import (
    ServableVersion,
    TemplateMismatch,
    apply_chat_template,
    check_chat_template,
    prepare_version,
)
from infra.serving.engines import EngineUnavailable, check_engine, transformers_command, vllm_command
from infra.serving.process import EngineFailed
from infra.serving.server import ModelServer, ServeOptions, ServeTarget
from learner.model import PromptWindow, train_tokenizer

pytestmark = pytest.mark.unit
QWEN_LIKE = (
    "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>{% endfor %}<|im_start|>assistant"
)
"""A foreign template: no newline after ``<|im_end|>``, as a hub checkpoint might bring."""


def test_a_target_is_an_alias_to_follow_or_a_fixed_version() -> None:
    assert ServeTarget.parse("planner@production") == ServeTarget("planner", alias="production")
    assert ServeTarget.parse("models:/planner@production").ref == "planner@production"
    assert ServeTarget.parse("planner/3") == ServeTarget("planner", version="3")
    assert ServeTarget.parse("planner@3").ref == "planner/3"
    for bad in ("planner", "planner@", "a/b/c", "planner/three"):
        with pytest.raises(ValueError, match="NAME@ALIAS"):
            ServeTarget.parse(bad)


def test_transformers_serve_runs_in_the_cache_root_so_a_version_is_loaded_by_its_label(tmp_path: Path) -> None:
    command = transformers_command(tmp_path, "127.0.0.1", 8123)
    assert command.argv[1:] == (
        "serve",
        *("--host", "127.0.0.1", "--port", "8123", "--device", "cpu", "--log-level", "warning"),
    )
    assert Path(command.argv[0]).name == "transformers" and command.cwd == tmp_path
    assert command.reloads_in_place  # no model pinned: planner/4 is ./planner/4, loaded by the running server


def test_vllm_serve_names_the_version_and_parses_hermes_tool_calls(tmp_path: Path) -> None:
    folder = tmp_path / "planner" / "4"
    command = vllm_command(folder, "planner/4", "0.0.0.0", 9000)
    argv = list(command.argv)
    assert argv[1:3] == ["serve", str(folder)] and not command.reloads_in_place
    assert argv[argv.index("--served-model-name") + 1] == "planner/4"
    assert argv[argv.index("--port") + 1] == "9000" and argv[argv.index("--host") + 1] == "0.0.0.0"
    assert argv[argv.index("--tool-call-parser") + 1] == "hermes" and "--enable-auto-tool-choice" in argv
    plain = vllm_command(folder, "planner/4", "0.0.0.0", 9000, native_tools=False).argv
    assert "--tool-call-parser" not in plain and "--enable-auto-tool-choice" not in plain


@pytest.mark.skipif(importlib.util.find_spec("vllm") is not None, reason="vllm is installed here")
def test_vllm_missing_is_one_clear_error_before_anything_starts(tmp_path: Path) -> None:
    check_engine("transformers")  # installed with the ml extra (transformers[serving])
    with pytest.raises(EngineUnavailable, match="--engine transformers"):
        check_engine("vllm")
    result = CliRunner().invoke(
        app, ["serve", "model", "planner@production", "--engine", "vllm", "--cache-dir", str(tmp_path)]
    )
    assert result.exit_code != 0 and "vllm package is not installed" in result.output
    assert not any(tmp_path.iterdir())  # nothing downloaded, nothing started


def _tokenizer_dir(path: Path, template: str | None = None) -> Path:
    tokenizer = train_tokenizer(["hello world <tool_call> notes.add"] * 10, vocab_size=280)
    if template is not None:
        tokenizer.chat_template = template
    tokenizer.save_pretrained(path)
    (path / "config.json").write_text("{}")
    return path


def test_a_foreign_chat_template_is_replaced_by_the_harness_rendering(tmp_path: Path) -> None:
    folder = _tokenizer_dir(tmp_path / "ckpt", QWEN_LIKE)
    with pytest.raises(TemplateMismatch, match="renders"):
        check_chat_template(folder)
    config = folder / "tokenizer_config.json"
    config.write_text(json.dumps({**json.loads(config.read_text()), "chat_template": QWEN_LIKE}))  # inline too
    apply_chat_template(folder)
    check_chat_template(folder)
    assert "chat_template" not in json.loads(config.read_text())


def test_a_served_reply_is_the_text_the_model_wrote(tmp_path: Path) -> None:
    """Our own checkpoint renders right, but transformers serve would parse a qwen3 model's reply with Qwen's template
    (stripped, <think> and tool calls lifted out of the text) unless the checkpoint names a verbatim one."""
    folder = _tokenizer_dir(tmp_path / "ckpt")
    with pytest.raises(TemplateMismatch, match="response template"):
        check_chat_template(folder)
    apply_chat_template(folder)
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True)
    raw = '\n<think>plan</think>\n<tool_call>\n{"name": "notes.add", "arguments": {}}\n</tool_call> '
    assert tokenizer.parse_response(raw + "<|im_end|>", prefix="<|im_start|>assistant\n")["content"] == raw


@pytest.fixture
def registry(tmp_path: Path) -> Registry:
    return open_registry(f"sqlite:///{tmp_path}/mlflow.db")


def _register(registry: Registry, folder: Path, sha: str) -> str:
    run = registry.start_run("planner")
    registry.log_artifacts(run, folder, "checkpoint")
    registry.end_run(run)
    version = registry.register_version("planner", run, "checkpoint", tags={"checkpoint_sha256": sha})
    registry.set_alias("planner", "production", version.version)
    return version.version


def test_following_an_alias_serves_each_new_version_once_and_announces_it(
    tmp_path: Path, registry: Registry, monkeypatch: pytest.MonkeyPatch
) -> None:
    served: list[ServableVersion] = []
    monkeypatch.setattr(ModelServer, "_serve", lambda self, version: served.append(version))
    bus = open_bus(f"sqlite:///{tmp_path}/bus.db")
    ensure_topics(bus)
    checkpoint = _tokenizer_dir(tmp_path / "ckpt", QWEN_LIKE)
    _register(registry, checkpoint, "a" * 64)
    options = ServeOptions(engine="transformers", host="127.0.0.1", port=8123, cache_root=tmp_path / "served")
    server = ModelServer(registry, ServeTarget.parse("planner@production"), options, lambda e: publish(bus, e))

    first = server.sync()
    assert first is not None and server.sync() is None  # the alias has not moved: nothing served again
    _register(registry, checkpoint, "b" * 64)
    second = server.sync()
    assert second is not None and server.sync() is None

    assert [v.label for v in served] == ["planner/1", "planner/2"]
    assert [v.folder for v in served] == [tmp_path / "served" / "planner" / n for n in ("1", "2")]
    check_chat_template(served[1].folder)  # each download got the harness's template
    events = [from_record(r) for r in bus.replay("models")]
    assert events == [first, second]
    assert all(isinstance(e, ModelServed) for e in events)
    assert [(e.model_version, e.previous_version, e.alias, e.served_model_name) for e in (first, second)] == [
        ("1", None, "production", "planner/1"),
        ("2", "1", "production", "planner/2"),
    ]
    assert (second.checkpoint_sha256, second.endpoint, second.engine) == ("b" * 64, options.endpoint, "transformers")


def test_a_version_that_writes_value_slots_is_refused_with_the_way_out(tmp_path: Path, registry: Registry) -> None:
    checkpoint = _tokenizer_dir(tmp_path / "ckpt")
    PromptWindow(goal_tokens=32, value_slots=True).save(checkpoint)
    _register(registry, checkpoint, "a" * 64)
    ref = registry.resolve("planner@production")
    with pytest.raises(TemplateMismatch, match='"value_slots": false'):
        prepare_version(registry, ref, tmp_path / "served")
    PromptWindow(goal_tokens=32).save(checkpoint)
    _register(registry, checkpoint, "b" * 64)
    served = prepare_version(registry, registry.resolve("planner@production"), tmp_path / "served")
    check_chat_template(served.folder)


class _RunningEngine:
    def running(self) -> bool:
        return True


def test_a_version_that_cannot_be_served_leaves_the_current_one_served(
    tmp_path: Path, registry: Registry, monkeypatch: pytest.MonkeyPatch
) -> None:
    attempts: list[str] = []

    def serve(self: ModelServer, version: ServableVersion) -> None:
        attempts.append(version.label)
        if version.ref.version == "2":
            raise EngineFailed("planner/2: HTTP 500: could not load")

    monkeypatch.setattr(ModelServer, "_serve", serve)
    checkpoint = _tokenizer_dir(tmp_path / "ckpt")
    _register(registry, checkpoint, "a" * 64)
    options = ServeOptions(engine="transformers", host="127.0.0.1", port=8123, cache_root=tmp_path / "served")
    announced: list[ModelServed] = []
    server = ModelServer(registry, ServeTarget.parse("planner@production"), options, announced.append)
    server.process = _RunningEngine()  # type: ignore[assignment]
    server.sync()
    _register(registry, checkpoint, "b" * 64)
    stop = threading.Event()
    follower = threading.Thread(target=server.follow, args=(stop,), kwargs={"poll_s": 0.1})
    follower.start()
    deadline = time.monotonic() + 30.0
    while attempts.count("planner/2") < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    stop.set()
    follower.join(10.0)
    assert not follower.is_alive() and attempts.count("planner/2") >= 2  # retried at every poll, never raised
    assert server.served is not None and server.served.label == "planner/1"
    assert [e.model_version for e in announced] == ["1"]  # nothing announced for the version that failed
