"""A stored memory as the harness and the policy see it."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class MemoryRecord(BaseModel):
    """One fact: its row id in the store, text and tags."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: int
    content: str
    tags: list[str] = Field(default_factory=list)

    def render(self) -> str:
        """How the record appears in a context line."""
        return f"{self.content} [{', '.join(self.tags)}]" if self.tags else self.content
