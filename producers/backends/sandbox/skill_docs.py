"""Load the skill documents (``skills/*.md``: YAML front matter ``name``, ``tools``, ``when_to_use``, then the
procedure)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

SKILLS_DIR = Path(__file__).parent / "skills"


@dataclass(frozen=True)
class Skill:
    name: str
    tools: tuple[str, ...]
    when_to_use: str
    body: str


def parse_skill(text: str) -> Skill:
    _, front, body = text.split("---", 2)
    meta = yaml.safe_load(front)
    return Skill(name=meta["name"], tools=tuple(meta["tools"]), when_to_use=meta["when_to_use"], body=body.strip())


def load_skills(directory: Path = SKILLS_DIR) -> dict[str, Skill]:
    skills = [parse_skill(p.read_text(encoding="utf-8")) for p in sorted(directory.glob("*.md"))]
    return {s.name: s for s in skills}


SKILLS = load_skills()
