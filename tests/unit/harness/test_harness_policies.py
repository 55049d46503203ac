"""Policies: scripted replay, the OpenAI-compatible client against a canned local model server, pricing."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest
from canned_chat import CannedChat
from harness_fakes import EventList, MemoryBlobs, NotesBackend, make_task

from bus_schemas.actions import Finish, ToolCall
from harness_service.actions.format import render_action
from harness_service.config import HarnessConfig
from harness_service.context.messages import ChatMessage
from harness_service.policy.base import PolicyError
from harness_service.policy.openai_http import OpenAICompatiblePolicy, OpenAIPolicyConfig
from harness_service.policy.pricing import Price, PriceTable
from harness_service.policy.scripted import ScriptedPolicy
from harness_service.policy.thinking import thinking_part
from harness_service.policy.vllm_offline import VLLMPolicy
from harness_service.runner.episode import Harness, RunIds, run_episode

pytestmark = pytest.mark.unit

REPLIES = [
    render_action(ToolCall(name="notes.add", args={"text": "hi"})),
    "<think>done</think>" + render_action(Finish(answer="hi")),
]


@pytest.fixture
def model() -> Iterator[CannedChat]:
    """A canned chat-completions endpoint: replies in order, records requests, checks the key."""
    with CannedChat(REPLIES, api_key="k-123") as chat:
        yield chat


def test_openai_policy_runs_an_episode_with_token_accounting_and_cost(model: CannedChat) -> None:
    policy = OpenAICompatiblePolicy(OpenAIPolicyConfig(base_url=model.url, model="planner-1", api_key="k-123"))
    events, prices = EventList(), PriceTable(prices={"planner-1": Price(input_per_mtok=2.0, output_per_mtok=10.0)})
    harness = Harness(config=HarnessConfig(), policy=policy, blobs=MemoryBlobs(), events=events, prices=prices)
    outcome = run_episode(harness, make_task(), NotesBackend(), RunIds(run_id="r"))
    assert outcome.reason == "finished" and outcome.answer == "hi"
    assert (outcome.input_tokens, outcome.output_tokens, outcome.thinking_tokens) == (200, 40, 10)
    assert outcome.cost_usd == pytest.approx((200 * 2 + 40 * 10) / 1e6)
    first = model.requests[0]
    assert first["model"] == "planner-1" and first["messages"][0]["role"] == "system"
    assert events[0].policy_version == "openai:planner-1"  # type: ignore[attr-defined]


def test_openai_policy_errors_are_policy_errors(model: CannedChat) -> None:
    policy = OpenAICompatiblePolicy(OpenAIPolicyConfig(base_url=model.url, model="m", api_key="wrong", retries=0))
    with pytest.raises(PolicyError, match="401"):
        policy.generate([ChatMessage(role="user", content="hi")])


def test_scripted_policy_replays_then_finishes() -> None:
    policy = ScriptedPolicy([Finish(answer="a"), "raw text"], "solver")
    messages = [ChatMessage(role="user", content="one two three")]
    outputs = [policy.generate(messages) for _ in range(3)]
    assert policy.name == "scripted:solver"
    assert [o.text for o in outputs] == [render_action(Finish(answer="a")), "raw text", render_action(Finish())]
    assert outputs[0].input_tokens > 0 and outputs[1].output_tokens == 2


def test_unpriced_models_have_no_cost_estimate() -> None:
    assert PriceTable().cost("x", 10, 10) is None


@pytest.mark.parametrize(
    ("text", "thinking"),
    [("<think>plan it</think><action>{}</action>", "plan it"), ("<think>cut off", "cut off"), ("no thoughts", "")],
)
def test_thinking_part_is_the_think_block(text: str, thinking: str) -> None:
    assert thinking_part(text) == thinking


class _FakeTokenizer:
    def encode(self, text: str, add_special_tokens: bool = False) -> list[int]:
        return list(range(len(text.split())))


class _FakeLLM:
    """Stands in for ``vllm.LLM`` (GPU only): records the chat call and answers with fixed token ids."""

    def __init__(self, model: str, **engine: object) -> None:
        self.engine = engine

    def get_tokenizer(self) -> _FakeTokenizer:
        return _FakeTokenizer()

    def chat(self, messages: list[dict], params: object, use_tqdm: bool) -> list[SimpleNamespace]:
        completion = SimpleNamespace(text="<think>a b c</think>" + REPLIES[1], token_ids=[1] * 9)
        return [SimpleNamespace(prompt_token_ids=[0] * len(messages) * 10, outputs=[completion])]


def test_vllm_policy_maps_engine_output_to_token_counts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "vllm", SimpleNamespace(LLM=_FakeLLM, SamplingParams=lambda **kw: kw))
    policy = VLLMPolicy("/models/planner", gpu_memory_utilization=0.5)
    output = policy.generate([ChatMessage(role="system", content="s"), ChatMessage(role="user", content="u")])
    assert policy.name == "vllm:/models/planner"
    assert (output.input_tokens, output.output_tokens, output.thinking_tokens) == (20, 9, 3)


def test_vllm_check_script_skips_without_vllm() -> None:
    if importlib.util.find_spec("vllm") is not None:
        pytest.skip("vllm is installed: run bench/vllm_check.py on the GPU machine instead")
    script = Path(__file__).resolve().parents[3] / "bench" / "vllm_check.py"
    done = subprocess.run([sys.executable, str(script), "--model", "/nowhere"], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.startswith("SKIPPED: vllm is not installed")
