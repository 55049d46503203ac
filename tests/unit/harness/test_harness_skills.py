"""Skills: front matter parsing, offering by available tools, library version digests."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness_service.skills.library import SkillLibrary
from harness_service.skills.skill import SkillFormatError, parse_skill

pytestmark = pytest.mark.unit

NOTES = """---
name: note-taking
tools: [notes.*]
when_to_use: When the user asks to remember something.
---
# Note taking
1. Search first, then add.
"""
CAL = """---
name: scheduling
tools: [calendar.create_event]
when_to_use: When creating events.
---
Check conflicts before creating.
"""


def write_library(folder: Path) -> Path:
    folder.mkdir()
    (folder / "notes.md").write_text(NOTES)
    (folder / "calendar.md").write_text(CAL)
    return folder


def test_library_offers_skills_matching_available_tools(tmp_path: Path) -> None:
    library = SkillLibrary.from_dir(write_library(tmp_path / "skills"))
    assert library.names() == ["note-taking", "scheduling"]
    assert [s.name for s in library.offered(["notes.add"])] == ["note-taking"]
    assert [s.name for s in library.offered(["calendar.create_event", "notes.search"])] == ["note-taking", "scheduling"]
    assert library.offered(["mail.send"]) == []
    skill = library.get("note-taking")
    assert skill is not None and skill.body == "# Note taking\n1. Search first, then add."


def test_version_is_a_digest_of_the_files(tmp_path: Path) -> None:
    folder = write_library(tmp_path / "skills")
    first = SkillLibrary.from_dir(folder).version
    assert first == SkillLibrary.from_dir(folder).version and first.startswith("sha256:")
    (folder / "calendar.md").write_text(CAL + "Also check time zones.\n")
    assert SkillLibrary.from_dir(folder).version != first


@pytest.mark.parametrize(
    "text",
    ["no front matter", "---\nname: x\n", "---\n- a list\n---\nbody", "---\nname: x\ntools: [a]\n---\nmissing when"],
)
def test_bad_skill_files_raise_a_format_error(text: str) -> None:
    with pytest.raises(SkillFormatError):
        parse_skill(text)
