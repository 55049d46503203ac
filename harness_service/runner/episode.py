"""Runs one episode, or a sub-agent's nested episode, and publishes its events in order."""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from time import perf_counter
from typing import Any

from pydantic import ValidationError

from bus_schemas.actions import (
    Action,
    Clarify,
    Finish,
    Refuse,
    SubagentResult,
    SubagentSpawn,
    ToolCall,
    ToolError,
    action_summary,
)
from bus_schemas.blob_ref import BlobRef
from bus_schemas.envelope import Producer, new_event_id
from bus_schemas.events.episodes import (
    SAMPLED_MEDIA_TYPE,
    ActionRejected,
    ActionTaken,
    ContextBuilt,
    EndReason,
    EpisodeEnded,
    EpisodeStarted,
    ObservationReturned,
)
from bus_schemas.events.tasks import TaskSpecified
from harness_service.actions.parser import ActionParser
from harness_service.config import HarnessConfig
from harness_service.context.builder import ContextBuilder, ContextInputs
from harness_service.context.feedback import render_observation
from harness_service.context.history import HistoryTurn
from harness_service.context.messages import CONTEXT_MEDIA_TYPE
from harness_service.context.tokens import ApproxTokenCounter, TokenCounter
from harness_service.context.worklist import Worklist
from harness_service.identity_cache import IdentityCache
from harness_service.memory.consolidate import MemoryMerger, consolidate
from harness_service.memory.store import MemoryStore
from harness_service.policy.base import ObservingPolicy, Policy, PolicyOutput, step_generator
from harness_service.policy.pricing import PriceTable
from harness_service.policy.scripted import ScriptedPolicy
from harness_service.ports import BlobSink, EventSink
from harness_service.runner.budgets import effective_budgets
from harness_service.runner.executor import ActionExecutor, failure
from harness_service.runner.recorder import EpisodeRecorder
from harness_service.skills.library import SkillLibrary
from harness_service.skills.skill import Skill
from harness_service.tools.selection import episode_successors, select_tools, step_tools
from harness_service.user.simulator import USER_REPLY_FLAG, UserSimulator, user_for
from producers.backends.base import Backend, Observation, ToolSpec
from producers.backends.evidence import store_evidence

RAW_OUTPUT_MEDIA_TYPE = "text/plain; charset=utf-8"
EVIDENCE_MEDIA_TYPE = "application/vnd.flywheel.evidence+json"
PRODUCER = Producer(service="harness_service", version="0.1.0")
INLINE_OBSERVATION_BYTES = 16_384
"""Larger observations are stored as a blob (ObservationReturned.blob); the event keeps a preview."""
PREVIEW_BYTES = 1024
_log = logging.getLogger(__name__)
_TERMINAL: dict[type, EndReason] = {Finish: "finished", Clarify: "clarify", Refuse: "refuse"}
_config_digest = IdentityCache(HarnessConfig.digest)
"""A (frozen) config's digest, computed once: every episode records it."""


@dataclass
class Harness:
    """What the episodes of one harness version share: config, policy, ports, skills, token counter, prices."""

    config: HarnessConfig
    policy: Policy
    blobs: BlobSink
    events: EventSink
    skills: SkillLibrary = field(default_factory=SkillLibrary.empty)
    counter: TokenCounter = field(default_factory=ApproxTokenCounter)
    prices: PriceTable = field(default_factory=PriceTable)
    producer: Producer = PRODUCER
    merger: MemoryMerger | None = None
    """Model-assisted memory consolidation; rules only when ``None``."""
    version_label: str | None = None
    """The registry version (e.g. ``planner/3``) recorded in EpisodeStarted; ``name@digest`` when ``None``."""
    users: Callable[[TaskSpecified], UserSimulator | None] = user_for
    """Who answers a task's clarifying questions (its ``user``); a replay passes the recorded answers instead.
    Pass ``functools.partial(user_for, user_policy=...)`` to let a model play users that have a persona."""

    def __post_init__(self) -> None:
        pinned = self.config.skill_library_version
        if pinned is not None and pinned != self.skills.version:
            raise ValueError(f"harness {self.config.name} expects skill library {pinned}, got {self.skills.version}")
        if isinstance(self.policy, ScriptedPolicy):  # demonstrations are written the way the system turn documents
            self.policy.syntax = self.config.action_syntax

    @property
    def version(self) -> str:
        return self.version_label or f"{self.config.name}@{_config_digest(self.config)}"


