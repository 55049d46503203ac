"""Re-renders an episode's contexts from its events and its harness version, and checks them against the record.

The episode is replayed deterministically: the backend that ran it (``EpisodeStarted.backend``, made through the
plugin registry) is reset with the recorded seed and the recorded model outputs are fed back through a harness of
the recorded version. Every context it builds must hash to the recorded ContextBuilt blob, byte for byte, or the
episode is not trained on.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from bus_schemas.actions import SubagentSpawn
from bus_schemas.envelope import Event
from bus_schemas.events.episodes import ContextBuilt, ObservationReturned
from bus_schemas.events.tasks import TaskSpecified
from harness_service.config import HarnessConfig
from harness_service.context.messages import ChatMessage, decode_context
from harness_service.memory.store import MemoryStore
from harness_service.policy.base import PolicyOutput
from harness_service.policy.scripted import ScriptedPolicy
from harness_service.runner.episode import Harness, RunIds, run_episode
from harness_service.skills.library import SkillLibrary
from harness_service.user.simulator import ScriptedUser
from infra.blobs.memory import MemoryBlobs
from learner.dataset.episodes import EpisodeLog, EpisodeRecord
from producers.backends import plugins
from producers.backends.base import Backend, ToolSpec

BlobReader = Callable[[str], bytes]
"""Reads a blob by sha256 (the learner's view of the blob store)."""


class RenderMismatch(ValueError):
    """The replayed context differs from the recorded one (or cannot be produced): the episode is skipped."""


@dataclass(frozen=True)
class RenderedStep:
    """One model turn: the exact messages it saw and the output it wrote."""

    episode_id: str
    step: int
    messages: tuple[ChatMessage, ...]
    output: str
    valid: bool
    """False for an output the harness rejected (a training target for RL, never for SFT)."""
    tools: tuple[ToolSpec, ...] = ()
    """The tools the harness offered the policy at this step (what a tool-calling policy gets as ``tools``)."""
    observation: ObservationReturned | None = None
    """What the step's action returned in the replay (None for an action without one, e.g. ``finish``)."""


class _Replay:
    """The recorded outputs fed back in order (a ``ScriptedPolicy``), noting the tools offered at each call."""

    def __init__(self, script: list[str]) -> None:
        self._script = ScriptedPolicy(script, "replay")
        self.name = self.model = self._script.name
        self.offered: list[tuple[ToolSpec, ...]] = []

    def generate(self, messages: Sequence[ChatMessage]) -> PolicyOutput:
        return self._script.generate(messages)

    def generate_with_tools(self, messages: Sequence[ChatMessage], tools: Sequence[ToolSpec]) -> PolicyOutput:
        self.offered.append(tuple(tools))
        return self._script.generate(messages)


def _execution_order(log: EpisodeLog, record: EpisodeRecord) -> Iterator[tuple[EpisodeRecord, int]]:
    """(episode, step) in the order the harness ran them: a spawn's child runs inside its parent's step."""
    children = iter(log.children(record.episode_id))
    for step in sorted(record.contexts):
        yield record, step
        action = record.actions.get(step)
        if action is not None and isinstance(action.action, SubagentSpawn):
            child = next(children, None)
            if child is not None:
                yield from _execution_order(log, child)


def _output(record: EpisodeRecord, step: int, read: BlobReader) -> str:
    action = record.actions.get(step)
    ref = (
        action.raw_output
        if action is not None
        else (record.invalid[step].raw_output if step in record.invalid else None)
    )
    if ref is None:
        raise RenderMismatch(f"{record.episode_id} step {step}: no recorded model output")
    return read(ref.sha256).decode("utf-8")


def _backend(episode_id: str, name: str) -> Backend:
    """A fresh backend of the kind that ran the episode; one that needs live ports (a simulator, a device)
    cannot be made offline, and its episodes are not re-rendered."""
    try:
        return plugins.make_backend(name)
    except (plugins.PluginError, TypeError) as exc:
        raise RenderMismatch(f"{episode_id}: cannot re-create backend {name!r} offline: {exc}") from exc


def rerender_episode(
    log: EpisodeLog,
    episode_id: str,
    config: HarnessConfig,
    skills: SkillLibrary,
    read: BlobReader,
) -> list[RenderedStep]:
    """Every model turn of a top-level episode (sub-agents included), re-rendered and checked byte for byte."""
    record = log.episodes[episode_id]
    task: TaskSpecified | None = log.tasks.get(record.started.task_id)
    if task is None:
        raise RenderMismatch(f"{episode_id}: task {record.started.task_id} is not in the log")
    order = list(_execution_order(log, record))
    script = [_output(rec, step, read) for rec, step in order]
    blobs, replayed = MemoryBlobs(), list[Event]()
    replies = [record.user_replies[step] for step in sorted(record.user_replies)]
    replay = _Replay(script)
    harness = Harness(
        config=config,
        policy=replay,
        blobs=blobs,
        events=replayed.append,
        skills=skills,
        users=lambda _task: ScriptedUser(replies),  # the recorded answers, whoever played the user
    )
    memory = MemoryStore() if config.memory.enabled else None
    backend = _backend(episode_id, record.started.backend)
    run_episode(harness, task, backend, RunIds(run_id="rerender", episode_id=episode_id), memory, record.started.seed)
    contexts = [e for e in replayed if isinstance(e, ContextBuilt)]
    observations = {(e.episode_id, e.step): e for e in replayed if isinstance(e, ObservationReturned)}
    if len(contexts) < len(order):
        raise RenderMismatch(f"{episode_id}: replay built {len(contexts)} contexts, the record has {len(order)}")
    steps = []
    offered = replay.offered + [()] * (len(order) - len(replay.offered))
    for (rec, step), built, output, tools in zip(order, contexts, script, offered, strict=False):
        recorded = rec.contexts[step].context.sha256
        if built.context.sha256 != recorded:
            raise RenderMismatch(f"{rec.episode_id} step {step}: re-rendered context differs from the recorded blob")
        messages = tuple(decode_context(blobs.data[recorded]))
        observation = observations.get((built.episode_id, built.step))
        steps.append(RenderedStep(rec.episode_id, step, messages, output, step in rec.actions, tools, observation))
    return steps
