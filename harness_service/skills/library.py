"""A folder of skill files, versioned by the digest of their bytes."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path

from harness_service.skills.skill import Skill, SkillFormatError, parse_skill

_OFFERED_CACHE_SIZE = 1024


class SkillLibrary:
    """Skills by name. ``version`` is ``sha256:<hex>`` over the sorted file names and contents."""

    def __init__(self, skills: Iterable[Skill], version: str) -> None:
        self._skills = {s.name: s for s in skills}
        self.version = version
        self._offered: dict[tuple[str, ...], list[Skill]] = {}

    @classmethod
    def from_dir(cls, folder: Path) -> SkillLibrary:
        """Load every ``*.md`` file under ``folder``; a bad file raises naming it."""
        digest = hashlib.sha256()
        skills = []
        for path in sorted(folder.rglob("*.md")):
            data = path.read_bytes()
            rel = path.relative_to(folder).as_posix()
            digest.update(f"{rel}\0{len(data)}\0".encode())
            digest.update(data)
            try:
                skills.append(parse_skill(data.decode("utf-8")))
            except SkillFormatError as exc:
                raise SkillFormatError(f"{path}: {exc}") from exc
        return cls(skills, "sha256:" + digest.hexdigest())

    @classmethod
    def empty(cls) -> SkillLibrary:
        return cls([], "sha256:" + hashlib.sha256(b"").hexdigest())

    def names(self) -> list[str]:
        return sorted(self._skills)

    def get(self, name: str) -> Skill | None:
        return self._skills.get(name)

    def offered(self, tool_names: Iterable[str]) -> list[Skill]:
        """Skills that apply to at least one of the available tools, sorted by name."""
        names = tuple(tool_names)
        offered = self._offered.get(names)
        if offered is None:  # every episode of a task family has the same tools: match the patterns once
            if len(self._offered) >= _OFFERED_CACHE_SIZE:
                self._offered.clear()
            offered = [self._skills[n] for n in sorted(self._skills) if self._skills[n].applies_to(names)]
            self._offered[names] = offered
        return list(offered)