@dataclass(frozen=True)
class RunIds:
    """Correlation ids of the envelope and the event the episode reacts to (e.g. a RolloutRequested)."""

    run_id: str
    round: int | None = None
    attempt: int | None = None
    cause: str | None = None
    group_id: str | None = None
    episode_id: str | None = None
    """A fixed id (e.g. from a RolloutRequested, so a re-run is recognisable); a fresh UUID when ``None``."""


@dataclass(frozen=True)
class EpisodeOutcome:
    """The summary of a finished episode (its EpisodeEnded, in short)."""

    episode_id: str
    reason: EndReason
    steps: int
    answer: str | None
    input_tokens: int
    output_tokens: int
    thinking_tokens: int
    tool_calls: int
    cost_usd: float | None


def run_episode(
    harness: Harness,
    task: TaskSpecified,
    backend: Backend,
    ids: RunIds,
    memory: MemoryStore | None = None,
    seed: int | None = None,
) -> EpisodeOutcome:
    """Reset ``backend`` to ``task``, seed ``memory`` from it per the memory policy, and run the episode."""
    policy = harness.config.memory
    memory = memory if policy.enabled else None
    if memory is not None and policy.seed_from_task:
        memory.seed(task.initial_conditions.memories)
    seed = task.initial_conditions.seed if seed is None else seed
    outcome = _Episode(harness, task, backend, memory, ids, seed).run()
    if memory is not None and policy.consolidate_on_end:
        consolidate(memory, policy.near_duplicate_threshold, harness.merger)
    return outcome


