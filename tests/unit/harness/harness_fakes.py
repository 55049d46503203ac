"""In-memory implementations of the harness ports and a two-tool toy backend, for the harness unit tests."""

from __future__ import annotations

import hashlib
from typing import Any

from bus_schemas.actions import StateChange, ToolCall, ToolError
from bus_schemas.blob_ref import BlobRef
from bus_schemas.envelope import Event, Producer
from bus_schemas.events.tasks import AnswerCriterion, InitialConditions, MemoryFact, TaskSource, TaskSpecified
from producers.backends.base import Evidence, Observation, ToolSpec


class MemoryBlobs:
    """BlobSink keeping blobs in a dict by sha256."""

    def __init__(self) -> None:
        self.blobs: dict[str, bytes] = {}

    def put(self, data: bytes, media_type: str) -> BlobRef:
        digest = hashlib.sha256(data).hexdigest()
        self.blobs[digest] = data
        return BlobRef(sha256=digest, size=len(data), media_type=media_type)

    def get(self, ref: BlobRef) -> bytes:
        return self.blobs[ref.sha256]


class EventList(list[Event]):
    """EventSink appending to itself."""

    def __call__(self, event: Event) -> None:
        self.append(event)

    def types(self) -> list[str]:
        return [e.event_type for e in self]


NOTE_TOOLS = [
    ToolSpec(
        name="notes.add",
        description="Add a note.",
        parameters={
            "type": "object",
            "properties": {"text": {"type": "string", "minLength": 1}},
            "required": ["text"],
            "additionalProperties": False,
        },
        writes=True,
    ),
    ToolSpec(
        name="notes.search",
        description="Find notes containing a text.",
        parameters={
            "type": "object",
            "properties": {"query": {"type": "string"}, "limit": {"type": "integer", "minimum": 1}},
            "required": ["query"],
        },
    ),
]


class NotesBackend:
    """A toy Backend: a list of notes; ``notes.add`` appends, ``notes.search`` filters."""

    name = "toy"
    trust = "exact"

    def __init__(self) -> None:
        self.notes: list[str] = []
        self.calls: list[dict[str, Any]] = []

    def reset(self, task: Any, seed: int = 0) -> Observation:
        self.notes = []
        self.calls = []
        return Observation(result={"goal": task.goal})

    def tools(self) -> list[ToolSpec]:
        return list(NOTE_TOOLS)

    def step(self, call: ToolCall) -> Observation:
        self.calls.append({"name": call.name, "args": call.args})
        if call.name == "notes.add":
            self.notes.append(str(call.args["text"]))
            change = StateChange(path=f"/notes/{len(self.notes) - 1}", op="added", after=call.args["text"])
            return Observation(result={"count": len(self.notes)}, changes=[change])
        if call.name == "notes.search" and call.args["query"] == "NaN":
            return Observation(result={"score": float("nan")})  # valid JSON for no one: the event schema rejects it
        if call.name == "notes.search" and call.args["query"] == "surrogate":
            return Observation(result=["\ud800"])  # not encodable as UTF-8 JSON
        if call.name == "notes.search":
            hits = [n for n in self.notes if str(call.args["query"]) in n]
            return (
                Observation(result=hits) if hits else Observation(error=ToolError(code="not_found", message="no note"))
            )
        return Observation(error=ToolError(code="unknown_tool", message=call.name))

    def evidence(self) -> Evidence:
        return Evidence(backend=self.name, initial_state=[], final_state=list(self.notes), calls=self.calls)

    def close(self) -> None:
        self.notes = []


def make_task(
    goal: str = "Add a note saying hello.", memories: list[MemoryFact] | None = None, **extra: Any
) -> TaskSpecified:
    """A minimal valid TaskSpecified on the toy tools."""
    return TaskSpecified(
        producer=Producer(service="tests", version="0"),
        run_id="run-test",
        task_id=extra.pop("task_id", "task-1"),
        goal=goal,
        apps=["notes"],
        tools=[t.name for t in NOTE_TOOLS],
        initial_conditions=InitialConditions(seed=7, memories=memories or []),
        category=extra.pop("category", "tool_use"),
        tags=["tool_routing"],
        difficulty=1,
        split="train",
        backend="sandbox",
        criteria=[AnswerCriterion(id="a", description="answer", expected=["hello"])],
        source=TaskSource(kind="human"),
        **extra,
    )
