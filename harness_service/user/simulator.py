"""Simulated users, made per episode from the task's ``user`` (``bus_schemas.events.tasks.SimulatedUser``).

A rule-based user answers from the task's script, in order; a model-played user answers through any
:class:`~harness_service.policy.base.Policy` (the same adapters the planner uses), from the goal and a persona
the planner never sees. Either stops after ``max_turns`` answers: the next question ends the episode, as a
question always did before users were simulated. The harness records each answer as the clarifying step's
observation (``{"user": reply}``, flag ``user_reply``), so answers are events like any other, and a replay
(``learner.dataset.render``) feeds the recorded answers back through a :class:`ScriptedUser`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from bus_schemas.events.tasks import SimulatedUser, TaskSpecified
from harness_service.context.messages import ChatMessage
from harness_service.policy.base import Policy

USER_REPLY_FLAG = "user_reply"
MAX_REPLY_CHARS = 4096
_INSTRUCTIONS = (
    "You are the person who asked an assistant for help with the request below. The assistant has asked you a "
    "question. Answer it in one or two sentences, in your own voice, using only what you know. Do not do the "
    "task yourself and do not invent facts; if you do not know, say so."
)


class UserSimulator(Protocol):
    """Answers one clarifying question; None when the user has nothing more to say (the episode then ends)."""

    name: str

    def reply(self, question: str) -> str | None: ...


class ScriptedUser:
    """The task's scripted replies, one per question, at most ``max_turns``."""

    name = "scripted"

    def __init__(self, replies: Sequence[str], max_turns: int | None = None) -> None:
        self.replies = list(replies)[: max_turns if max_turns is not None else len(replies)]
        self.turn = 0

    def reply(self, question: str) -> str | None:
        if self.turn >= len(self.replies):
            return None
        self.turn += 1
        return self.replies[self.turn - 1]


class PolicyUser:
    """A language model plays the user: it sees the goal, the persona and the conversation of questions so far."""

    def __init__(self, policy: Policy, goal: str, persona: str, max_turns: int) -> None:
        self.policy, self.goal, self.persona, self.max_turns = policy, goal, persona, max_turns
        self.name = f"model:{policy.name}"
        self.transcript: list[ChatMessage] = []

    def reply(self, question: str) -> str | None:
        if len(self.transcript) // 2 >= self.max_turns:
            return None
        system = f"{_INSTRUCTIONS}\n\n# Your request\n{self.goal}\n\n# Who you are and what you know\n{self.persona}"
        self.transcript.append(ChatMessage(role="user", content=question))  # the assistant's question, to you
        out = self.policy.generate([ChatMessage(role="system", content=system), *self.transcript])
        text = out.text.strip()[:MAX_REPLY_CHARS]
        if not text:
            return None
        self.transcript.append(ChatMessage(role="assistant", content=text))
        return text


def user_for(task: TaskSpecified, user_policy: Policy | None = None) -> UserSimulator | None:
    """The episode's user: model-played when the task has a persona and a user model is given, else scripted;
    None when the task has no user (a clarifying question ends the episode)."""
    spec: SimulatedUser | None = task.user
    if spec is None:
        return None
    if spec.persona is not None and user_policy is not None:
        return PolicyUser(user_policy, task.goal, spec.persona, spec.max_turns)
    return ScriptedUser(spec.replies, spec.max_turns) if spec.replies else None