class _Episode:
    """One episode's state; a sub-agent is a nested ``_Episode`` sharing the backend, memory and token budget."""

    depth: int
    steps: int
    rec: EpisodeRecorder

    def __init__(
        self,
        harness: Harness,
        task: TaskSpecified,
        backend: Backend,
        memory: MemoryStore | None,
        ids: RunIds,
        seed: int,
        *,
        goal: str | None = None,
        tool_names: list[str] | None = None,
        parent: _Episode | None = None,
        max_steps: int | None = None,
    ) -> None:
        self.h, self.task, self.backend, self.memory, self.ids, self.seed = harness, task, backend, memory, ids, seed
        self.goal = goal or task.goal
        self.tool_names = tool_names
        self.parent = parent
        self.depth = 0 if parent is None else parent.depth + 1
        if parent is None:
            self.id = ids.episode_id or new_event_id()
        else:  # from the parent's id and step: a replay of the parent (learner.dataset.render) re-creates it
            self.id = str(uuid.uuid5(uuid.NAMESPACE_URL, f"{parent.id}/subagent/{parent.steps}"))
        budgets = effective_budgets(harness.config.budgets, task.budgets, max_steps)
        if parent is not None and parent.tokens_left() is not None:
            budgets = budgets.model_copy(update={"max_tokens": max(1, parent.tokens_left() or 1)})
        self.budgets = budgets
        cause = ids.cause if parent is None else parent.rec.last_event_id
        self.rec = EpisodeRecorder.for_episode(
            harness.events,
            harness.producer,
            run_id=ids.run_id,
            task_id=task.task_id,
            episode_id=self.id,
            round=ids.round,
            attempt=ids.attempt,
            cause=cause,
        )
        self.tools: list[ToolSpec] = []
        self.history: list[HistoryTurn] = []
        self.loaded: list[Skill] = []
        self.called: list[str] = []  # tool names called so far (a compact context shows them)
        self.worklist = Worklist()  # the list result being worked through (a compact context may show it)
        self.input_tokens = self.output_tokens = self.thinking_tokens = self.child_tokens = 0
        self.sub = _SubagentCost()  # what sub-agents spent: rolled up into this episode's EpisodeEnded
        self.steps = self.tool_calls = self.invalid = 0
        self.answer: str | None = None
        self.started = perf_counter()
        self.turn_chars = task.observation_chars or harness.config.budgets.turn_chars
        # the user answers the top-level episode's questions; a sub-agent's question ends the sub-agent
        self.user = harness.users(task) if parent is None else None

    def tokens_left(self) -> int | None:
        if self.budgets.max_tokens is None:
            return None
        return self.budgets.max_tokens - self.input_tokens - self.output_tokens - self.child_tokens

    def run(self) -> EpisodeOutcome:
        self.rec.emit(
            EpisodeStarted,
            backend=self.backend.name,  # the backend that ran, which a pool may pick for another task kind
            trust_level=self.backend.trust,
            policy_version=self.h.policy.name,
            harness_version=self.h.version,
            seed=self.seed,
            budgets=self.budgets,
            group_id=self.ids.group_id,
            parent_episode_id=None if self.parent is None else self.parent.id,
        )
        return self._end(self._loop())

    def _loop(self) -> EndReason:
        first: Observation | None = None
        if self.parent is None:
            try:
                first = self.backend.reset(self.task, self.seed)
            except Exception:  # a broken task or backend ends the episode, it does not crash the worker
                _log.exception("episode %s: backend reset failed", self.id)
                return "error"
        self.tools = tools = [t for t in self.backend.tools() if self.tool_names is None or t.name in self.tool_names]
        self.parser = ActionParser(tools, self.h.config.budgets.max_output_chars)
        policy = self.h.config.memory
        recalled = self.memory.search(self.goal, policy.retrieve_top_k) if self.memory and policy.retrieve_top_k else []
        offered = self.h.skills.offered(t.name for t in tools)
        self.inputs = ContextInputs(
            instructions=self.h.config.instructions,
            goal=self.goal,
            tools=tools,
            offered_skills=offered,
            memories=recalled,
            first_observation=first,
            compact=self.h.config.compact,
            action_syntax=self.h.config.action_syntax,
        )
        compact = self.h.config.compact
        self.goal_tools = select_tools(self.goal, tools, compact.tool_top_k) if compact is not None else []
        self.successors = episode_successors(compact, self.goal) if compact is not None else {}
        budgets = self.h.config.budgets
        self.builder = ContextBuilder(budgets.context_tokens, self.turn_chars, self.h.counter)
        self.executor = ActionExecutor(self.backend, self.memory, self.h.skills, self.loaded, self._spawn)
        self.generate = step_generator(self.h.policy)
        self.observer = self.h.policy if isinstance(self.h.policy, ObservingPolicy) else None
        for step in range(1, self.budgets.max_steps + 1):
            if self._out_of_budget():
                return "budget_exhausted"
            reason = self._step(step)
            if reason is not None:
                return reason
        return "budget_exhausted"

    def _out_of_budget(self) -> bool:
        left = self.tokens_left()
        wall = self.budgets.max_wall_s
        return (left is not None and left <= 0) or (wall is not None and perf_counter() - self.started > wall)

    def _step(self, step: int) -> EndReason | None:
        inputs = replace(self.inputs, history=tuple(self.history), loaded_skills=tuple(self.loaded))
        compact = self.h.config.compact
        if compact is not None:
            shown = step_tools(
                self.tools, self.loaded, self.called, self.goal_tools, compact.tool_top_k, self.successors
            )
            inputs = replace(inputs, tools=tuple(shown))
        context = self.builder.build(inputs)
        ref = self.h.blobs.put(self.builder.encode(context), CONTEXT_MEDIA_TYPE)
        self.rec.emit(
            ContextBuilt,
            step=step,
            context=ref,
            token_count=context.tokens,
            skills_offered=[s.name for s in inputs.offered_skills],
            memories_recalled=len(inputs.memories),
        )
        try:
            out = self.generate(context.messages, inputs.tools)
        except Exception:  # endpoint down or model failure: recorded as an error end, never a crash
            _log.exception("episode %s: policy %s failed", self.id, self.h.policy.name)
            return "error"
        self.steps = step
        self.input_tokens += out.input_tokens
        self.output_tokens += out.output_tokens
        self.thinking_tokens += out.thinking_tokens
        data = out.text.encode("utf-8", "replace")  # lone surrogates (possible from JSON endpoints) become '?'
        text = data.decode("utf-8")
        raw = self.h.blobs.put(data, RAW_OUTPUT_MEDIA_TYPE)
        sampled = None
        if out.sampled is not None:  # behaviour token ids + log-probs, for RL's importance ratio
            sampled = self.h.blobs.put(json.dumps(out.sampled.to_json()).encode(), SAMPLED_MEDIA_TYPE)
        parsed = self.parser.parse(text)
        if isinstance(parsed, ToolError):
            return self._reject(step, text, parsed, raw, out, sampled)
        self.rec.emit(
            ActionTaken,
            step=step,
            action=parsed,
            raw_output=raw,
            input_tokens=out.input_tokens,
            output_tokens=out.output_tokens,
            thinking_tokens=out.thinking_tokens,
            sampled=sampled,
        )
        if isinstance(parsed, Clarify) and self.user is not None:
            reply = self.user.reply(parsed.question)
            if reply is not None:  # the answer is the step's observation, and the episode goes on
                observation = Observation(result={"user": reply}, flags=[USER_REPLY_FLAG])
                observation, feedback = self._observe(step, observation)
                self._remember(step, text, observation, feedback, "clarify")
                return None
        terminal = _TERMINAL.get(type(parsed))
        if terminal is not None:
            self.answer = parsed.answer if isinstance(parsed, Finish) else None
            return terminal
        return self._execute(step, text, parsed)

    def _reject(
        self, step: int, text: str, error: ToolError, raw: BlobRef, out: PolicyOutput, sampled: BlobRef | None = None
    ) -> EndReason | None:
        """Invalid output: recorded (ActionRejected), fed back to the model, within the invalid-action budget."""
        self.invalid += 1
        observation = Observation(error=error)
        self.rec.emit(
            ActionRejected,
            step=step,
            raw_output=raw,
            error=error,
            input_tokens=out.input_tokens,
            output_tokens=out.output_tokens,
            thinking_tokens=out.thinking_tokens,
            sampled=sampled,
        )
        self.rec.emit(ObservationReturned, step=step, error=error, blob=raw)
        self._remember(step, text, observation, self._feedback(observation), "invalid output")
        return "error" if self.invalid > self.h.config.budgets.max_invalid_actions else None

    def _execute(self, step: int, text: str, action: Action) -> EndReason | None:
        limit = self.budgets.max_tool_calls
        if isinstance(action, ToolCall):
            if limit is not None and self.tool_calls >= limit:
                self._observe(step, failure("budget_exhausted", f"the task allows {limit} tool calls"))
                return "budget_exhausted"
            self.tool_calls += 1
            self.called.append(action.name)
        observation, feedback = self._observe(step, self.executor.execute(action))
        compact = self.h.config.compact
        if isinstance(action, ToolCall) and compact is not None and compact.worklist:
            self.worklist.use(action.args)
            if observation.error is None:
                self.worklist.observe(step, observation.result)
            line = self.worklist.line()
            feedback = feedback if line is None else f"{feedback}\n{line}"
        self._remember(step, text, observation, feedback, action_summary(action))
        return None

    def _observe(self, step: int, observation: Observation) -> tuple[Observation, str]:
        """Publish the observation; one JSON cannot carry (NaN, lone surrogates) becomes an internal error.
        Returns what was published and its feedback text."""
        fields: dict[str, Any] = dict(
            result=observation.result if observation.error is None else None,
            error=observation.error,
            changes=list(observation.changes),
            flags=list(observation.flags),
        )
        try:
            full = observation.model_dump_json().encode()
            if len(full) > INLINE_OBSERVATION_BYTES:  # the whole observation goes to a blob, a preview stays inline
                preview = full[:PREVIEW_BYTES].decode("utf-8", "ignore")
                fields.update(result={"truncated": True, "bytes": len(full), "preview": preview}, changes=[])
                fields.update(flags=[*observation.flags, "truncated"], blob=self.h.blobs.put(full, "application/json"))
            event = ObservationReturned(**self.rec.envelope(), step=step, **fields)
            feedback = self._feedback(observation)
        except (ValueError, TypeError) as exc:  # incl. pydantic's validation and serialization errors
            reason = exc.errors()[0]["msg"] if isinstance(exc, ValidationError) else str(exc)
            observation = failure("internal", f"the backend returned an unrecordable observation: {reason}")
            event = ObservationReturned(**self.rec.envelope(), step=step, error=observation.error)
            feedback = self._feedback(observation)
        self.rec.publish(event)
        return observation, feedback

    def _feedback(self, observation: Observation) -> str:
        """The observation as the context shows it. Raises on what JSON cannot carry (e.g. lone surrogates): the
        full rendering is made first, whatever the profile shows, so every field is checked."""
        limit, compact = self.turn_chars, self.h.config.compact
        feedback = render_observation(observation, limit)
        if compact is not None and compact.observations != "full":
            feedback = render_observation(observation, limit, compact.observations)
        return feedback

    def _remember(self, step: int, text: str, observation: Observation, feedback: str, label: str) -> None:
        status = "ok" if observation.error is None else f"error {observation.error.code}"
        self.history.append(HistoryTurn(step, text, feedback, f"{label} -> {status}"))
        if self.observer is not None:
            self.observer.observe(observation)

    def _spawn(self, spawn: SubagentSpawn) -> Observation:
        if self.depth >= self.h.config.budgets.max_subagent_depth:
            return failure("permission_denied", f"sub-agents cannot be spawned at depth {self.depth}")
        available = [t.name for t in self.tools]
        missing = [name for name in spawn.tools if name not in available]
        if missing:
            return failure("invalid_argument", f"tools not available here: {', '.join(missing)}")
        child = _Episode(
            self.h,
            self.task,
            self.backend,
            self.memory,
            self.ids,
            self.seed,
            goal=spawn.goal,
            tool_names=list(spawn.tools) or available,
            parent=self,
            max_steps=spawn.max_steps,
        )
        outcome = child.run()
        self.child_tokens += outcome.input_tokens + outcome.output_tokens
        self.sub.add(outcome)
        summary = outcome.answer if outcome.reason == "finished" else f"sub-agent ended: {outcome.reason}"
        result = SubagentResult(
            child_episode_id=outcome.episode_id, summary=(summary or "")[:16384], success=outcome.reason == "finished"
        )
        return Observation(result=result.model_dump(mode="json"))

    def _end(self, reason: EndReason) -> EpisodeOutcome:
        final_state = None
        if self.parent is None:
            try:
                final_state = store_evidence(
                    self.h.blobs, self.backend.evidence()
                )  # lean: initial state by address + delta
            except Exception:  # no evidence (e.g. reset failed): the verifier sees final_state=None
                final_state = None
        # Totals include every sub-agent (and theirs, already rolled up): what the episode cost, for CARE.
        # ``steps`` stays this episode's own model turns (the curator checks their numbering).
        sub = self.sub
        input_tokens, output_tokens = self.input_tokens + sub.input_tokens, self.output_tokens + sub.output_tokens
        cost = self.h.prices.cost(self.h.policy.model, input_tokens, output_tokens)
        self.rec.emit(
            EpisodeEnded,
            reason=reason,
            steps=self.steps,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            thinking_tokens=self.thinking_tokens + sub.thinking_tokens,
            tool_calls=self.tool_calls + sub.tool_calls,
            wall_time_s=perf_counter() - self.started,
            cost_estimate_usd=cost,
            answer=self.answer,
            final_state=final_state,
        )
        return EpisodeOutcome(
            self.id,
            reason,
            self.steps,
            self.answer,
            input_tokens,
            output_tokens,
            self.thinking_tokens + sub.thinking_tokens,
            self.tool_calls + sub.tool_calls,
            cost,
        )


@dataclass
class _SubagentCost:
    """Tokens and tool calls of an episode's sub-agents (each outcome already includes its own sub-agents)."""

    input_tokens: int = 0
    output_tokens: int = 0
    thinking_tokens: int = 0
    tool_calls: int = 0

    def add(self, outcome: EpisodeOutcome) -> None:
        self.input_tokens += outcome.input_tokens
        self.output_tokens += outcome.output_tokens
        self.thinking_tokens += outcome.thinking_tokens
        self.tool_calls += outcome.tool_calls
