"""Model-assisted consolidation: the configured policy model rewrites a group of similar memories as one."""

from __future__ import annotations

from collections.abc import Sequence

from harness_service.context.messages import ChatMessage
from harness_service.policy.base import Policy
from harness_service.policy.thinking import THINK_CLOSE, thinking_part

MERGE_INSTRUCTIONS = (
    "Merge these notes about the same user into one short note that keeps every fact and drops repetition. "
    "Reply with the merged note only."
)
MAX_CHARS = 4096


class PolicyMerger:
    """A ``MemoryMerger`` backed by a policy; falls back to the longest note when the model replies nothing."""

    def __init__(self, policy: Policy) -> None:
        self._policy = policy

    def merge(self, contents: Sequence[str]) -> str:
        notes = "\n".join(f"- {c}" for c in contents)
        messages = [ChatMessage(role="system", content=MERGE_INSTRUCTIONS), ChatMessage(role="user", content=notes)]
        text = self._policy.generate(messages).text
        if thinking_part(text):
            text = text.split(THINK_CLOSE, 1)[-1]
        return text.strip()[:MAX_CHARS] or max(contents, key=len)
