"""History turns (model output + feedback) and the deterministic summary of turns that no longer fit."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from harness_service.context.messages import ChatMessage


@dataclass(frozen=True)
class HistoryTurn:
    """One step: what the model wrote, the feedback it got, and a one-line summary for when it is dropped."""

    step: int
    output: str
    feedback: str
    summary: str

    def messages(self) -> tuple[ChatMessage, ChatMessage]:
        return (
            ChatMessage(role="assistant", content=self.output),
            ChatMessage(role="user", content=f"Observation (step {self.step}):\n{self.feedback}"),
        )


def summary_message(dropped: Sequence[HistoryTurn], max_lines: int) -> ChatMessage | None:
    """One line per dropped turn, or a single count line when there are more than ``max_lines``."""
    if not dropped:
        return None
    if len(dropped) > max_lines:
        body = f"Steps {dropped[0].step}-{dropped[-1].step} omitted to fit the context."
    else:
        body = "\n".join(f"- step {t.step}: {t.summary}" for t in dropped)
    return ChatMessage(role="user", content="# Earlier steps (summarised)\n" + body)
