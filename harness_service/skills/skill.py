"""One skill: front matter (name, tools, when_to_use) parsed from a markdown file, and its body."""

from __future__ import annotations

from collections.abc import Iterable
from fnmatch import fnmatchcase

import yaml
from pydantic import BaseModel, ConfigDict, Field

_FENCE = "---"


class SkillFormatError(ValueError):
    """A skill file without valid front matter."""


class Skill(BaseModel):
    """A playbook the policy can load. ``tools`` are tool names or shell-style patterns (``contacts.*``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(min_length=1, max_length=128)
    tools: list[str] = Field(default_factory=list)
    when_to_use: str = Field(min_length=1)
    body: str

    def applies_to(self, tool_names: Iterable[str]) -> bool:
        """Whether any available tool matches one of the skill's tool patterns."""
        names = list(tool_names)
        return any(fnmatchcase(name, pattern) for pattern in self.tools for name in names)


def parse_skill(text: str) -> Skill:
    """Parse ``---\\n<yaml>\\n---\\n<markdown>``; ``SkillFormatError`` when the front matter is missing or bad."""
    lines = text.lstrip("\ufeff").splitlines(keepends=True)
    if not lines or lines[0].strip() != _FENCE:
        raise SkillFormatError("a skill file must start with '---' front matter")
    try:
        end = next(i for i in range(1, len(lines)) if lines[i].strip() == _FENCE)
    except StopIteration:
        raise SkillFormatError("front matter is not closed with '---'") from None
    meta = yaml.safe_load("".join(lines[1:end])) or {}
    if not isinstance(meta, dict):
        raise SkillFormatError("front matter must be a mapping")
    try:
        return Skill(
            name=meta.get("name"),
            tools=list(meta.get("tools") or []),
            when_to_use=meta.get("when_to_use"),
            body="".join(lines[end + 1 :]).strip(),
        )
    except ValueError as exc:
        raise SkillFormatError(str(exc)) from exc
