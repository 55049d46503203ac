"""What the harness records is pinned byte for byte: events on the wire and blob bytes, for fixed inputs.

Speed-ups of the step (caches, batching) must not change a byte of it. Each scenario runs scripted episodes and
hashes the normalised wire form of every event (event ids renumbered, ``occurred_at`` and ``wall_time_s`` blanked)
and every blob put, in order. A changed digest means the recording changed: deliberate changes update it.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable

import pytest
from harness_fakes import EventList, MemoryBlobs, NotesBackend, make_task

from bus_schemas.actions import Finish, MemoryRead, MemoryWrite, SkillLoad, SubagentSpawn, ToolCall
from bus_schemas.blob_ref import BlobRef
from bus_schemas.codec import decode, encode
from bus_schemas.events.tasks import MemoryFact, TaskSpecified
from harness_service.config import CompactContext, HarnessBudgets, HarnessConfig
from harness_service.context.tokens import TokenizerCounter
from harness_service.memory.store import MemoryStore
from harness_service.policy.scripted import ScriptedPolicy
from harness_service.runner.episode import Harness, RunIds, run_episode
from harness_service.skills.library import SkillLibrary
from harness_service.skills.skill import Skill
from producers.backends.sandbox.backend import SandboxBackend
from producers.backends.sandbox.skill_docs import SKILLS_DIR
from producers.tasks.solver import reference_solver
from producers.tasks.suite import build_task_suite

pytestmark = pytest.mark.unit

_IDS = re.compile(rb"[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}")  # UUIDv7: fresh event ids
_CLOCK = re.compile(rb'"(occurred_at|wall_time_s)":("[^"]*"|[0-9.eE+-]+)')


class _OrderedBlobs(MemoryBlobs):
    """Also remembers the order of puts and the media types."""

    def __init__(self) -> None:
        super().__init__()
        self.puts: list[tuple[str, str]] = []

    def put(self, data: bytes, media_type: str) -> BlobRef:
        ref = super().put(data, media_type)
        self.puts.append((media_type, ref.sha256))
        return ref


class _WordTokenizer:
    """A non-additive counter's tokenizer: one token per whitespace-separated word."""

    def encode(self, text: str, add_special_tokens: bool = False) -> list[str]:
        return text.split()


def _recording_digest(events: EventList, blobs: _OrderedBlobs) -> str:
    wire = b"\n".join(encode(e) for e in events)
    assert all(decode(encode(e)) == e for e in events)  # every event is valid and survives the bus codec
    numbering: dict[bytes, bytes] = {}
    wire = _IDS.sub(lambda m: numbering.setdefault(m.group(), b"id-%d" % len(numbering)), wire)
    wire = _CLOCK.sub(lambda m: b'"' + m.group(1) + b'":0', wire)
    digest = hashlib.sha256(wire)
    for media_type, sha in blobs.puts:
        digest.update(f"\n{media_type} {sha}".encode())
    return digest.hexdigest()


def _sandbox_tasks() -> list[TaskSpecified]:
    seen: dict[str, TaskSpecified] = {}
    for task in build_task_suite("run-golden"):
        if task.split == "train" and task.source.template_id not in seen:
            seen[task.source.template_id or ""] = task
    return list(seen.values())


def _run_sandbox(config: HarnessConfig, counter: TokenizerCounter | None = None) -> str:
    events, blobs, backend = EventList(), _OrderedBlobs(), SandboxBackend()
    skills = SkillLibrary.from_dir(SKILLS_DIR)
    for i, task in enumerate(_sandbox_tasks()):
        harness = Harness(config, ScriptedPolicy(reference_solver(task), "reference"), blobs, events, skills)
        if counter is not None:
            harness.counter = counter
        ids = RunIds(run_id="run-golden", round=1, attempt=0, episode_id=f"episode-{i}")
        run_episode(harness, task, backend, ids, MemoryStore(), seed=None)
    return _recording_digest(events, blobs)


def _run_toy() -> str:
    """Garbage, unknown tools, bad arguments, unrecordable and large observations, memory, skills, a sub-agent."""
    script: list[object] = [
        "no action here",
        '<action>{"kind": "tool_call", "name": "notes.ad", "args": {}}</action>',
        '<action>{"kind": "tool_call", "name": "notes.add", "args": {"text": 5}}</action>',
        MemoryWrite(content="the user likes tea", tags=["prefs"]),
        MemoryRead(query="tea"),
        SkillLoad(name="note-taking"),
        ToolCall(name="notes.add", args={"text": "hello " + "x" * 20_000}),
        ToolCall(name="notes.search", args={"query": "hello"}),
        ToolCall(name="notes.search", args={"query": "NaN"}),
        ToolCall(name="notes.search", args={"query": "surrogate"}),
        SubagentSpawn(goal="Find the hello note.", tools=["notes.search"], max_steps=3),
        ToolCall(name="notes.search", args={"query": "missing"}),
        Finish(answer="found it"),
        '<tool_call>{"name": "notes.add", "arguments": "{\\"text\\": \\"native\\"}"}</tool_call>',
        Finish(answer="hello"),
    ]
    events, blobs = EventList(), _OrderedBlobs()
    skills = SkillLibrary(
        [Skill(name="note-taking", tools=["notes.*"], when_to_use="Notes.", body="SKILL BODY: search first.")], "v1"
    )
    config = HarnessConfig(budgets=HarnessBudgets(max_invalid_actions=5, turn_chars=300, context_tokens=1000))
    harness = Harness(config, ScriptedPolicy(script, "reference"), blobs, events, skills)  # type: ignore[arg-type]
    memory = MemoryStore()
    task = make_task(memories=[MemoryFact(content="hello is the greeting", tags=["notes"])])
    run_episode(harness, task, NotesBackend(), RunIds(run_id="run-golden", episode_id="toy"), memory)  # type: ignore[arg-type]
    return _recording_digest(events, blobs)


COMPACT = CompactContext(
    tool_top_k=4,
    tool_description_chars=60,
    tool_notes={"contacts.search_contacts": "find a contact by name"},
    tool_successors={"": ("contacts.search_contacts",)},
    action_format="full",
    observations="result",
)
SCENARIOS: dict[str, tuple[Callable[[], str], str]] = {
    "sandbox, default harness": (
        lambda: _run_sandbox(HarnessConfig()),
        "8ec7f1e8430a0f5e4d1fcf2cfb1419b9922f2814abf05355ed3cc2be5eecc1e5",
    ),
    "sandbox, compact harness": (
        lambda: _run_sandbox(HarnessConfig(compact=COMPACT)),
        "1755b236634ceb10768e89aca403f47dfe87dd503c110e1eb4597f2255b20fd9",
    ),
    "sandbox, tight context (summaries)": (
        lambda: _run_sandbox(HarnessConfig(compact=COMPACT, budgets=HarnessBudgets(context_tokens=900))),
        "4dac918a6af32e42293c4139530c1f28f0d475b7c18dd3e96ac167e4ae348e6f",
    ),
    "sandbox, tokenizer counter": (
        lambda: _run_sandbox(
            HarnessConfig(budgets=HarnessBudgets(context_tokens=2000)), TokenizerCounter(_WordTokenizer())
        ),
        "6cab06dcde2b3a140121935046adb84de2339a83f2e7f2bad133d708f1988c1d",
    ),
    "toy backend, edge cases": (_run_toy, "96dedafd2eb2ee5deb089ecc5809fb096ce424125f08e7c762a39962488d9892"),
}


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_the_recording_is_byte_identical_to_the_pinned_one(scenario: str) -> None:
    run, expected = SCENARIOS[scenario]
    assert run() == expected
